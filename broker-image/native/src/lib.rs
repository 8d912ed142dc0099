//! `tidelog_native`: the per-record work of tidelog's log cleaner, compiled (seed 001, the
//! cleaner's two passes). One call handles one batch's records section:
//!
//! * `map_keys` puts every keyed record's offset in the offset map (the first pass);
//! * `retain` decides which records the cleaned segment keeps (the second pass).
//!
//! The offset map is the `bytearray` of `tidelog.storage.cleaner.offset_map.OffsetMap`,
//! read and written in place with the same layout and probe sequence; the decisions are
//! those of the pure-Python functions of `tidelog.storage.cleaner.batch_filter`, which
//! stay the reference (tests compare both byte for byte). The interpreter lock is
//! released while a batch is processed, so the broker's threads run meanwhile.

mod offset_map;
mod records;

use offset_map::{Located, Table, BYTES_PER_ENTRY};
use pyo3::buffer::PyBuffer;
use pyo3::create_exception;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use std::collections::VecDeque;

/// Keys located ahead of the one the map is asked about: their slots' fetches overlap.
const IN_FLIGHT: usize = 8;

/// A record of the second pass waiting for its key's slot.
struct Waiting {
    start: usize,
    end: usize,
    offset: i64,
    tombstone: bool,
    timestamp_delta: i64,
    located: Option<Located>,
}

create_exception!(
    tidelog_native,
    CorruptRecordsError,
    PyValueError,
    "A records section whose framing is damaged."
);

/// A buffer's bytes, to be used while the interpreter lock is released: the buffer
/// export (`PyBuffer`) is held for the whole call, so the memory stays put.
#[derive(Clone, Copy)]
struct Bytes {
    pointer: *mut u8,
    length: usize,
}

// SAFETY: the memory belongs to a buffer export held by the caller for the duration of
// the call; nothing else touches it then (the offset map belongs to one cleaner thread).
unsafe impl Send for Bytes {}

impl Bytes {
    fn of(buffer: &PyBuffer<u8>, writable: bool) -> PyResult<Self> {
        if !buffer.is_c_contiguous() {
            return Err(PyTypeError::new_err("a contiguous buffer is needed"));
        }
        if writable && buffer.readonly() {
            return Err(PyTypeError::new_err(
                "the offset map's buffer must be writable",
            ));
        }
        Ok(Bytes {
            pointer: buffer.buf_ptr().cast(),
            length: buffer.len_bytes(),
        })
    }

    /// SAFETY: see `impl Send`.
    unsafe fn slice<'a>(&self) -> &'a [u8] {
        std::slice::from_raw_parts(self.pointer, self.length)
    }

    /// SAFETY: see `impl Send`.
    unsafe fn slice_mut<'a>(&self) -> &'a mut [u8] {
        std::slice::from_raw_parts_mut(self.pointer, self.length)
    }
}

/// The offset map's buffer, checked: a whole number of slots, at least two.
fn map_buffer(buffer: &PyBuffer<u8>) -> PyResult<Bytes> {
    let bytes = Bytes::of(buffer, true)?;
    if bytes.length / BYTES_PER_ENTRY < 2 || bytes.length % BYTES_PER_ENTRY != 0 {
        return Err(PyValueError::new_err("not an offset map's buffer"));
    }
    Ok(bytes)
}

fn table(buffer: &mut [u8], capacity: usize, size: usize) -> Table<'_> {
    let slots = (buffer.len() / BYTES_PER_ENTRY) as u64;
    Table {
        buffer,
        slots,
        capacity,
        size,
        extra_probes: 0,
    }
}

/// The first pass over one batch: puts `base_offset + offsetDelta` under each keyed
/// record's key whose offset is in [start, upper). `table` is the map's buffer holding
/// `size` keys of at most `capacity`. Returns (records read, keys held, extra probes,
/// full): `full` when a new key did not fit (the records before it are in the map).
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn map_keys(
    py: Python<'_>,
    section: PyBuffer<u8>,
    count: usize,
    base_offset: i64,
    start: i64,
    upper: i64,
    table_buffer: PyBuffer<u8>,
    capacity: usize,
    size: usize,
) -> PyResult<(usize, usize, u64, bool)> {
    let data = Bytes::of(&section, false)?;
    let slots = map_buffer(&table_buffer)?;
    let outcome = py.detach(move || {
        // SAFETY: both exports are held by this call (see `Bytes`).
        let (data, buffer) = unsafe { (data.slice(), slots.slice_mut()) };
        let mut map = table(buffer, capacity, size);
        let mut read = 0usize;
        let mut full = false;
        let mut pending: VecDeque<(Located, i64)> = VecDeque::with_capacity(IN_FLIGHT + 1);
        let mut put = |map: &mut Table, (located, offset): (Located, i64)| {
            if !full && map.put(&located, offset).is_err() {
                full = true;
            }
        };
        let scanned = records::scan(data, count, |record| {
            read += 1;
            let offset = base_offset + i64::from(record.offset_delta);
            if let Some(key) = record.key {
                if start <= offset && offset < upper {
                    pending.push_back((map.locate(key), offset));
                    if pending.len() > IN_FLIGHT {
                        put(&mut map, pending.pop_front().expect("not empty"));
                    }
                }
            }
            Ok(())
        });
        for entry in pending {
            put(&mut map, entry);
        }
        scanned.map(|()| (read, map.size, map.extra_probes, full))
    });
    outcome.map_err(CorruptRecordsError::new_err)
}

