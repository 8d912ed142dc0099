"""Reading just what compaction needs from a batch, and rebuilding it with fewer records
(Kafka's ``MemoryRecords.filterTo``).

The cleaner decides about a record from its offset delta, key and whether its value is
null; :func:`scan_records` reads only those fields of each record (its length prefix
gives where the next one starts) and remembers where the record's bytes lie. A record's
bytes depend only on itself and on the batch's base offset and base timestamp, which a
cleaned batch keeps, so :func:`rebuild_batch` makes the cleaned batch from the retained
records' bytes as they are - no record is decoded or encoded again - under a new header:
same baseOffset, lastOffsetDelta, baseTimestamp, attributes (codec, timestamp type,
flags), producer id/epoch, base sequence and partition leader epoch; the record count,
length, maxTimestamp (CreateTime: of the retained records) and CRC recomputed.

Framing damage (lengths overrunning the record or the section, a wrong record count)
raises :class:`CorruptRecordError`; the fields compaction skips are not checked - the
cleaner verifies every batch's CRC first, and appends validated the records.
"""

from __future__ import annotations

from collections.abc import Callable

from tidelog.records.batch import (
    ATTRIBUTES_OFFSET,
    BATCH_HEADER_SIZE,
    BATCH_HEADER_STRUCT,
    COMPRESSION_CODEC_MASK,
    CRC_OFFSET,
    LOG_OVERHEAD,
    MAGIC_V2,
    TIMESTAMP_TYPE_FLAG,
    BatchHeader,
)
from tidelog.records.compression import CompressionType, compress, decompress
from tidelog.records.crc import crc32c
from tidelog.records.errors import CorruptRecordError
from tidelog.records.varint import decode_varint, decode_varlong

__all__ = ["ScannedRecord", "rebuild_batch", "records_section", "scan_records"]

# (start, end, offset_delta, timestamp_delta, key, value_is_null): one record of a
# records section, its bytes being section[start:end] (length prefix included).
ScannedRecord = tuple[int, int, int, int, bytes | None, bool]


def records_section(chunk, header: BatchHeader) -> bytes:
    """The (decompressed) records section of the batch at ``header.position`` of ``chunk``."""
    start = header.position + BATCH_HEADER_SIZE
    stop = header.position + header.size
    codec = header.attributes & COMPRESSION_CODEC_MASK
    if codec:
        with memoryview(chunk)[start:stop] as view:
            return decompress(codec, view)
    return chunk[start:stop]


def scan_records(data: bytes, count: int) -> list[ScannedRecord]:
    """The ``count`` records that fill ``data``, reduced to what compaction needs.

    Varints of one and two bytes (nearly every length and delta) are decoded inline;
    longer ones go to the shared decoder.
    """
    limit = len(data)
    position = 0
    found = []
    append = found.append
    try:
        for index in range(count):
            start = position
            # length: varint
            byte = data[position]
            if byte < 0x80:
                length = (byte >> 1) ^ -(byte & 1)
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                length = (unsigned >> 1) ^ -(unsigned & 1)
                position += 2
            else:
                length, position = decode_varint(data, position)
            end = position + length
            if length <= 0 or end > limit:
                raise CorruptRecordError(
                    f"record {index} declares {length} bytes but {limit - position} remain"
                )
            position += 1  # attributes
            # timestampDelta: varlong
            byte = data[position]
            if byte < 0x80:
                timestamp_delta = (byte >> 1) ^ -(byte & 1)
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                timestamp_delta = (unsigned >> 1) ^ -(unsigned & 1)
                position += 2
            else:
                timestamp_delta, position = decode_varlong(data, position)
            # offsetDelta: varint
            byte = data[position]
            if byte < 0x80:
                offset_delta = (byte >> 1) ^ -(byte & 1)
                position += 1
            elif data[position + 1] < 0x80:
                unsigned = (byte & 0x7F) | (data[position + 1] << 7)
                offset_delta = (unsigned >> 1) ^ -(unsigned & 1)
                position += 2
            else:
                offset_delta, position = decode_varint(data, position)
            # key: varint length, bytes
            byte = data[position]
            if byte < 0x80:
                size = (byte >> 1) ^ -(byte & 1)
                position += 1
            else:
                size, position = decode_varint(data, position)
            if size >= 0:
                key = data[position : position + size]
                position += size
            elif size == -1:
                key = None
            else:
                raise CorruptRecordError(f"record {index}: invalid key length {size}")
            # value: only whether it is null (length -1 is the single byte 0x01)
            if position >= end:
                raise CorruptRecordError(f"record {index}: fields overrun its {length} bytes")
            append((start, end, offset_delta, timestamp_delta, key, data[position] == 1))
            position = end
    except IndexError:
        raise CorruptRecordError(
            f"records section of {limit} bytes ends inside record {len(found)}"
        ) from None
    if position != limit:
        raise CorruptRecordError(
            f"records section has {limit - position} bytes left after the {count} declared "
            "records"
        )
    return found


def rebuild_batch(
    header: BatchHeader,
    kept: bytes,
    count: int,
    max_timestamp_delta: int,
    levels: Callable[[str], int | None] = lambda codec: None,
) -> bytes:
    """The batch of ``header`` holding only the ``count`` records whose bytes are ``kept``
    (taken from its decompressed records section, back to back), compressed again with
    the batch's codec at ``levels(codec name)`` (the log's ``compression.<codec>.level``);
    ``max_timestamp_delta`` is the largest of their timestamp deltas."""
    section = kept
    attributes = header.attributes
    codec = attributes & COMPRESSION_CODEC_MASK
    if codec:
        section = compress(codec, section, levels(CompressionType(codec).name))
    if attributes & TIMESTAMP_TYPE_FLAG:
        max_timestamp = header.max_timestamp
    else:
        max_timestamp = header.base_timestamp + max_timestamp_delta
    buffer = bytearray(BATCH_HEADER_SIZE + len(section))
    BATCH_HEADER_STRUCT.pack_into(
        buffer,
        0,
        header.base_offset,
        BATCH_HEADER_SIZE - LOG_OVERHEAD + len(section),
        header.partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        header.last_offset_delta,
        header.base_timestamp,
        max_timestamp,
        header.producer_id,
        header.producer_epoch,
        header.base_sequence,
        count,
    )
    buffer[BATCH_HEADER_SIZE:] = section
    with memoryview(buffer)[ATTRIBUTES_OFFSET:] as covered:
        crc = crc32c(covered)
    buffer[CRC_OFFSET : CRC_OFFSET + 4] = crc.to_bytes(4, "big")
    return bytes(buffer)
