"""One record of a v2 batch, and the records section made of them.

A record on the wire (all varints zig-zag, see :mod:`.varint`)::

    length: varint              bytes of the record after this field
    attributes: int8            unused by Kafka, always 0 when written by clients
    timestampDelta: varlong     timestamp - batch baseTimestamp
    offsetDelta: varint         offset - batch baseOffset
    keyLength: varint           -1 = null key
    key: bytes
    valueLength: varint         -1 = null value
    value: bytes
    headersCount: varint
    headers: [headerKeyLength varint, headerKey utf-8, headerValueLength varint (-1 = null),
              headerValue bytes] * headersCount

Header keys are ``str``. They are decoded from UTF-8 with ``surrogateescape`` so that a
key that is not valid UTF-8 (librdkafka does not check) still decodes and re-encodes to
the same bytes.
"""

from __future__ import annotations

from typing import NamedTuple

from .errors import CorruptRecordError
from .varint import decode_varint, decode_varlong, encode_varint, encode_varlong

__all__ = ["Header", "Record", "decode_records", "encode_record"]

Header = tuple[str, bytes | None]

_NULL = encode_varint(-1)
_NO_HEADERS = encode_varint(0)


class Record(NamedTuple):
    """A record as stored in a batch: offsets and timestamps relative to the batch."""

    offset_delta: int
    timestamp_delta: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...] = ()
    attributes: int = 0


def _header_key_bytes(key) -> bytes:
    if isinstance(key, str):
        return key.encode("utf-8", "surrogateescape")
    if key is None:
        raise ValueError("record header keys cannot be null")
    return bytes(key)


def encode_record(record: Record) -> bytes:
    """The wire bytes of ``record``, length prefix included.

    Raises ``ValueError`` when a field does not fit its wire type or a header key is None.
    """
    offset_delta, timestamp_delta, key, value, headers, attributes = record
    if not -128 <= attributes <= 127:
        raise ValueError(f"record attributes out of int8 range: {attributes}")
    parts = [
        bytes((attributes & 0xFF,)),
        encode_varlong(timestamp_delta),
        encode_varint(offset_delta),
    ]
    append = parts.append
    if key is None:
        append(_NULL)
    else:
        append(encode_varint(len(key)))
        append(key)
    if value is None:
        append(_NULL)
    else:
        append(encode_varint(len(value)))
        append(value)
    if not headers:
        append(_NO_HEADERS)
    else:
        append(encode_varint(len(headers)))
        for header_key, header_value in headers:
            encoded_key = _header_key_bytes(header_key)
            append(encode_varint(len(encoded_key)))
            append(encoded_key)
            if header_value is None:
                append(_NULL)
            else:
                append(encode_varint(len(header_value)))
                append(header_value)
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def decode_records(data, count: int) -> list[Record]:
    """Decode exactly ``count`` records filling all of ``data`` (a records section).

    Any damage - a varint running off the end, a length overrunning its record or the
    section, a record whose fields do not add up to its declared length, fewer or more
    records than ``count`` - raises :class:`CorruptRecordError`.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    if count < 0:
        raise CorruptRecordError(f"negative record count {count}")
    limit = len(data)
    position = 0
    records = []
    append = records.append
    for index in range(count):
        if position >= limit:
            raise CorruptRecordError(
                f"records section holds {index} records but the batch declares {count}"
            )
        length, position = decode_varint(data, position)
        record_end = position + length
        if length <= 0 or record_end > limit:
            raise CorruptRecordError(
                f"record {index} declares {length} bytes but {limit - position} remain"
            )
        attributes = data[position]
        if attributes > 127:
            attributes -= 256
        timestamp_delta, position = decode_varlong(data, position + 1)
        offset_delta, position = decode_varint(data, position)

        size, position = decode_varint(data, position)
        if size >= 0:
            end = position + size
            if end > record_end:
                raise CorruptRecordError(f"record {index}: key of {size} bytes overruns")
            key = data[position:end]
            position = end
        elif size == -1:
            key = None
        else:
            raise CorruptRecordError(f"record {index}: invalid key length {size}")

        size, position = decode_varint(data, position)
        if size >= 0:
            end = position + size
            if end > record_end:
                raise CorruptRecordError(f"record {index}: value of {size} bytes overruns")
            value = data[position:end]
            position = end
        elif size == -1:
            value = None
        else:
            raise CorruptRecordError(f"record {index}: invalid value length {size}")

        header_count, position = decode_varint(data, position)
        if header_count == 0:
            headers = ()
        else:
            # Each header takes at least two bytes: the count cannot exceed what is left.
            if header_count < 0 or 2 * header_count > record_end - position:
                raise CorruptRecordError(f"record {index}: invalid header count {header_count}")
            header_list = []
            for _ in range(header_count):
                size, position = decode_varint(data, position)
                end = position + size
                if size < 0 or end > record_end:
                    raise CorruptRecordError(f"record {index}: invalid header key length {size}")
                header_key = data[position:end].decode("utf-8", "surrogateescape")
                size, position = decode_varint(data, end)
                if size >= 0:
                    end = position + size
                    if end > record_end:
                        raise CorruptRecordError(
                            f"record {index}: header value of {size} bytes overruns"
                        )
                    header_list.append((header_key, data[position:end]))
                    position = end
                elif size == -1:
                    header_list.append((header_key, None))
                else:
                    raise CorruptRecordError(f"record {index}: invalid header value length {size}")
            headers = tuple(header_list)

        if position != record_end:
            raise CorruptRecordError(
                f"record {index} declares {length} bytes but its fields take "
                f"{length + position - record_end}"
            )
        append(Record(offset_delta, timestamp_delta, key, value, headers, attributes))
    if position != limit:
        raise CorruptRecordError(
            f"records section has {limit - position} bytes left after the {count} declared records"
        )
    return records
