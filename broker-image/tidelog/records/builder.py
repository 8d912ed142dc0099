"""Writing record batches v2: the exact bytes a Kafka producer (or the broker) writes.

:func:`encode_batch` is the full-control writer: the caller gives the records with their
deltas and every header field. :func:`build_batch` is the convenience used by tests,
tools and benchmarks: it takes plain keys and values and numbers them.
:func:`build_control_batch` writes a COMMIT or ABORT transaction marker.
"""

from __future__ import annotations

import functools
import struct
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from .batch import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    BATCH_HEADER_STRUCT,
    CONTROL_FLAG,
    CRC_OFFSET,
    DELETE_HORIZON_FLAG,
    LOG_OVERHEAD,
    MAGIC_V2,
    TIMESTAMP_TYPE_FLAG,
    TRANSACTIONAL_FLAG,
)
from .compression import CompressionType, compress
from .control import ControlRecordType, encode_control_key, encode_end_txn_marker
from .crc import crc32c
from .record import Record, encode_record
from .varint import encode_varint

__all__ = [
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "Entry",
    "build_batch",
    "build_control_batch",
    "build_keyed_batch",
    "encode_batch",
]

CREATE_TIME = 0
LOG_APPEND_TIME = 1

_CRC = struct.Struct(">I")
_varint = encode_varint
_NO_HEADERS = encode_varint(0)
# Record heads kept by build_keyed_batch: the partitions of the groups that commit often.
KEYED_RECORD_HEADS_KEPT = 65536


def encode_batch(
    records: Sequence[Record],
    *,
    base_offset: int = 0,
    base_timestamp: int,
    max_timestamp: int | None = None,
    compression: int = CompressionType.NONE,
    timestamp_type: int = CREATE_TIME,
    is_transactional: bool = False,
    is_control: bool = False,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    partition_leader_epoch: int = -1,
    last_offset_delta: int | None = None,
    delete_horizon: bool = False,
    compression_level: int | None = None,
) -> bytes:
    """The complete bytes of one batch holding ``records``, CRC included.

    ``max_timestamp`` defaults to the largest record timestamp (for a LogAppendTime batch
    pass the append time). ``last_offset_delta`` defaults to the largest offset delta; an
    empty batch (as compaction leaves behind) must give it, and its max timestamp defaults
    to ``base_timestamp``. ``delete_horizon`` sets the flag that marks ``base_timestamp``
    as the delete horizon; ``compression_level`` the codec's level (None: the library's
    default). Out-of-range fields raise ``ValueError``.
    """
    codec = CompressionType.from_id(compression)
    if timestamp_type not in (CREATE_TIME, LOG_APPEND_TIME):
        raise ValueError(
            f"timestamp_type must be 0 (CreateTime) or 1 (LogAppendTime), not {timestamp_type}"
        )
    if records:
        if last_offset_delta is None:
            last_offset_delta = max(record.offset_delta for record in records)
        if max_timestamp is None:
            max_timestamp = base_timestamp + max(record.timestamp_delta for record in records)
    else:
        if last_offset_delta is None:
            raise ValueError("an empty batch needs an explicit last_offset_delta")
        if max_timestamp is None:
            max_timestamp = base_timestamp

    section = b"".join([encode_record(record) for record in records])
    if codec is not CompressionType.NONE:
        section = compress(codec, section, compression_level)

    attributes = codec.value
    if timestamp_type == LOG_APPEND_TIME:
        attributes |= TIMESTAMP_TYPE_FLAG
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG
    if is_control:
        attributes |= CONTROL_FLAG
    if delete_horizon:
        attributes |= DELETE_HORIZON_FLAG

    buffer = bytearray(BATCH_HEADER_SIZE + len(section))
    try:
        BATCH_HEADER_STRUCT.pack_into(
            buffer,
            0,
            base_offset,
            BATCH_HEADER_SIZE - LOG_OVERHEAD + len(section),
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            len(records),
        )
    except struct.error as exc:
        raise ValueError(f"batch header field out of range: {exc}") from None
    buffer[BATCH_HEADER_SIZE:] = section
    _CRC.pack_into(buffer, CRC_OFFSET, crc32c(memoryview(buffer)[ATTRIBUTES_OFFSET:]))
    return bytes(buffer)


class Entry(NamedTuple):
    """One record for :func:`build_batch`: key, value, optional headers and timestamp."""

    key: bytes | str | None
    value: bytes | str | None
    headers: Sequence[tuple[str, bytes | str | None]] | Mapping[str, bytes | str | None] = ()
    timestamp: int | None = None


def _as_bytes(data: bytes | str | None) -> bytes | None:
    if data is None or isinstance(data, bytes):
        return data
    if isinstance(data, str):
        return data.encode("utf-8")
    return bytes(data)


def _unpack_entry(entry: Any) -> Entry:
    if isinstance(entry, Entry):
        return entry
    if isinstance(entry, tuple | list) and not hasattr(entry, "_fields"):
        return Entry(*entry)
    # Any object with key / value (and optionally headers / timestamp) attributes, such as
    # a LogRecord read back from another batch.
    return Entry(
        entry.key,
        entry.value,
        getattr(entry, "headers", ()),
        getattr(entry, "timestamp", None),
    )


