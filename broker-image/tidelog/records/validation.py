"""Validation of a producer's records before the broker appends them.

:func:`validate_producer_records` is what the Produce path calls on the records of one
partition. It walks the batch headers (one ``struct`` call per batch) and checks what
Kafka's broker checks on a client append, in Kafka's order, without looking at the
records themselves - unless ``require_keys`` (a compacted topic) makes it decode them,
as Kafka does. It reads only: it never writes to or keeps a view on ``data``.

Checks, each failure with its own error naming the batch position:

================================  ===========================================  ====
failure                           error                                        code
================================  ===========================================  ====
no bytes at all                   EmptyRecordsError                            87
trailing bytes / batch cut short  IncompleteBatchError                         2
batchLength < header size         InvalidBatchLengthError                      2
magic != 2                        InvalidMagicError                            87
baseOffset != 0                   InvalidBaseOffsetError                       87
batch > max_message_bytes         RecordTooLargeError                          10
CRC mismatch                      InvalidCrcError                              2
codec id 5-7                      UnsupportedCompressionError                  76
recordsCount == 0                 EmptyBatchError                              87
lastOffsetDelta + 1 != count      InvalidRecordCountError                      87
control batch                     ControlBatchFromProducerError                87
producer id with sequence < 0     InvalidSequenceError                         87
null key (require_keys)           NullKeyOnCompactedTopicError                 87
================================  ===========================================  ====

Kafka's Produce v3+ additionally requires exactly one batch per partition; that rule
belongs to the request layer, which knows the request version.
"""

from __future__ import annotations

from typing import NamedTuple

from .batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_OFFSET,
    MAGIC_V2,
    NO_TIMESTAMP,
    BatchHeader,
    iter_batch_headers,
    read_batch_header,
)
from .compression import CompressionType
from .crc import batch_crc, is_crc_valid
from .errors import (
    ControlBatchFromProducerError,
    CorruptRecordError,
    EmptyBatchError,
    EmptyRecordsError,
    IncompleteBatchError,
    InvalidBaseOffsetError,
    InvalidBatchLengthError,
    InvalidCrcError,
    InvalidMagicError,
    InvalidRecordCountError,
    InvalidSequenceError,
    NullKeyOnCompactedTopicError,
    RecordsError,
    RecordTooLargeError,
    UnsupportedCompressionError,
)
from .reader import records_section

__all__ = [
    "DEFAULT_MAX_MESSAGE_BYTES",
    "ValidatedRecords",
    "validate_producer_records",
    "validate_replicated_records",
]

# Kafka's default max.message.bytes: 1 MiB + the 12-byte log overhead.
DEFAULT_MAX_MESSAGE_BYTES = 1048588

_MAX_CODEC = max(CompressionType)


class ValidatedRecords(NamedTuple):
    """What the append path needs to know about records that passed validation.

    ``offset_of_max_timestamp`` is relative to the first offset of this append: the
    records of the earlier batches plus the lastOffsetDelta of the batch holding the
    largest maxTimestamp (the first such batch on a tie), or -1 when no batch has a
    timestamp. ``max_timestamp_batch`` is that batch's index in ``headers`` (-1 if none).
    """

    headers: tuple[BatchHeader, ...]
    record_count: int
    size_in_bytes: int
    max_timestamp: int
    offset_of_max_timestamp: int
    max_timestamp_batch: int

    @property
    def batches(self) -> tuple[BatchHeader, ...]:
        """Alias of ``headers``."""
        return self.headers

    @property
    def batch_count(self) -> int:
        return len(self.headers)

    @property
    def producer_id(self) -> int:
        return self.headers[0].producer_id

    @property
    def producer_epoch(self) -> int:
        return self.headers[0].producer_epoch

    @property
    def is_transactional(self) -> bool:
        return self.headers[0].is_transactional

    @property
    def first_sequence(self) -> int:
        return self.headers[0].base_sequence

    @property
    def last_sequence(self) -> int:
        return self.headers[-1].last_sequence


def _check_batch(data, header: BatchHeader, max_message_bytes: int) -> None:
    position = header.position
    if header.magic != MAGIC_V2:
        raise InvalidMagicError(
            f"batch has magic {header.magic}; producers must send record batch v2 (magic 2)",
            position=position,
        )
    if header.base_offset != 0:
        raise InvalidBaseOffsetError(
            f"the baseOffset of a producer's batch must be 0, not {header.base_offset}",
            position=position,
        )
    if header.size > max_message_bytes:
        raise RecordTooLargeError(
            f"batch of {header.size} bytes exceeds max.message.bytes {max_message_bytes}",
            position=position,
        )
    computed = batch_crc(data, header)
    if computed != header.crc:
        raise InvalidCrcError(
            f"stored crc {header.crc:#010x} does not match computed crc {computed:#010x}",
            position=position,
        )
    if header.compression > _MAX_CODEC:
        raise UnsupportedCompressionError(
            f"unknown compression codec id {header.compression}", position=position
        )
    count = header.records_count
    if count == 0:
        raise EmptyBatchError("batch declares no records", position=position)
    if count < 0 or header.last_offset_delta + 1 != count:
        raise InvalidRecordCountError(
            f"lastOffsetDelta {header.last_offset_delta} does not match a count of {count}"
            " records",
            position=position,
        )
    if header.is_control:
        raise ControlBatchFromProducerError(
            "clients are not allowed to write control records", position=position
        )
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise InvalidSequenceError(
            f"invalid sequence number {header.base_sequence} in a batch with producerId "
            f"{header.producer_id}",
            position=position,
        )


