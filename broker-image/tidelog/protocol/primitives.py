"""The protocol's primitive types, as readers and writers that the schema compiler composes.

A reader takes ``(buf, pos)`` and returns ``(value, new_pos)``; ``buf`` is a
``memoryview`` (or ``bytes``) of a whole frame, so variable-length values are bounds-checked
against it. A writer takes ``(out, value)`` and appends ``bytes``-like pieces to the list
``out``; the caller joins them (or hands them to ``writelines``), so a records value is
never copied by the codec.

Encodings (all integers big-endian):

* int8/16/32/64, uint16, uint32, float64: fixed size; boolean: one byte, 0 or 1.
* unsigned varint: 7 bits a byte, least significant group first, at most 5 bytes (32
  bits); varint/varlong: the zig-zag signed forms (32 and 64 bits).
* string: int16 length + UTF-8, -1 for null; compact string: unsigned varint length+1, 0
  for null.
* bytes (and records, which hold record batches and are never decoded here): int32 length
  + data, -1 for null; compact: unsigned varint length+1, 0 for null. Records decode to
  ``memoryview`` slices of the frame, bytes to ``bytes``.
* uuid: 16 bytes, as :class:`uuid.UUID` (Kafka's zero uuid is ``UUID(int=0)``).
* array: int32 count, -1 for null; compact array: unsigned varint count+1, 0 for null.
* tagged fields (flexible versions): unsigned varint count, then per field an unsigned
  varint tag, an unsigned varint size and the field's bytes, in ascending tag order.

Decoding failures raise :class:`DecodeError` (or ``struct.error`` for a truncated fixed-size
value); the public API turns both into :class:`~tidelog.protocol.errors.MalformedMessageError`.

This is one module over 500 lines on purpose: it is the table of encodings above, one
reader and one writer for each type in each form (plain, nullable, compact), which read
best side by side and which :mod:`._compiler` composes.
"""

from __future__ import annotations

import base64
import struct
import uuid
from collections.abc import Callable
from typing import Any

__all__ = [
    "ARRAY_NULL",
    "BOOLEAN",
    "COMPACT_ARRAY_NULL",
    "DECODE_ERRORS",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "UINT16",
    "UINT32",
    "ZERO_UUID",
    "DecodeError",
    "Reader",
    "Writer",
    "encode_array_count",
    "encode_compact_array_count",
    "encode_unsigned_varint",
    "encode_varint",
    "encode_varlong",
    "kafka_uuid_str",
    "parse_kafka_uuid",
    "read_array",
    "read_array_count",
    "read_bytes",
    "read_compact_array",
    "read_compact_array_count",
    "read_compact_bytes",
    "read_compact_nullable_array",
    "read_compact_nullable_array_count",
    "read_compact_nullable_bytes",
    "read_compact_nullable_records",
    "read_compact_nullable_string",
    "read_compact_records",
    "read_compact_string",
    "read_nullable_array",
    "read_nullable_array_count",
    "read_nullable_bytes",
    "read_nullable_records",
    "read_nullable_string",
    "read_records",
    "read_string",
    "read_tagged_fields",
    "read_unsigned_varint",
    "read_uuid",
    "read_varint",
    "read_varlong",
    "write_array",
    "write_bytes",
    "write_compact_array",
    "write_compact_bytes",
    "write_compact_nullable_array",
    "write_compact_nullable_bytes",
    "write_compact_nullable_string",
    "write_compact_string",
    "write_nullable_array",
    "write_nullable_bytes",
    "write_nullable_string",
    "write_string",
    "write_tagged_fields",
    "write_uuid",
]

Reader = Callable[[Any, int], tuple[Any, int]]
Writer = Callable[[list, Any], None]

INT8 = struct.Struct(">b")
INT16 = struct.Struct(">h")
INT32 = struct.Struct(">i")
INT64 = struct.Struct(">q")
UINT16 = struct.Struct(">H")
UINT32 = struct.Struct(">I")
FLOAT64 = struct.Struct(">d")
BOOLEAN = struct.Struct(">?")
ZERO_UUID = uuid.UUID(int=0)

_INT16_NULL = INT16.pack(-1)
_INT32_NULL = INT32.pack(-1)
_UVARINT_SMALL = [bytes((i,)) for i in range(128)]
_COMPACT_NULL = _UVARINT_SMALL[0]