def build_batch(
    entries: Iterable[Any],
    *,
    base_offset: int = 0,
    timestamp: int | None = None,
    compression: int = CompressionType.NONE,
    **batch_fields: Any,
) -> bytes:
    """A batch of ``entries`` with offset deltas 0..n-1.

    Each entry is an :class:`Entry`, a plain tuple ``(key, value)``,
    ``(key, value, headers)`` or ``(key, value, headers, timestamp)``, or any object with
    ``key`` and ``value`` attributes (and optionally ``headers`` and ``timestamp``).
    Keys, values and header values may be ``bytes``, ``str`` (UTF-8 encoded) or ``None``;
    headers may be a sequence of pairs or a mapping.

    A record without its own timestamp gets ``timestamp``, or the current time when that
    is None too. The first record's timestamp becomes baseTimestamp, as in Kafka's
    producer. Other keyword arguments (``producer_id``, ``timestamp_type``,
    ``is_transactional``, ``partition_leader_epoch``...) go to :func:`encode_batch`.
    """
    default_timestamp = time.time_ns() // 1_000_000 if timestamp is None else timestamp
    records = []
    base_timestamp = None
    for offset_delta, raw in enumerate(entries):
        entry = _unpack_entry(raw)
        record_timestamp = default_timestamp if entry.timestamp is None else entry.timestamp
        if base_timestamp is None:
            base_timestamp = record_timestamp
        headers = entry.headers.items() if isinstance(entry.headers, Mapping) else entry.headers
        records.append(
            Record(
                offset_delta,
                record_timestamp - base_timestamp,
                _as_bytes(entry.key),
                _as_bytes(entry.value),
                tuple((name, _as_bytes(value)) for name, value in headers),
            )
        )
    if base_timestamp is None:
        raise ValueError("build_batch needs at least one entry")
    return encode_batch(
        records,
        base_offset=base_offset,
        base_timestamp=base_timestamp,
        compression=compression,
        **batch_fields,
    )


def build_keyed_batch(pairs: Sequence[tuple[bytes, bytes | None]], timestamp: int) -> bytes:
    """The batch :func:`build_batch` makes of ``(key, value)`` byte pairs that share
    ``timestamp`` (no headers, no compression, no producer), written without its
    generality: what the broker appends for itself (the group coordinator's records),
    where the per-record cost is the cost of a commit. Each record is its head
    (:func:`_keyed_record_head`, the same for a key at the same place in every batch),
    its value and an empty header count: three pieces of one join for the batch."""
    if not pairs:
        raise ValueError("build_keyed_batch needs at least one record")
    parts = []
    for offset_delta, (key, value) in enumerate(pairs):
        if value is None:
            parts += (_keyed_record_head(offset_delta, key, -1), _NO_HEADERS)
        else:
            parts += (_keyed_record_head(offset_delta, key, len(value)), value, _NO_HEADERS)
    section = b"".join(parts)
    buffer = bytearray(BATCH_HEADER_SIZE + len(section))
    BATCH_HEADER_STRUCT.pack_into(
        buffer,
        0,
        0,
        BATCH_HEADER_SIZE - LOG_OVERHEAD + len(section),
        -1,
        MAGIC_V2,
        0,
        0,
        len(pairs) - 1,
        timestamp,
        timestamp,
        -1,
        -1,
        -1,
        len(pairs),
    )
    buffer[BATCH_HEADER_SIZE:] = section
    _CRC.pack_into(buffer, CRC_OFFSET, crc32c(memoryview(buffer)[ATTRIBUTES_OFFSET:]))
    return bytes(buffer)


@functools.lru_cache(maxsize=KEYED_RECORD_HEADS_KEPT)
def _keyed_record_head(offset_delta: int, key: bytes, value_size: int) -> bytes:
    """A record's bytes up to its value: length, attributes 0, timestampDelta 0,
    offsetDelta, key and value length (-1: a null value). A group commits the same
    partitions in the same order over and over, so the heads of its records recur."""
    tail = _varint(offset_delta) + _varint(len(key)) + key + _varint(value_size)
    size = 2 + len(tail) + max(value_size, 0) + len(_NO_HEADERS)
    return _varint(size) + b"\x00\x00" + tail


def build_control_batch(
    control_type: ControlRecordType,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    timestamp: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """A transaction marker batch: one COMMIT or ABORT control record, as the broker
    writes it (transactional + control attributes, no base sequence)."""
    control_type = ControlRecordType(control_type)
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise ValueError(f"only COMMIT and ABORT markers can be built, not {control_type.name}")
    if timestamp is None:
        timestamp = time.time_ns() // 1_000_000
    record = Record(
        0, 0, encode_control_key(control_type), encode_end_txn_marker(coordinator_epoch)
    )
    return encode_batch(
        [record],
        base_offset=base_offset,
        base_timestamp=timestamp,
        is_transactional=True,
        is_control=True,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        partition_leader_epoch=partition_leader_epoch,
    )
