//! The cleaner's offset map over the buffer that `tidelog/storage/cleaner/offset_map.py`
//! owns: slots of 24 bytes (a key's 16-byte MD5 digest, then its offset as a big-endian
//! int64), open addressing with double hashing over a prime number of slots, an all-zero
//! digest marking an empty slot. Every probe and write is the Python class's, so either
//! may fill a map that the other reads.

use md5::{Digest, Md5};

pub const HASH_SIZE: usize = 16;
pub const BYTES_PER_ENTRY: usize = HASH_SIZE + 8;

pub struct Table<'a> {
    pub buffer: &'a mut [u8],
    pub slots: u64,
    pub capacity: usize,
    pub size: usize,
    pub extra_probes: u64,
}

/// The map holds `capacity` keys and a new one came.
pub struct Full;

fn digest(key: &[u8]) -> [u8; HASH_SIZE] {
    Md5::digest(key).into()
}

impl Table<'_> {
    fn first_slot(&self, whole: u128) -> usize {
        (whole % u128::from(self.slots)) as usize * BYTES_PER_ENTRY
    }

    fn step(&self, whole: u128) -> usize {
        (((whole >> 64) % u128::from(self.slots - 1)) as usize + 1) * BYTES_PER_ENTRY
    }

    fn holds(&self, position: usize, digest: &[u8; HASH_SIZE]) -> bool {
        &self.buffer[position..position + HASH_SIZE] == digest
    }

    fn is_empty(&self, position: usize) -> bool {
        self.buffer[position..position + HASH_SIZE]
            .iter()
            .all(|&byte| byte == 0)
    }

    /// Records `offset` as the latest offset of `key`.
    pub fn put(&mut self, key: &[u8], offset: i64) -> Result<(), Full> {
        let digest = digest(key);
        let whole = u128::from_le_bytes(digest);
        let mut position = self.first_slot(whole);
        if !self.holds(position, &digest) {
            if self.is_empty(position) {
                self.add(&digest, position)?;
            } else {
                let end = self.buffer.len();
                let step = self.step(whole);
                loop {
                    self.extra_probes += 1;
                    position += step;
                    if position >= end {
                        position -= end;
                    }
                    if self.holds(position, &digest) {
                        break;
                    }
                    if self.is_empty(position) {
                        self.add(&digest, position)?;
                        break;
                    }
                }
            }
        }
        self.buffer[position + HASH_SIZE..position + BYTES_PER_ENTRY]
            .copy_from_slice(&offset.to_be_bytes());
        Ok(())
    }

    fn add(&mut self, digest: &[u8; HASH_SIZE], position: usize) -> Result<(), Full> {
        if self.size >= self.capacity {
            return Err(Full);
        }
        self.buffer[position..position + HASH_SIZE].copy_from_slice(digest);
        self.size += 1;
        Ok(())
    }

    /// The latest offset recorded for `key`, or -1.
    pub fn get(&self, key: &[u8]) -> i64 {
        let digest = digest(key);
        let whole = u128::from_le_bytes(digest);
        let mut position = self.first_slot(whole);
        let end = self.buffer.len();
        let step = self.step(whole);
        loop {
            if self.holds(position, &digest) {
                let mut offset = [0u8; 8];
                offset.copy_from_slice(
                    &self.buffer[position + HASH_SIZE..position + BYTES_PER_ENTRY],
                );
                return i64::from_be_bytes(offset);
            }
            if self.is_empty(position) {
                return -1;
            }
            position += step;
            if position >= end {
                position -= end;
            }
        }
    }
}