def _check_keys(data, header: BatchHeader) -> None:
    """Reject a record with a null key without decoding the records: per record only
    its length and the varints before the key are read (compacted topics pay this on
    every produce, so it is kept lean). CRC was verified already."""
    try:
        index = _first_null_key(records_section(data, header), header.records_count)
    except RecordsError as error:
        if error.position is not None:
            raise
        raise type(error)(error.message, position=header.position) from None
    if index is not None:
        raise NullKeyOnCompactedTopicError(
            f"compacted topic cannot accept message without key (record {index})",
            position=header.position,
        )


def _first_null_key(records: bytes, count: int) -> int | None:
    """Index of the first record whose key length is -1 (zig-zag varint 0x01)."""
    position = 0
    try:
        for index in range(count):
            byte = records[position]
            position += 1
            raw, shift = byte & 0x7F, 7
            while byte & 0x80:
                byte = records[position]
                position += 1
                raw |= (byte & 0x7F) << shift
                shift += 7
            length = (raw >> 1) ^ -(raw & 1)
            end = position + length
            position += 1  # attributes
            while records[position] & 0x80:  # timestampDelta
                position += 1
            position += 1
            while records[position] & 0x80:  # offsetDelta
                position += 1
            position += 1
            if records[position] == 0x01:  # keyLength -1
                return index
            if length <= 0 or end > len(records):
                raise IndexError
            position = end
    except IndexError:
        raise CorruptRecordError(f"record {index} runs past the end of its batch") from None
    return None


def _tail_error(data, position: int, limit: int) -> Exception:
    """The error for bytes at ``position`` that do not form a whole batch."""
    remaining = limit - position
    if remaining > MAGIC_OFFSET and data[position + MAGIC_OFFSET] != MAGIC_V2:
        return InvalidMagicError(
            f"batch has magic {data[position + MAGIC_OFFSET]}; producers must send record"
            " batch v2 (magic 2)",
            position=position,
        )
    if remaining < BATCH_HEADER_SIZE:
        return IncompleteBatchError(
            f"{remaining} trailing bytes do not hold a batch header", position=position
        )
    header = read_batch_header(data, position)
    if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
        return InvalidBatchLengthError(
            f"batchLength {header.batch_length} is smaller than a batch header",
            position=position,
        )
    return IncompleteBatchError(
        f"batch of {header.size} bytes is cut short at {remaining} bytes", position=position
    )


def validate_producer_records(
    data: bytes | bytearray | memoryview,
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    require_keys: bool = False,
) -> ValidatedRecords:
    """Check a producer's records for one partition; raise the specific error or describe
    them. ``require_keys`` (compacted topics) rejects any record with a null key."""
    limit = len(data)
    if limit == 0:
        raise EmptyRecordsError("produce request carries no record batch")
    headers = []
    record_count = 0
    max_timestamp = NO_TIMESTAMP
    offset_of_max_timestamp = -1
    max_timestamp_batch = -1
    end = 0
    for header in iter_batch_headers(data):
        _check_batch(data, header, max_message_bytes)
        if require_keys:
            _check_keys(data, header)
        if header.max_timestamp > max_timestamp:
            max_timestamp = header.max_timestamp
            offset_of_max_timestamp = record_count + header.last_offset_delta
            max_timestamp_batch = len(headers)
        record_count += header.records_count
        headers.append(header)
        end = header.position + header.size
    if end != limit:
        raise _tail_error(data, end, limit)
    return ValidatedRecords(
        tuple(headers),
        record_count,
        limit,
        max_timestamp,
        offset_of_max_timestamp,
        max_timestamp_batch,
    )


def validate_replicated_records(data: bytes | bytearray | memoryview) -> list[BatchHeader]:
    """Check batches a follower copies from its leader: offsets are already assigned.

    Every whole batch must be magic 2 with a valid CRC, and offsets must increase from
    batch to batch. A partial batch at the end (a fetch response cut at its size limit)
    is not an error: it is left out of the result, and the caller writes only the whole
    batches. No whole batch at all raises.
    """
    headers = []
    next_offset = -1
    for header in iter_batch_headers(data):
        if header.magic != MAGIC_V2:
            raise InvalidMagicError(f"batch has magic {header.magic}", position=header.position)
        if not is_crc_valid(data, header):
            raise InvalidCrcError("replicated batch fails its CRC", position=header.position)
        if header.last_offset_delta < 0 or header.base_offset < next_offset:
            raise CorruptRecordError(
                f"offsets go backwards: batch at {header.base_offset} after offset "
                f"{next_offset - 1}",
                position=header.position,
            )
        next_offset = header.next_offset
        headers.append(header)
    if not headers:
        raise (
            _tail_error(data, 0, len(data))
            if len(data)
            else EmptyRecordsError("no record batch to append")
        )
    return headers
