from __future__ import annotations

import struct
import uuid

import pytest

from tidelog.protocol import primitives as p
from tidelog.protocol._schema import Versions, snake_case


def _written(write, value) -> bytes:
    out: list = []
    write(out, value)
    return b"".join(out)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [
        (0, "00"),
        (1, "01"),
        (127, "7f"),
        (128, "8001"),
        (300, "ac02"),
        (16383, "ff7f"),
        (16384, "808001"),
        (0xFFFFFFFF, "ffffffff0f"),
    ],
)
def test_unsigned_varint(value, encoded):
    assert p.encode_unsigned_varint(value).hex() == encoded
    assert p.read_unsigned_varint(bytes.fromhex(encoded) + b"\xaa", 0) == (value, len(encoded) // 2)


def test_unsigned_varint_limits():
    with pytest.raises(p.DecodeError):
        p.read_unsigned_varint(bytes.fromhex("ffffffff7f"), 0)  # 35 bits
    with pytest.raises(p.DecodeError):
        p.read_unsigned_varint(bytes.fromhex("ffffffffff01"), 0)  # 6 bytes
    with pytest.raises(IndexError):
        p.read_unsigned_varint(b"\x80", 0)
    with pytest.raises(struct.error):
        p.encode_unsigned_varint(-1)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, "00"), (-1, "01"), (1, "02"), (-64, "7f"), (64, "8001"), (2**31 - 1, "feffffff0f")],
)
def test_zigzag_varint(value, encoded):
    assert p.encode_varint(value).hex() == encoded
    assert p.read_varint(bytes.fromhex(encoded), 0) == (value, len(encoded) // 2)
    assert p.read_varlong(bytes.fromhex(encoded), 0)[0] == value


def test_varlong_extremes():
    for value in (-(2**63), 2**63 - 1, -(2**31) - 1, 2**40):
        encoded = p.encode_varlong(value)
        assert p.read_varlong(encoded, 0) == (value, len(encoded))
    assert p.encode_varlong(-(2**63)).hex() == "ffffffffffffffffff01"
    with pytest.raises(struct.error):
        p.encode_varint(2**31)


def test_strings():
    assert _written(p.write_string, "é").hex() == "0002c3a9"
    assert _written(p.write_nullable_string, None).hex() == "ffff"
    assert _written(p.write_compact_string, "é").hex() == "03c3a9"
    assert _written(p.write_compact_nullable_string, None).hex() == "00"
    assert p.read_string(bytes.fromhex("0002c3a9"), 0) == ("é", 4)
    assert p.read_nullable_string(bytes.fromhex("ffff"), 0) == (None, 2)
    assert p.read_compact_nullable_string(b"\x00", 0) == (None, 1)
    assert p.read_compact_nullable_string(b"\x01", 0) == ("", 1)
    assert p.read_compact_nullable_string(bytes.fromhex("03c3a9"), 0) == ("é", 3)
    with pytest.raises(p.DECODE_ERRORS):
        p.read_compact_nullable_string(b"", 0)  # the length itself is missing
    with pytest.raises(p.DecodeError):
        p.read_string(bytes.fromhex("ffff"), 0)
    with pytest.raises(p.DecodeError):
        p.read_compact_string(b"\x00", 0)
    with pytest.raises(p.DecodeError):
        p.read_string(bytes.fromhex("0005abcd"), 0)
    with pytest.raises(struct.error):
        _written(p.write_string, "x" * 40_000)


def test_bytes_and_records():
    frame = memoryview(bytes.fromhex("00000003616263ffffffff"))
    assert p.read_bytes(frame, 0) == (b"abc", 7)
    assert type(p.read_bytes(frame, 0)[0]) is bytes
    records, end = p.read_nullable_records(frame, 0)
    assert isinstance(records, memoryview) and records.obj is frame.obj and end == 7
    assert p.read_nullable_records(frame, 7) == (None, 11)
    assert p.read_compact_nullable_records(memoryview(b"\x04abc"), 0)[0] == b"abc"
    assert _written(p.write_compact_bytes, b"").hex() == "01"
    assert _written(p.write_nullable_bytes, None).hex() == "ffffffff"
    with pytest.raises(p.DecodeError):
        p.read_bytes(bytes.fromhex("0000000a00"), 0)


def test_uuid_and_kafka_text_form():
    value = uuid.UUID("0123456789abcdef0fedcba987654321")
    assert _written(p.write_uuid, value) == value.bytes
    assert p.read_uuid(value.bytes, 0) == (value, 16)
    assert p.kafka_uuid_str(p.ZERO_UUID) == "AAAAAAAAAAAAAAAAAAAAAA"
    assert p.parse_kafka_uuid(p.kafka_uuid_str(value)) == value
    with pytest.raises(p.DecodeError):
        p.read_uuid(b"\x00" * 15, 0)


def test_arrays():
    read_int32 = p.INT32.unpack_from

    def item(buf, pos):
        return read_int32(buf, pos)[0], pos + 4

    def write_item(out, v):
        out.append(p.INT32.pack(v))

    assert _written(lambda o, v: p.write_array(o, v, write_item), [1, 2]).hex() == (
        "00000002" "00000001" "00000002"
    )
    assert _written(lambda o, v: p.write_compact_nullable_array(o, v, write_item), None) == b"\x00"
    assert p.read_compact_array(bytes.fromhex("0200000007"), 0, item) == ([7], 5)
    assert p.read_nullable_array(bytes.fromhex("ffffffff"), 0, item) == (None, 4)
    with pytest.raises(p.DecodeError):
        p.read_array(bytes.fromhex("ffffffff"), 0, item)
    with pytest.raises(p.DecodeError):
        p.read_array(bytes.fromhex("7fffffff00"), 0, item)


def test_tagged_fields():
    out: list = []
    p.write_tagged_fields(out, [(0, [b"ab"]), (300, [b"", b"c"])])
    data = b"".join(out)
    assert data.hex() == "02" + "0002" + "6162" + "ac0201" + "63"
    fields, end = p.read_tagged_fields(memoryview(data), 0)
    assert [(tag, bytes(v)) for tag, v in fields] == [(0, b"ab"), (300, b"c")]
    assert end == len(data)


def test_versions():
    assert 3 in Versions.parse("3+") and 2 not in Versions.parse("3+")
    assert list(Versions.parse("1-3")) == [1, 2, 3]
    assert not Versions.parse("none") and 0 not in Versions.parse("none")
    assert str(Versions.parse("7")) == "7-7"


@pytest.mark.parametrize(
    ("name", "snake"),
    [
        ("ThrottleTimeMs", "throttle_time_ms"),
        ("TopicId", "topic_id"),
        ("isKRaftController", "is_kraft_controller"),
        ("ZkMigrationReady", "zk_migration_ready"),
        ("validateOnly", "validate_only"),
    ],
)
def test_snake_case(name, snake):
    assert snake_case(name) == snake
