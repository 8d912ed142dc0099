"""Message sets of magic 0 and 1: the formats of Kafka before 0.11 (v1 is 0.10's, with
timestamps, KIP-32), as old producers send them and old consumers read them.

One entry of a message set (integers big-endian)::

    offset: int64        absolute; inside a v1 compressed wrapper: relative, 0..n-1
    size: int32          bytes of the message that follows
    crc: uint32          CRC32 (zlib's, not CRC32C) of magic..end
    magic: int8          0 or 1
    attributes: int8     codec (bits 0-2); v1: timestamp type (bit 3, 1 = LogAppendTime)
    timestamp: int64     v1 only
    key: bytes           int32 length, -1 for null
    value: bytes         int32 length, -1 for null

A compressed message is a wrapper: its value is a message set of the same magic,
compressed with the wrapper's codec (snappy in xerial framing; lz4 for magic 0 with the
broken header checksum of KAFKA-3160), whose offset is the last inner message's.

Kafka 3.9 accepts these from producers and converts them on append (``LogValidator``):

* :func:`read_message_set` checks a producer's message set (CRCs, magic, wrappers holding
  messages of their own magic and no nested compression) and returns its records;
* :func:`to_record_batch` makes them one record batch v2: offsets 0..n-1 (the log assigns
  the real ones), v1 timestamps kept, v0 ones -1 (none), no headers and no producer,
  compressed with the codec the topic wants.

For a consumer that fetches with a version below 4, :func:`down_convert` writes record
batches as messages of magic 1 (Fetch v2, v3) or 0 (Fetch v0, v1), from the fetch offset
on; a compressed batch becomes one wrapper, control batches are left out (old consumers
know no transactions).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import NamedTuple

from .batch import (
    COMPRESSION_CODEC_MASK,
    CONTROL_FLAG,
    MAGIC_OFFSET,
    NO_TIMESTAMP,
    TIMESTAMP_TYPE_FLAG,
)
from .builder import encode_batch
from .compression import CompressionType, compress, decompress
from .errors import CorruptRecordError, InvalidRecordError, NullKeyOnCompactedTopicError
from .reader import iter_decoded_batches
from .record import Record

__all__ = [
    "LegacyRecord",
    "MessageSet",
    "down_convert",
    "encode_entry",
    "encode_message",
    "legacy_magic",
    "read_message_set",
    "to_record_batch",
]

MAGIC_V0, MAGIC_V1 = 0, 1
_ENTRY_HEAD = struct.Struct(">qi")  # offset, size
_MESSAGE_HEAD = struct.Struct(">IBb")  # crc, magic, attributes
_INT32 = struct.Struct(">i")
_INT64 = struct.Struct(">q")
_MIN_MESSAGE = {MAGIC_V0: 14, MAGIC_V1: 22}  # crc..value lengths with null key and value
# KAFKA-3160: 0.8's lz4 framing checksums the frame descriptor with its magic bytes.
_LZ4_MAGIC = b"\x04\x22\x4d\x18"


class LegacyRecord(NamedTuple):
    offset: int  # as written: absolute, or relative inside a v1 wrapper
    timestamp: int  # -1 for magic 0
    key: bytes | None
    value: bytes | None


class MessageSet(NamedTuple):
    """A producer's message set, checked: its magic, the codec its wrappers used (NONE
    when it had none) and every record, wrappers opened."""

    magic: int
    codec: CompressionType
    records: list[LegacyRecord]


def legacy_magic(data) -> int | None:
    """The magic of the first entry of ``data`` when it is 0 or 1, else None (a record
    batch v2, or too short to tell)."""
    if len(data) <= MAGIC_OFFSET:
        return None
    magic = data[MAGIC_OFFSET]
    return magic if magic in (MAGIC_V0, MAGIC_V1) else None


# -- reading ------------------------------------------------------------------------------


def _bytes_field(data, position: int, end: int, what: str) -> tuple[bytes | None, int]:
    if position + 4 > end:
        raise CorruptRecordError(f"message ends inside its {what} length")
    (length,) = _INT32.unpack_from(data, position)
    position += 4
    if length == -1:
        return None, position
    if length < 0 or position + length > end:
        raise CorruptRecordError(f"message {what} of {length} bytes overruns the message")
    return bytes(data[position : position + length]), position + length


def _messages(data, *, inner_of: int | None = None):
    """(offset, magic, attributes, timestamp, key, value) of each message of a message
    set, each CRC checked; ``inner_of`` is the wrapper's magic for an inner set."""
    position, limit = 0, len(data)
    while position < limit:
        if limit - position < _ENTRY_HEAD.size:
            raise CorruptRecordError(f"{limit - position} trailing bytes do not hold a message")
        offset, size = _ENTRY_HEAD.unpack_from(data, position)
        start = position + _ENTRY_HEAD.size
        end = start + size
        if size < _MIN_MESSAGE[MAGIC_V0] or end > limit:
            raise CorruptRecordError(f"message of {size} bytes at byte {position} is cut short")
        crc, magic, attributes = _MESSAGE_HEAD.unpack_from(data, start)
        if magic not in (MAGIC_V0, MAGIC_V1) or size < _MIN_MESSAGE[magic]:
            raise CorruptRecordError(f"message at byte {position} has magic {magic}")
        if inner_of is not None and magic != inner_of:
            raise InvalidRecordError(
                f"a magic {inner_of} wrapper holds a message of magic {magic}", position=position
            )
        if zlib.crc32(memoryview(data)[start + 4 : end]) != crc:
            raise CorruptRecordError(f"message at byte {position} fails its CRC check")
        field = start + 6
        timestamp = NO_TIMESTAMP
        if magic == MAGIC_V1:
            (timestamp,) = _INT64.unpack_from(data, field)
            field += 8
        key, field = _bytes_field(data, field, end, "key")
        value, field = _bytes_field(data, field, end, "value")
        if field != end:
            raise CorruptRecordError(f"message at byte {position} has {end - field} extra bytes")
        yield offset, magic, attributes, timestamp, key, value
        position = end