class DecodeError(ValueError):
    """The bytes do not hold a valid value of the expected type."""


# What reading a malformed buffer can raise (DecodeError and UnicodeDecodeError are
# ValueErrors); the public API maps these to MalformedMessageError.
DECODE_ERRORS = (struct.error, ValueError, IndexError)


# --------------------------------------------------------------------------------------
# Varints


def read_unsigned_varint(buf: Any, pos: int) -> tuple[int, int]:
    """An unsigned varint of at most 5 bytes (Kafka's ``readUnsignedVarint``)."""
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    value = b & 0x7F
    shift = 7
    pos += 1
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            if value > 0xFFFFFFFF:
                raise DecodeError("unsigned varint larger than 32 bits")
            return value, pos
        shift += 7
        if shift > 28:
            raise DecodeError("unsigned varint longer than 5 bytes")


def encode_unsigned_varint(value: int) -> bytes:
    if 0 <= value < 0x80:
        return _UVARINT_SMALL[value]
    if value < 0 or value > 0xFFFFFFFF:
        raise struct.error(f"unsigned varint out of range: {value}")
    out = bytearray()
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _read_zigzag(buf: Any, pos: int, max_bytes: int) -> tuple[int, int]:
    value = 0
    shift = 0
    for _ in range(max_bytes):
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return (value >> 1) ^ -(value & 1), pos
        shift += 7
    raise DecodeError(f"varint longer than {max_bytes} bytes")


def read_varint(buf: Any, pos: int) -> tuple[int, int]:
    """A zig-zag encoded signed 32-bit varint."""
    value, pos = _read_zigzag(buf, pos, 5)
    if not -(1 << 31) <= value < (1 << 31):
        raise DecodeError("varint out of the int32 range")
    return value, pos


def read_varlong(buf: Any, pos: int) -> tuple[int, int]:
    """A zig-zag encoded signed 64-bit varint."""
    value, pos = _read_zigzag(buf, pos, 10)
    if not -(1 << 63) <= value < (1 << 63):
        raise DecodeError("varlong out of the int64 range")
    return value, pos


def encode_varint(value: int) -> bytes:
    if not -(1 << 31) <= value < (1 << 31):
        raise struct.error(f"varint out of the int32 range: {value}")
    return encode_unsigned_varint((value << 1) ^ (value >> 31))


def encode_varlong(value: int) -> bytes:
    if not -(1 << 63) <= value < (1 << 63):
        raise struct.error(f"varlong out of the int64 range: {value}")
    zigzag = (value << 1) ^ (value >> 63)
    out = bytearray()
    while zigzag >= 0x80:
        out.append((zigzag & 0x7F) | 0x80)
        zigzag >>= 7
    out.append(zigzag)
    return bytes(out)


# --------------------------------------------------------------------------------------
# Strings


def _decode_utf8(buf: Any, start: int, end: int) -> str:
    if end > len(buf):
        raise DecodeError(f"string of {end - start} bytes runs past the end of the buffer")
    return str(buf[start:end], "utf-8")


def read_string(buf: Any, pos: int) -> tuple[str, int]:
    (n,) = INT16.unpack_from(buf, pos)
    if n < 0:
        raise DecodeError("null in a non-nullable string")
    pos += 2
    return _decode_utf8(buf, pos, pos + n), pos + n


def read_nullable_string(buf: Any, pos: int) -> tuple[str | None, int]:
    (n,) = INT16.unpack_from(buf, pos)
    pos += 2
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative string length {n}")
        return None, pos
    return _decode_utf8(buf, pos, pos + n), pos + n


