//! The records section of a record batch v2, read as the cleaner needs it: each record's
//! byte range, offset and timestamp deltas, key and whether its value is null. The same
//! checks and outcomes as `scan_records` in `tidelog/storage/cleaner/batch_filter.py`.

/// One record of a records section; its bytes are `section[start..end]`.
pub struct Record<'a> {
    pub start: usize,
    pub end: usize,
    pub offset_delta: i32,
    pub timestamp_delta: i64,
    pub key: Option<&'a [u8]>,
    pub null_value: bool,
}

fn unsigned(
    data: &[u8],
    position: usize,
    max_bytes: usize,
    kind: &str,
) -> Result<(u64, usize), String> {
    let mut result: u64 = 0;
    for index in 0..max_bytes {
        let Some(&byte) = data.get(position + index) else {
            return Err(format!(
                "{kind} at byte {position} runs past the end of the data"
            ));
        };
        if index * 7 < 64 {
            result |= u64::from(byte & 0x7F) << (index * 7);
        }
        if byte < 0x80 {
            return Ok((result, position + index + 1));
        }
    }
    Err(format!(
        "{kind} at byte {position} is longer than {max_bytes} bytes"
    ))
}

/// A zig-zag varint (int32) at `position`: Java's reading, at most 5 bytes.
fn varint(data: &[u8], position: usize) -> Result<(i32, usize), String> {
    let (value, next) = unsigned(data, position, 5, "varint")?;
    let value = value as u32;
    Ok((((value >> 1) as i32) ^ -((value & 1) as i32), next))
}

/// A zig-zag varlong (int64) at `position`: at most 10 bytes.
fn varlong(data: &[u8], position: usize) -> Result<(i64, usize), String> {
    let (value, next) = unsigned(data, position, 10, "varlong")?;
    Ok((((value >> 1) as i64) ^ -((value & 1) as i64), next))
}

/// Calls `visit` with each of the `count` records that fill `data`, in order; the first
/// framing error (lengths overrunning a record or the section, a wrong count) ends it.
pub fn scan<'a, F>(data: &'a [u8], count: usize, mut visit: F) -> Result<(), String>
where
    F: FnMut(Record<'a>) -> Result<(), String>,
{
    let limit = data.len();
    let mut position = 0usize;
    for index in 0..count {
        let start = position;
        let (length, after_length) = varint(data, position)
            .map_err(|_| format!("records section of {limit} bytes ends inside record {index}"))?;
        position = after_length;
        let end = position as i64 + i64::from(length);
        if length <= 0 || end > limit as i64 {
            return Err(format!(
                "record {index} declares {length} bytes but {} remain",
                limit - position
            ));
        }
        let end = end as usize;
        position += 1; // attributes
        let (timestamp_delta, next) = varlong(data, position)?;
        let (offset_delta, next) = varint(data, next)?;
        let (key_length, next) = varint(data, next)?;
        position = next;
        let key = match key_length {
            -1 => None,
            size if size >= 0 => {
                let key_end = position + size as usize;
                if key_end > limit {
                    return Err(format!("record {index}: fields overrun its {length} bytes"));
                }
                let key = &data[position..key_end];
                position = key_end;
                Some(key)
            }
            size => return Err(format!("record {index}: invalid key length {size}")),
        };
        if position >= end {
            return Err(format!("record {index}: fields overrun its {length} bytes"));
        }
        // the value's length: null is -1, the single byte 0x01
        let null_value = data[position] == 1;
        visit(Record {
            start,
            end,
            offset_delta,
            timestamp_delta,
            key,
            null_value,
        })?;
        position = end;
    }
    if position != limit {
        return Err(format!(
            "records section has {} bytes left after the {count} declared records",
            limit - position
        ));
    }
    Ok(())
}
