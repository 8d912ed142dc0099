//! The cleaner's offset map over the buffer that `tidelog/storage/cleaner/offset_map.py`
//! owns: slots of 24 bytes (a key's 16-byte MD5 digest, then its offset as a big-endian
//! int64), open addressing with double hashing over a prime number of slots, an all-zero
//! digest marking an empty slot. Every probe and write is the Python class's, so either
//! may fill a map that the other reads.
//!
//! A lookup is split in two: [`Table::locate`] hashes the key and asks the processor to
//! fetch its first slot, [`Table::put`] and [`Table::get`] use it later. The passes keep
//! a few keys between the two, so that the fetches from a map far larger than the caches
//! overlap instead of following one another.

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

/// A key's digest and its first slot, located.
#[derive(Clone, Copy)]
pub struct Located {
    digest: [u8; HASH_SIZE],
    position: usize,
}

#[inline]
fn prefetch(address: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is a hint; it reads nothing and faults on no address.
    unsafe {
        core::arch::x86_64::_mm_prefetch(address.cast::<i8>(), core::arch::x86_64::_MM_HINT_T0);
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = address;
}

impl Table<'_> {
    /// `key`'s digest and first slot, whose bytes the processor starts fetching.
    pub fn locate(&self, key: &[u8]) -> Located {
        let digest: [u8; HASH_SIZE] = Md5::digest(key).into();
        let whole = u128::from_le_bytes(digest);
        let position = (whole % u128::from(self.slots)) as usize * BYTES_PER_ENTRY;
        prefetch(self.buffer[position..].as_ptr());
        Located { digest, position }
    }

    fn step(&self, digest: &[u8; HASH_SIZE]) -> usize {
        let whole = u128::from_le_bytes(*digest);
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

    /// Records `offset` as the latest offset of the located key.
    pub fn put(&mut self, located: &Located, offset: i64) -> Result<(), Full> {
        let Located {
            digest,
            mut position,
        } = *located;
        if !self.holds(position, &digest) {
            if self.is_empty(position) {
                self.add(&digest, position)?;
            } else {
                let end = self.buffer.len();
                let step = self.step(&digest);
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

    /// The latest offset recorded for the located key, or -1.
    pub fn get(&self, located: &Located) -> i64 {
        let Located {
            digest,
            mut position,
        } = *located;
        let end = self.buffer.len();
        let mut step = 0;
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
            if step == 0 {
                step = self.step(&digest);
            }
            position += step;
            if position >= end {
                position -= end;
            }
        }
    }
}