def _open_wrapper(magic: int, codec: int, value: bytes | None) -> bytes:
    if not value:
        raise InvalidRecordError("a compressed message wraps no messages")
    if codec == CompressionType.LZ4 and magic == MAGIC_V0:
        value = _lz4_v0_fixed(value)
    return decompress(codec, value)


def _lz4_v0_fixed(frame: bytes) -> bytes:
    """A magic 0 lz4 frame with its descriptor checksum made right (KAFKA-3160)."""
    if len(frame) < 7 or frame[:4] != _LZ4_MAGIC:
        return frame
    descriptor_end = 6 + (8 if frame[4] & 0x08 else 0)  # FLG, BD, [content size]
    checksum = (_xxh32(frame[4:descriptor_end]) >> 8) & 0xFF
    return frame[:descriptor_end] + bytes((checksum,)) + frame[descriptor_end + 1 :]


def _lz4_v0_broken(frame: bytes) -> bytes:
    """A correct lz4 frame with its descriptor checksum over the magic too, as Kafka
    writes one into a magic 0 wrapper."""
    descriptor_end = 6 + (8 if frame[4] & 0x08 else 0)
    checksum = (_xxh32(frame[:descriptor_end]) >> 8) & 0xFF
    return frame[:descriptor_end] + bytes((checksum,)) + frame[descriptor_end + 1 :]


_PRIME32 = (2654435761, 2246822519, 3266489917, 668265263, 374761393)
_MASK32 = 0xFFFFFFFF


def _rotl32(value: int, bits: int) -> int:
    return ((value << bits) | (value >> (32 - bits))) & _MASK32


def _xxh32(data: bytes) -> int:
    """XXH32 with seed 0 of a frame descriptor (under 16 bytes: no 16-byte stripes): the
    lz4 frame format's header checksum."""
    p1, p2, p3, p4, p5 = _PRIME32
    acc = (p5 + len(data)) & _MASK32
    position = 0
    while position + 4 <= len(data):
        (lane,) = struct.unpack_from("<I", data, position)
        acc = (_rotl32((acc + lane * p3) & _MASK32, 17) * p4) & _MASK32
        position += 4
    for byte in data[position:]:
        acc = (_rotl32((acc + byte * p5) & _MASK32, 11) * p1) & _MASK32
    acc ^= acc >> 15
    acc = (acc * p2) & _MASK32
    acc ^= acc >> 13
    acc = (acc * p3) & _MASK32
    return acc ^ (acc >> 16)


def read_message_set(data, *, require_keys: bool = False) -> MessageSet:
    """The records of a producer's message set of magic 0 or 1. Damage (framing, CRCs)
    raises CorruptRecordError; a wrapper that holds nothing, other magics or another
    wrapper, or a null key on a compacted topic, InvalidRecordError."""
    records: list[LegacyRecord] = []
    magics, codecs = set(), set()
    for offset, magic, attributes, timestamp, key, value in _messages(data):
        magics.add(magic)
        codec = attributes & COMPRESSION_CODEC_MASK
        if not codec:
            records.append(LegacyRecord(offset, timestamp, key, value))
            continue
        codecs.add(CompressionType.from_id(codec))
        inner = _open_wrapper(magic, codec, value)
        for inner_message in _messages(inner, inner_of=magic):
            inner_offset, _, inner_attributes, inner_timestamp, inner_key, inner_value = (
                inner_message
            )
            if inner_attributes & COMPRESSION_CODEC_MASK:
                raise InvalidRecordError("a compressed message wraps another compressed one")
            if attributes & TIMESTAMP_TYPE_FLAG:  # the wrapper's LogAppendTime counts
                inner_timestamp = timestamp
            records.append(LegacyRecord(inner_offset, inner_timestamp, inner_key, inner_value))
    if not records:
        raise InvalidRecordError("the message set holds no message")
    if len(magics) > 1:
        raise InvalidRecordError("a message set mixes magics 0 and 1")
    if require_keys and any(record.key is None for record in records):
        raise NullKeyOnCompactedTopicError("a compacted topic takes no message without a key")
    codec = next(iter(codecs)) if len(codecs) == 1 else CompressionType.NONE
    return MessageSet(magics.pop(), codec, records)


