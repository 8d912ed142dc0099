"""LogAppendTime: the broker, not the producer, stamps each batch's time.

Kafka sets the timestamp-type bit and overwrites maxTimestamp with the append time;
both lie inside the CRC, so only such topics pay for a CRC per batch (in C).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence

from tidelog.records.batch import ATTRIBUTES_OFFSET, CRC_OFFSET, TIMESTAMP_TYPE_FLAG, BatchHeader
from tidelog.records.crc import crc32c

__all__ = ["stamp_log_append_time"]

_MAX_TIMESTAMP_OFFSET = 35
_ATTRIBUTES = struct.Struct(">h")
_TIMESTAMP = struct.Struct(">q")
_CRC = struct.Struct(">I")


def stamp_log_append_time(data: bytearray, batches: Sequence[BatchHeader], now_ms: int) -> None:
    view = memoryview(data)
    for batch in batches:
        start = batch.position
        _ATTRIBUTES.pack_into(
            data, start + ATTRIBUTES_OFFSET, batch.attributes | TIMESTAMP_TYPE_FLAG
        )
        _TIMESTAMP.pack_into(data, start + _MAX_TIMESTAMP_OFFSET, now_ms)
        checksum = crc32c(view[start + ATTRIBUTES_OFFSET : start + batch.size])
        _CRC.pack_into(data, start + CRC_OFFSET, checksum)