/// What `retain` answers: (kept, kept count, invalid, tombstones removed, largest
/// timestamp delta kept).
type Kept<'py> = (Option<Bound<'py, PyBytes>>, usize, usize, usize, i64);

/// The second pass over one batch: which records the cleaned segment keeps. A record
/// without a key goes (counted invalid); one past `latest` (the map's last offset) stays;
/// a tombstone goes when `retain_deletes` is false; any other stays when the map has no
/// later offset for its key. Returns (kept, kept count, invalid, tombstones removed,
/// largest timestamp delta kept): `kept` is None when every record stays (the batch is
/// copied as it is), else the kept records' bytes back to back.
#[pyfunction]
fn retain<'py>(
    py: Python<'py>,
    section: PyBuffer<u8>,
    count: usize,
    base_offset: i64,
    latest: i64,
    retain_deletes: bool,
    table_buffer: PyBuffer<u8>,
) -> PyResult<Kept<'py>> {
    let data = Bytes::of(&section, false)?;
    let slots = map_buffer(&table_buffer)?;
    let outcome = py.detach(move || {
        // SAFETY: both exports are held by this call (see `Bytes`); the map is only read.
        let (data, buffer) = unsafe { (data.slice(), slots.slice_mut()) };
        let map = table(buffer, 0, 0);
        let mut kept: Vec<(usize, usize)> = Vec::new();
        let (mut invalid, mut tombstones_removed, mut max_delta) = (0usize, 0usize, i64::MIN);
        // records waiting for their slot: (start, end, offset, tombstone, timestamp
        // delta, the key located when the map decides)
        let mut pending: VecDeque<Waiting> = VecDeque::with_capacity(IN_FLIGHT + 1);
        let mut decide = |waiting: Waiting| {
            let Waiting {
                start,
                end,
                offset,
                tombstone,
                timestamp_delta,
                located,
            } = waiting;
            let keep = match located {
                None => true, // past the map's last offset
                Some(located) if tombstone && !retain_deletes => {
                    if map.get(&located) <= offset {
                        tombstones_removed += 1;
                    }
                    false
                }
                Some(located) => map.get(&located) <= offset,
            };
            if keep {
                kept.push((start, end));
                max_delta = max_delta.max(timestamp_delta);
            }
        };
        records::scan(data, count, |record| {
            let Some(key) = record.key else {
                invalid += 1;
                return Ok(());
            };
            let offset = base_offset + i64::from(record.offset_delta);
            pending.push_back(Waiting {
                start: record.start,
                end: record.end,
                offset,
                tombstone: record.null_value,
                timestamp_delta: record.timestamp_delta,
                located: (offset <= latest).then(|| map.locate(key)),
            });
            if pending.len() > IN_FLIGHT {
                decide(pending.pop_front().expect("not empty"));
            }
            Ok(())
        })?;
        for waiting in pending {
            decide(waiting);
        }
        Ok::<_, String>((kept, invalid, tombstones_removed, max_delta))
    });
    let (kept, invalid, tombstones_removed, max_delta) =
        outcome.map_err(CorruptRecordsError::new_err)?;
    let kept_count = kept.len();
    let bytes = if kept_count == count {
        None
    } else {
        // SAFETY: the section's export is still held.
        let data = unsafe { data.slice() };
        let length = kept.iter().map(|(start, end)| end - start).sum();
        Some(PyBytes::new_with(py, length, |out| {
            let mut at = 0;
            for (start, end) in &kept {
                out[at..at + end - start].copy_from_slice(&data[*start..*end]);
                at += end - start;
            }
            Ok(())
        })?)
    };
    Ok((bytes, kept_count, invalid, tombstones_removed, max_delta))
}

#[pymodule]
fn tidelog_native(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_function(wrap_pyfunction!(map_keys, module)?)?;
    module.add_function(wrap_pyfunction!(retain, module)?)?;
    module.add(
        "CorruptRecordsError",
        module.py().get_type::<CorruptRecordsError>(),
    )?;
    Ok(())
}
