"""Zig-zag varints: Kafka's ByteUtils encodings and its reading rules."""

import pytest

from tidelog.records.errors import CorruptRecordError
from tidelog.records.varint import (
    INT32_MAX,
    INT32_MIN,
    INT64_MAX,
    INT64_MIN,
    decode_varint,
    decode_varlong,
    encode_varint,
    encode_varlong,
    size_of_varint,
    size_of_varlong,
)

# Expected bytes as Kafka's ByteUtils.writeVarint / writeVarlong write them.
VARINTS = [
    (0, "00"),
    (-1, "01"),
    (1, "02"),
    (63, "7e"),
    (-64, "7f"),
    (64, "8001"),
    (-65, "8101"),
    (300, "d804"),
    (INT32_MAX, "feffffff0f"),
    (INT32_MIN, "ffffffff0f"),
]
VARLONGS = [
    *VARINTS,
    (1 << 31, "8080808010"),
    (-(1 << 31) - 1, "8180808010"),
    (INT64_MAX, "feffffffffffffffff01"),
    (INT64_MIN, "ffffffffffffffffff01"),
]


@pytest.mark.parametrize(("value", "expected"), VARINTS)
def test_varint_bytes_and_round_trip(value, expected):
    encoded = encode_varint(value)
    assert encoded.hex() == expected
    assert size_of_varint(value) == len(encoded)
    assert decode_varint(encoded, 0) == (value, len(encoded))


@pytest.mark.parametrize(("value", "expected"), VARLONGS)
def test_varlong_bytes_and_round_trip(value, expected):
    encoded = encode_varlong(value)
    assert encoded.hex() == expected
    assert size_of_varlong(value) == len(encoded)
    assert decode_varlong(encoded, 0) == (value, len(encoded))


def test_round_trip_over_a_range_of_magnitudes():
    for shift in range(0, 63):
        for value in ((1 << shift) - 1, 1 << shift, -(1 << shift), -(1 << shift) - 1):
            if INT32_MIN <= value <= INT32_MAX:
                assert decode_varint(encode_varint(value), 0)[0] == value
            assert decode_varlong(encode_varlong(value), 0)[0] == value


def test_decode_at_a_position_in_a_larger_buffer():
    data = b"\xaa\xbb" + encode_varint(-300) + encode_varlong(1 << 40) + b"\xcc"
    value, position = decode_varint(memoryview(data), 2)
    assert value == -300
    value, position = decode_varlong(data, position)
    assert value == 1 << 40
    assert data[position:] == b"\xcc"


@pytest.mark.parametrize("value", [INT32_MAX + 1, INT32_MIN - 1])
def test_encode_varint_rejects_values_outside_int32(value):
    with pytest.raises(ValueError):
        encode_varint(value)


@pytest.mark.parametrize("value", [INT64_MAX + 1, INT64_MIN - 1])
def test_encode_varlong_rejects_values_outside_int64(value):
    with pytest.raises(ValueError):
        encode_varlong(value)


@pytest.mark.parametrize("data", [b"", b"\x80", b"\xff\xff", b"\xff\xff\xff\xff"])
def test_truncated_varint_is_corrupt(data):
    with pytest.raises(CorruptRecordError):
        decode_varint(data, 0)


def test_truncated_varlong_is_corrupt():
    with pytest.raises(CorruptRecordError):
        decode_varlong(b"\xff" * 9, 0)


def test_varint_longer_than_five_bytes_is_corrupt():
    with pytest.raises(CorruptRecordError):
        decode_varint(b"\xff\xff\xff\xff\xff\x01", 0)


def test_varlong_longer_than_ten_bytes_is_corrupt():
    with pytest.raises(CorruptRecordError):
        decode_varlong(b"\xff" * 10 + b"\x01", 0)


def test_excess_high_bits_are_dropped_as_java_does():
    # Values observed from Kafka's ByteUtils.readVarint / readVarlong on the same bytes.
    assert decode_varint(bytes.fromhex("ffffffff7f"), 0)[0] == INT32_MIN
    assert decode_varint(bytes.fromhex("8080808070"), 0)[0] == 0
    assert decode_varlong(bytes.fromhex("ffffffffffffffffff7f"), 0)[0] == INT64_MIN
    assert decode_varlong(bytes.fromhex("ffffffffffffffffff02"), 0)[0] == -(1 << 62)
