"""Reading record batches v2 into records with absolute offsets and timestamps.

This is the full decode (decompressing when needed) used by consumers of the format
inside tidelog: tools such as dump-log, compaction, tests. The broker's produce and fetch
paths work on batch headers only (:mod:`.batch`, :mod:`.validation`).

Malformed input always raises a :class:`RecordsError` naming the batch position, never
an ``IndexError`` or ``struct.error``: damage to the bytes is a
:class:`CorruptRecordError` (or a subclass), a batch that is not magic 2 an
:class:`InvalidMagicError`, an unknown codec an :class:`UnsupportedCompressionError`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import NamedTuple, NoReturn

from .batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, MAGIC_V2, BatchHeader, read_batch_header
from .compression import CompressionType, decompress
from .crc import batch_crc
from .errors import (
    IncompleteBatchError,
    InvalidBatchLengthError,
    InvalidCrcError,
    InvalidMagicError,
    RecordsError,
)
from .record import Header, decode_records

__all__ = [
    "DecodedBatch",
    "LogRecord",
    "decode_batch",
    "iter_decoded_batches",
    "records_section",
]


class LogRecord(NamedTuple):
    """A record as a consumer sees it: absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0


class DecodedBatch(NamedTuple):
    """A batch header and its records."""

    header: BatchHeader
    records: list[LogRecord]

    @property
    def compression(self) -> CompressionType:
        return CompressionType(self.header.compression)

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    @property
    def is_transactional(self) -> bool:
        return self.header.is_transactional

    @property
    def timestamp_type(self) -> int:
        return self.header.timestamp_type


def _reraise_at(exc: RecordsError, position: int) -> NoReturn:
    """Raise ``exc`` again, as the same class, naming the batch position."""
    if exc.position is not None:
        raise exc
    raise type(exc)(exc.message, position=position) from exc


def _read_header(buffer, position: int, limit: int) -> BatchHeader:
    """The header at ``position`` after checking the batch's framing fits ``limit``."""
    if limit - position < BATCH_HEADER_SIZE:
        raise IncompleteBatchError(
            f"{limit - position} bytes cannot hold a {BATCH_HEADER_SIZE}-byte batch header",
            position=position,
        )
    header = read_batch_header(buffer, position)
    if header.magic != MAGIC_V2:
        raise InvalidMagicError(
            f"batch has magic {header.magic}, only record batch v2 (magic 2) is supported",
            position=position,
        )
    if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
        raise InvalidBatchLengthError(
            f"batchLength {header.batch_length} is smaller than a batch header",
            position=position,
        )
    if position + header.size > limit:
        raise IncompleteBatchError(
            f"batch of {header.size} bytes is cut short at {limit - position} bytes",
            position=position,
        )
    return header


def records_section(buffer, header: BatchHeader) -> bytes:
    """The batch's records, decompressed: what follows its 61-byte header."""
    start = header.position + BATCH_HEADER_SIZE
    codec = CompressionType.from_id(header.compression)
    with memoryview(buffer)[start : header.position + header.size] as section:
        return decompress(codec, section) if codec else bytes(section)


def decode_batch(buffer, position: int = 0, *, verify_crc: bool = True) -> DecodedBatch:
    """Decode the batch at ``position`` of ``buffer`` (bytes, bytearray, memoryview, mmap).

    Offsets are ``baseOffset + offsetDelta``; timestamps are ``baseTimestamp +
    timestampDelta``, or ``maxTimestamp`` for every record of a LogAppendTime batch.
    With ``verify_crc`` (the default) a CRC mismatch raises :class:`InvalidCrcError`.
    """
    header = _read_header(buffer, position, len(buffer))
    if verify_crc:
        computed = batch_crc(buffer, header)
        if computed != header.crc:
            raise InvalidCrcError(
                f"stored crc {header.crc:#010x} does not match computed crc {computed:#010x}",
                position=position,
            )
    try:
        records = decode_records(records_section(buffer, header), header.records_count)
    except RecordsError as exc:
        _reraise_at(exc, position)

    base_offset = header.base_offset
    if header.timestamp_type:
        timestamp = header.max_timestamp
        log_records = [
            LogRecord(base_offset + r[0], timestamp, r[2], r[3], r[4], r[5]) for r in records
        ]
    else:
        base_timestamp = header.base_timestamp
        log_records = [
            LogRecord(base_offset + r[0], base_timestamp + r[1], r[2], r[3], r[4], r[5])
            for r in records
        ]
    return DecodedBatch(header, log_records)


def iter_decoded_batches(
    buffer, *, verify_crc: bool = True, allow_partial: bool = False
) -> Iterator[DecodedBatch]:
    """Decode every batch of ``buffer`` in order.

    Bytes left over at the end that do not form a whole batch raise
    :class:`IncompleteBatchError`, unless ``allow_partial`` is set: then iteration simply
    stops there, as a consumer does with the batch a broker cut short at the end of a fetch
    response.
    """
    limit = len(buffer)
    position = 0
    while position < limit:
        try:
            header = _read_header(buffer, position, limit)
        except IncompleteBatchError:
            if allow_partial:
                return
            raise
        yield decode_batch(buffer, position, verify_crc=verify_crc)
        position += header.size
