"""Zig-zag varints as Kafka's ``ByteUtils`` writes and reads them.

A varint is a signed int32, a varlong a signed int64. The value is zig-zag mapped to an
unsigned number (0, -1, 1, -2 ... → 0, 1, 2, 3 ...) and written 7 bits at a time, least
significant group first, with the high bit of each byte set while more bytes follow.

Reading matches Java exactly: a varint may span at most 5 bytes and a varlong at most
10; bits that do not fit 32 (or 64) bits are dropped, as Java's int (long) shifts drop
them. Too many continuation bytes, or data that ends inside a varint, raise
:class:`CorruptRecordError`.

Decoding takes ``(buffer, position)`` and returns ``(value, next_position)``; the buffer
may be ``bytes``, ``bytearray`` or a byte ``memoryview``. The common one-byte case costs
a single index and comparison.
"""

from __future__ import annotations

from .errors import CorruptRecordError

__all__ = [
    "INT32_MAX",
    "INT32_MIN",
    "INT64_MAX",
    "INT64_MIN",
    "decode_varint",
    "decode_varlong",
    "encode_varint",
    "encode_varlong",
    "size_of_varint",
    "size_of_varlong",
]

INT32_MIN = -(1 << 31)
INT32_MAX = (1 << 31) - 1
INT64_MIN = -(1 << 63)
INT64_MAX = (1 << 63) - 1

_MASK32 = (1 << 32) - 1
_MASK64 = (1 << 64) - 1

# One-byte encodings of -64..63, indexed by value + 64.
_SMALL = tuple(bytes(((v << 1) ^ (v >> 63),)) for v in range(-64, 64))


def _encode_unsigned(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def encode_varint(value: int) -> bytes:
    """Encode a signed int32 as a zig-zag varint (1-5 bytes)."""
    if -64 <= value < 64:
        return _SMALL[value + 64]
    if not INT32_MIN <= value <= INT32_MAX:
        raise ValueError(f"varint out of int32 range: {value}")
    return _encode_unsigned((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    """Encode a signed int64 as a zig-zag varlong (1-10 bytes)."""
    if -64 <= value < 64:
        return _SMALL[value + 64]
    if not INT64_MIN <= value <= INT64_MAX:
        raise ValueError(f"varlong out of int64 range: {value}")
    return _encode_unsigned((value << 1) ^ (value >> 63))


def size_of_varint(value: int) -> int:
    """Bytes :func:`encode_varint` writes for ``value``."""
    unsigned = ((value << 1) ^ (value >> 31)) & _MASK32
    return max(1, (unsigned.bit_length() + 6) // 7)


def size_of_varlong(value: int) -> int:
    """Bytes :func:`encode_varlong` writes for ``value``."""
    unsigned = ((value << 1) ^ (value >> 63)) & _MASK64
    return max(1, (unsigned.bit_length() + 6) // 7)


def _decode_unsigned(buffer, position: int, max_bytes: int, kind: str) -> tuple[int, int]:
    result = 0
    shift = 0
    start = position
    try:
        for _ in range(max_bytes):
            byte = buffer[position]
            position += 1
            result |= (byte & 0x7F) << shift
            if byte < 0x80:
                return result, position
            shift += 7
    except IndexError:
        raise CorruptRecordError(f"{kind} at byte {start} runs past the end of the data") from None
    raise CorruptRecordError(f"{kind} at byte {start} is longer than {max_bytes} bytes")


def decode_varint(buffer, position: int) -> tuple[int, int]:
    """Read a zig-zag varint (int32) at ``position``; returns ``(value, next_position)``."""
    try:
        byte = buffer[position]
    except IndexError:
        raise CorruptRecordError(
            f"varint at byte {position} runs past the end of the data"
        ) from None
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), position + 1
    unsigned, position = _decode_unsigned(buffer, position, 5, "varint")
    unsigned &= _MASK32
    return (unsigned >> 1) ^ -(unsigned & 1), position


def decode_varlong(buffer, position: int) -> tuple[int, int]:
    """Read a zig-zag varlong (int64) at ``position``; returns ``(value, next_position)``."""
    try:
        byte = buffer[position]
    except IndexError:
        raise CorruptRecordError(
            f"varlong at byte {position} runs past the end of the data"
        ) from None
    if byte < 0x80:
        return (byte >> 1) ^ -(byte & 1), position + 1
    unsigned, position = _decode_unsigned(buffer, position, 10, "varlong")
    unsigned &= _MASK64
    return (unsigned >> 1) ^ -(unsigned & 1), position
