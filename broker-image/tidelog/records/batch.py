"""Record batch v2 (magic 2) header layout, shared by everything that touches batches.

A batch on the wire and on disk::

    baseOffset: int64           0   rewritten by the broker on append (outside the CRC)
    batchLength: int32          8   bytes after this field
    partitionLeaderEpoch: int32 12  rewritten by the broker on append (outside the CRC)
    magic: int8                 16  always 2
    crc: uint32                 17  CRC32C of attributes..end of batch
    attributes: int16           21  compression (bits 0-2), timestampType (3),
                                    isTransactional (4), isControl (5), hasDeleteHorizon (6)
    lastOffsetDelta: int32      23
    baseTimestamp: int64        27
    maxTimestamp: int64         35
    producerId: int64           43
    producerEpoch: int16        51
    baseSequence: int32         53
    recordsCount: int32         57
    records                     61

All integers are big-endian. Header parsing is one ``struct.unpack_from`` per batch so
that scanning a segment costs one call per batch, never per record.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

__all__ = [
    "ATTRIBUTES_OFFSET",
    "BASE_OFFSET_OFFSET",
    "BATCH_HEADER_SIZE",
    "BATCH_HEADER_STRUCT",
    "COMPRESSION_CODEC_MASK",
    "CONTROL_FLAG",
    "CRC_OFFSET",
    "DELETE_HORIZON_FLAG",
    "LOG_OVERHEAD",
    "MAGIC_OFFSET",
    "MAGIC_V2",
    "NO_PARTITION_LEADER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "PARTITION_LEADER_EPOCH_OFFSET",
    "PREFIX_SIZE",
    "RECORDS_OFFSET",
    "TIMESTAMP_TYPE_FLAG",
    "TRANSACTIONAL_FLAG",
    "BatchHeader",
    "assigned_prefix",
    "iter_batch_headers",
    "read_batch_header",
    "rewrite_base_offset_and_epoch",
]

BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
RECORDS_OFFSET = 61
BATCH_HEADER_SIZE = RECORDS_OFFSET
# baseOffset + batchLength: the bytes not counted by batchLength.
LOG_OVERHEAD = 12

MAGIC_V2 = 2
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_SEQUENCE = -1
_INT32_MAX = (1 << 31) - 1

COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_FLAG = 0x08
TRANSACTIONAL_FLAG = 0x10
CONTROL_FLAG = 0x20
DELETE_HORIZON_FLAG = 0x40

_HEADER = struct.Struct(">qiibIhiqqqhii")
# The header fields in order, for writers (the builder packs a whole header with it).
BATCH_HEADER_STRUCT = _HEADER
_OFFSET_AND_EPOCH = struct.Struct(">q")
_PREFIX = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
PREFIX_SIZE = _PREFIX.size
_EPOCH = struct.Struct(">i")


class BatchHeader(NamedTuple):
    """The fixed 61-byte header of one batch, plus where it sits in its buffer or file."""

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int
    position: int

    @property
    def size(self) -> int:
        """Bytes the whole batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def last_sequence(self) -> int:
        """Sequence number of the last record; -1 (no sequence) when baseSequence is -1.

        Sequences wrap from 2**31 - 1 to 0, as Kafka's DefaultRecordBatch.lastSequence.
        """
        if self.base_sequence < 0:
            return NO_SEQUENCE
        last = self.base_sequence + self.last_offset_delta
        return last - (1 << 31) if last > _INT32_MAX else last

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_FLAG)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_FLAG)

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime."""
        return 1 if self.attributes & TIMESTAMP_TYPE_FLAG else 0


def read_batch_header(buffer, offset: int = 0, position: int | None = None) -> BatchHeader:
    """Parse the header at ``buffer[offset:]``; the caller checks that 61 bytes are there.

    ``position`` is where the batch sits in its file when ``buffer`` is only a window
    onto it (default: ``offset``).
    """
    return BatchHeader(
        *_HEADER.unpack_from(buffer, offset), offset if position is None else position
    )


def iter_batch_headers(buffer, start: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
    """Headers of the complete batches in ``buffer[start:end]``; stops at a partial batch.

    Only the framing is checked here (a header fits, the declared length fits); CRC and
    record checks belong to validation and recovery.
    """
    limit = len(buffer) if end is None else end
    position = start
    while position + BATCH_HEADER_SIZE <= limit:
        header = read_batch_header(buffer, position)
        if header.batch_length < BATCH_HEADER_SIZE - LOG_OVERHEAD:
            return
        if position + header.size > limit:
            return
        yield header
        position += header.size


def rewrite_base_offset_and_epoch(
    buffer: bytearray | memoryview, position: int, base_offset: int, leader_epoch: int
) -> None:
    """Assign a batch its offsets and epoch in place; both fields are outside the CRC."""
    _OFFSET_AND_EPOCH.pack_into(buffer, position + BASE_OFFSET_OFFSET, base_offset)
    _EPOCH.pack_into(buffer, position + PARTITION_LEADER_EPOCH_OFFSET, leader_epoch)


def assigned_prefix(header: BatchHeader, base_offset: int, leader_epoch: int) -> bytes:
    """The batch's first 16 bytes with offsets and epoch assigned: written in front of
    the untouched rest of the batch, it assigns offsets without copying the batch."""
    return _PREFIX.pack(base_offset, header.batch_length, leader_epoch)
