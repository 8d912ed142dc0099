"""The cleaner's per-record work, one batch at a time (seed 001: "构建 offset map" and
"清理"), in two interchangeable implementations:

* :data:`PYTHON` - :func:`~.batch_filter.scan_records` and :class:`~.offset_map.OffsetMap`'s
  own ``put`` and ``get``: the reference;
* :data:`NATIVE` - the compiled ``tidelog_native`` module (``broker-image/native/``), which
  reads the same records section and works on the map's buffer in place, with the same
  layout and probe sequence, releasing the interpreter lock meanwhile. It is None where
  that module is not installed.

Both give the same results on every input: the same map bytes, the same kept records,
the same counts, and :class:`~tidelog.records.errors.CorruptRecordError` for the same
damaged sections (tests run the cleaner with each). :func:`default` is the native one
where it is installed: in pure Python the two passes cost about a microsecond a record
each, which leaves a log of millions of records far behind Kafka's cleaner.

Each pass takes one batch's (decompressed) records section:

* ``map_keys(offset_map, section, count, base_offset, start, upper)`` puts the offset of
  every keyed record whose offset is in ``[start, upper)`` and returns how many records
  it read; it raises :class:`~.errors.OffsetMapFullError` when a new key does not fit.
* ``retain(offset_map, section, count, base_offset, retain_deletes)`` returns
  :class:`Kept`: a record without a key goes (counted invalid); one past the map's
  latest offset stays; a tombstone goes unless ``retain_deletes``; any other record
  stays when the map has no later offset for its key.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from tidelog.records.errors import CorruptRecordError
from tidelog.storage.cleaner.batch_filter import scan_records
from tidelog.storage.cleaner.errors import OffsetMapFullError
from tidelog.storage.cleaner.offset_map import OffsetMap

try:
    import tidelog_native
except ImportError:  # the pure-Python path serves
    tidelog_native = None

__all__ = ["NATIVE", "PYTHON", "Kept", "RecordPasses", "default"]


class Kept(NamedTuple):
    """What one batch keeps: ``section`` the kept records' bytes back to back, or None
    when every record stays (the batch is copied as it is); ``max_timestamp_delta`` the
    largest timestamp delta among the kept records."""

    section: bytes | None
    count: int
    invalid: int
    tombstones_removed: int
    max_timestamp_delta: int


@dataclass(frozen=True)
class RecordPasses:
    name: str
    map_keys: Callable[..., int]
    retain: Callable[..., Kept]


def _python_map_keys(
    offset_map: OffsetMap, section, count: int, base_offset: int, start: int, upper: int
) -> int:
    records = scan_records(section, count)
    put = offset_map.put
    for record in records:
        offset = base_offset + record[2]
        if record[4] is not None and start <= offset < upper:
            put(record[4], offset)
    return len(records)


def _python_retain(
    offset_map: OffsetMap, section, count: int, base_offset: int, retain_deletes: bool
) -> Kept:
    get = offset_map.get
    latest = offset_map.latest_offset
    records = scan_records(section, count)
    kept = []
    invalid = tombstones_removed = 0
    for record in records:
        key = record[4]
        if key is None:
            invalid += 1
            continue
        offset = base_offset + record[2]
        if offset > latest:
            kept.append(record)
        elif record[5] and not retain_deletes:
            if get(key) <= offset:
                tombstones_removed += 1
        elif get(key) <= offset:
            kept.append(record)
    max_delta = max((record[3] for record in kept), default=0)
    if len(kept) == len(records):
        return Kept(None, len(kept), invalid, tombstones_removed, max_delta)
    joined = b"".join([section[record[0] : record[1]] for record in kept])
    return Kept(joined, len(kept), invalid, tombstones_removed, max_delta)


PYTHON = RecordPasses("pure Python", _python_map_keys, _python_retain)


def _native_map_keys(
    offset_map: OffsetMap, section, count: int, base_offset: int, start: int, upper: int
) -> int:
    try:
        read, size, probes, full = tidelog_native.map_keys(
            section,
            count,
            base_offset,
            start,
            upper,
            offset_map.buffer,
            offset_map.capacity,
            offset_map.size,
        )
    except tidelog_native.CorruptRecordsError as error:
        raise CorruptRecordError(str(error)) from None
    offset_map.account_puts(size, probes)
    if full:
        raise OffsetMapFullError(
            f"offset map of {offset_map.slots} slots is full at {size} keys "
            f"(load factor {offset_map.capacity / offset_map.slots:.2f})"
        )
    return read


def _native_retain(
    offset_map: OffsetMap, section, count: int, base_offset: int, retain_deletes: bool
) -> Kept:
    try:
        kept = tidelog_native.retain(
            section, count, base_offset, offset_map.latest_offset, retain_deletes, offset_map.buffer
        )
    except tidelog_native.CorruptRecordsError as error:
        raise CorruptRecordError(str(error)) from None
    section, kept_count, invalid, tombstones_removed, max_delta = kept
    return Kept(section, kept_count, invalid, tombstones_removed, max_delta if kept_count else 0)


NATIVE = (
    RecordPasses("compiled (tidelog_native)", _native_map_keys, _native_retain)
    if tidelog_native is not None
    else None
)


def default() -> RecordPasses:
    """The compiled passes where ``tidelog_native`` is installed, else pure Python."""
    return NATIVE or PYTHON