def read_compact_string(buf: Any, pos: int) -> tuple[str, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        raise DecodeError("null in a non-nullable compact string")
    end = pos + n - 1
    return _decode_utf8(buf, pos, end), end


def read_compact_nullable_string(buf: Any, pos: int) -> tuple[str | None, int]:
    n = buf[pos]
    if n == 1:  # empty: what a consumer's commit has for each partition's metadata
        return "", pos + 1
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        return None, pos
    end = pos + n - 1
    return _decode_utf8(buf, pos, end), end


def write_string(out: list, value: str) -> None:
    data = value.encode("utf-8")
    out.append(INT16.pack(len(data)))
    out.append(data)


def write_nullable_string(out: list, value: str | None) -> None:
    if value is None:
        out.append(_INT16_NULL)
    else:
        write_string(out, value)


def write_compact_string(out: list, value: str) -> None:
    data = value.encode("utf-8")
    out.append(encode_unsigned_varint(len(data) + 1))
    out.append(data)


def write_compact_nullable_string(out: list, value: str | None) -> None:
    if value is None:
        out.append(_COMPACT_NULL)
    else:
        write_compact_string(out, value)


# --------------------------------------------------------------------------------------
# Bytes and records


def _slice(buf: Any, start: int, n: int) -> Any:
    end = start + n
    if end > len(buf):
        raise DecodeError(f"{n} bytes run past the end of the buffer")
    return buf[start:end]


def read_bytes(buf: Any, pos: int) -> tuple[bytes, int]:
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        raise DecodeError("null in non-nullable bytes")
    pos += 4
    return bytes(_slice(buf, pos, n)), pos + n


def read_nullable_bytes(buf: Any, pos: int) -> tuple[bytes | None, int]:
    (n,) = INT32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative bytes length {n}")
        return None, pos
    return bytes(_slice(buf, pos, n)), pos + n


def read_compact_bytes(buf: Any, pos: int) -> tuple[bytes, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        raise DecodeError("null in non-nullable compact bytes")
    return bytes(_slice(buf, pos, n - 1)), pos + n - 1


def read_compact_nullable_bytes(buf: Any, pos: int) -> tuple[bytes | None, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        return None, pos
    return bytes(_slice(buf, pos, n - 1)), pos + n - 1


def read_records(buf: Any, pos: int) -> tuple[memoryview, int]:
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        raise DecodeError("null in non-nullable records")
    pos += 4
    return _slice(buf, pos, n), pos + n


def read_nullable_records(buf: Any, pos: int) -> tuple[memoryview | None, int]:
    """Records as a slice of ``buf`` (a ``memoryview`` of the frame: no copy)."""
    (n,) = INT32.unpack_from(buf, pos)
    pos += 4
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative records length {n}")
        return None, pos
    return _slice(buf, pos, n), pos + n


def read_compact_records(buf: Any, pos: int) -> tuple[memoryview, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        raise DecodeError("null in non-nullable compact records")
    return _slice(buf, pos, n - 1), pos + n - 1


def read_compact_nullable_records(buf: Any, pos: int) -> tuple[memoryview | None, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        return None, pos
    return _slice(buf, pos, n - 1), pos + n - 1


def write_bytes(out: list, value: Any) -> None:
    """Bytes or records: any object with a length that ``out``'s consumer can write."""
    out.append(INT32.pack(len(value)))
    out.append(value)


def write_nullable_bytes(out: list, value: Any) -> None:
    if value is None:
        out.append(_INT32_NULL)
    else:
        out.append(INT32.pack(len(value)))
        out.append(value)


def write_compact_bytes(out: list, value: Any) -> None:
    out.append(encode_unsigned_varint(len(value) + 1))
    out.append(value)


def write_compact_nullable_bytes(out: list, value: Any) -> None:
    if value is None:
        out.append(_COMPACT_NULL)
    else:
        out.append(encode_unsigned_varint(len(value) + 1))
        out.append(value)


# --------------------------------------------------------------------------------------
# Uuid


def read_uuid(buf: Any, pos: int) -> tuple[uuid.UUID, int]:
    end = pos + 16
    if end > len(buf):
        raise DecodeError("uuid runs past the end of the buffer")
    return uuid.UUID(bytes=bytes(buf[pos:end])), end


def write_uuid(out: list, value: uuid.UUID) -> None:
    out.append(value.bytes)


def kafka_uuid_str(value: uuid.UUID) -> str:
    """Kafka's text form of a uuid (``Uuid.toString``): URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    """The inverse of :func:`kafka_uuid_str` (Kafka's ``Uuid.fromString``)."""
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    if len(raw) != 16:
        raise ValueError(f"not a Kafka uuid: {text!r}")
    return uuid.UUID(bytes=raw)


# --------------------------------------------------------------------------------------
# Arrays


def _check_count(buf: Any, pos: int, n: int) -> int:
    # As Kafka: never allocate more elements than there are bytes left.
    if n > len(buf) - pos:
        raise DecodeError(f"array of {n} elements but only {len(buf) - pos} bytes remain")
    return n


def read_array_count(buf: Any, pos: int) -> tuple[int, int]:
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        raise DecodeError("null in a non-nullable array")
    return _check_count(buf, pos + 4, n), pos + 4


def read_nullable_array_count(buf: Any, pos: int) -> tuple[int | None, int]:
    """The element count of an array, ``None`` for a null array."""
    (n,) = INT32.unpack_from(buf, pos)
    if n < 0:
        if n != -1:
            raise DecodeError(f"negative array length {n}")
        return None, pos + 4
    return _check_count(buf, pos + 4, n), pos + 4


def read_compact_array_count(buf: Any, pos: int) -> tuple[int, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        raise DecodeError("null in a non-nullable compact array")
    return _check_count(buf, pos, n - 1), pos


def read_compact_nullable_array_count(buf: Any, pos: int) -> tuple[int | None, int]:
    n, pos = read_unsigned_varint(buf, pos)
    if n == 0:
        return None, pos
    return _check_count(buf, pos, n - 1), pos


def encode_array_count(n: int) -> bytes:
    return INT32.pack(n)


def encode_compact_array_count(n: int) -> bytes:
    return encode_unsigned_varint(n + 1)


ARRAY_NULL = _INT32_NULL
COMPACT_ARRAY_NULL = _COMPACT_NULL


def _read_items(buf: Any, pos: int, n: int | None, read_item: Reader) -> tuple[Any, int]:
    if n is None:
        return None, pos
    items = []
    append = items.append
    for _ in range(n):
        item, pos = read_item(buf, pos)
        append(item)
    return items, pos


def read_array(buf: Any, pos: int, read_item: Reader) -> tuple[list, int]:
    n, pos = read_array_count(buf, pos)
    return _read_items(buf, pos, n, read_item)


def read_nullable_array(buf: Any, pos: int, read_item: Reader) -> tuple[list | None, int]:
    n, pos = read_nullable_array_count(buf, pos)
    return _read_items(buf, pos, n, read_item)


def read_compact_array(buf: Any, pos: int, read_item: Reader) -> tuple[list, int]:
    n, pos = read_compact_array_count(buf, pos)
    return _read_items(buf, pos, n, read_item)


def read_compact_nullable_array(buf: Any, pos: int, read_item: Reader) -> tuple[list | None, int]:
    n, pos = read_compact_nullable_array_count(buf, pos)
    return _read_items(buf, pos, n, read_item)


def write_array(out: list, values: list, write_item: Writer) -> None:
    out.append(INT32.pack(len(values)))
    for value in values:
        write_item(out, value)


def write_nullable_array(out: list, values: list | None, write_item: Writer) -> None:
    if values is None:
        out.append(_INT32_NULL)
    else:
        write_array(out, values, write_item)


def write_compact_array(out: list, values: list, write_item: Writer) -> None:
    out.append(encode_unsigned_varint(len(values) + 1))
    for value in values:
        write_item(out, value)


def write_compact_nullable_array(out: list, values: list | None, write_item: Writer) -> None:
    if values is None:
        out.append(_COMPACT_NULL)
    else:
        write_compact_array(out, values, write_item)


# --------------------------------------------------------------------------------------
# Tagged fields


def read_tagged_fields(buf: Any, pos: int) -> tuple[list[tuple[int, memoryview]], int]:
    """The raw tagged fields section: ``[(tag, data)]`` with ``data`` a slice of ``buf``."""
    n, pos = read_unsigned_varint(buf, pos)
    _check_count(buf, pos, n)
    fields = []
    for _ in range(n):
        tag, pos = read_unsigned_varint(buf, pos)
        size, pos = read_unsigned_varint(buf, pos)
        fields.append((tag, _slice(buf, pos, size)))
        pos += size
    return fields, pos


def write_tagged_fields(out: list, fields: list[tuple[int, list]]) -> None:
    """Write ``[(tag, pieces)]``, already in ascending tag order, each field's bytes given
    as a list of pieces."""
    out.append(encode_unsigned_varint(len(fields)))
    for tag, pieces in fields:
        out.append(encode_unsigned_varint(tag))
        out.append(encode_unsigned_varint(sum(map(len, pieces))))
        out.extend(pieces)