# -- converting on append -----------------------------------------------------------------


def to_record_batch(
    message_set: MessageSet,
    *,
    target_codec: str = "producer",
    levels: Callable[[str], int | None] = lambda codec: None,
) -> bytes:
    """One record batch v2 of the message set's records, as Kafka's LogValidator makes it:
    offset deltas 0..n-1, the v1 timestamps (v0: -1), no headers, no producer;
    compressed with the producer's codec (``target_codec`` "producer") or the topic's
    ``compression.type``, at ``levels(codec name)``."""
    records = message_set.records
    base_timestamp = records[0].timestamp
    converted = [
        Record(delta, record.timestamp - base_timestamp, record.key, record.value, ())
        for delta, record in enumerate(records)
    ]
    codec = message_set.codec if target_codec == "producer" else _codec_named(target_codec)
    return encode_batch(
        converted,
        base_timestamp=base_timestamp,
        max_timestamp=max(record.timestamp for record in records),
        compression=codec,
        compression_level=levels(codec.name),
    )


def _codec_named(name: str) -> CompressionType:
    return CompressionType.NONE if name == "uncompressed" else CompressionType.from_name(name)


# -- down-conversion for old consumers ----------------------------------------------------


def encode_message(magic: int, attributes: int, timestamp: int, key, value) -> bytes:
    """crc..value of one message of ``magic`` (``timestamp`` is written for magic 1)."""
    body = [bytes((magic, attributes & 0xFF))]
    if magic == MAGIC_V1:
        body.append(_INT64.pack(timestamp))
    for field in (key, value):
        body.append(_INT32.pack(-1) if field is None else _INT32.pack(len(field)) + field)
    joined = b"".join(body)
    return struct.pack(">I", zlib.crc32(joined)) + joined


def encode_entry(offset: int, message: bytes) -> bytes:
    """A message set entry: ``offset`` and size before the message."""
    return _ENTRY_HEAD.pack(offset, len(message)) + message


def down_convert(
    data, to_magic: int, first_offset: int, levels: Callable[[str], int | None] = lambda c: None
) -> bytes:
    """The record batches of ``data`` (whole ones; a partial last batch is left out, as
    the consumer would) as a message set of ``to_magic``, records below ``first_offset``
    left out. Each compressed batch becomes one wrapper of its codec."""
    out: list[bytes] = []
    for decoded in iter_decoded_batches(data, allow_partial=True):
        header = decoded.header
        if header.attributes & CONTROL_FLAG:
            continue
        wanted = [record for record in decoded.records if record.offset >= first_offset]
        if not wanted:
            continue
        timestamp_type = header.timestamp_type if to_magic == MAGIC_V1 else 0
        flags = TIMESTAMP_TYPE_FLAG if timestamp_type else 0
        codec = CompressionType.from_id(header.compression)
        if codec is CompressionType.NONE:
            out += (
                encode_entry(r.offset, encode_message(to_magic, flags, r.timestamp, r.key, r.value))
                for r in wanted
            )
            continue
        out.append(_wrapper(to_magic, flags, codec, wanted, levels))
    return b"".join(out)


def _wrapper(to_magic, flags, codec, records, levels) -> bytes:
    first = records[0].offset
    inner = b"".join(
        # v1 inner offsets are relative to the wrapper's set; v0 ones absolute
        encode_entry(
            r.offset - first if to_magic == MAGIC_V1 else r.offset,
            encode_message(to_magic, 0, r.timestamp, r.key, r.value),
        )
        for r in records
    )
    value = compress(codec, inner, levels(codec.name))
    if codec == CompressionType.LZ4 and to_magic == MAGIC_V0:
        value = _lz4_v0_broken(value)
    timestamp = max(r.timestamp for r in records)
    wrapper = encode_message(to_magic, flags | codec.value, timestamp, None, value)
    return encode_entry(records[-1].offset, wrapper)
