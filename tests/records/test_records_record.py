"""One record and the records section."""

import pytest

from tidelog.records.errors import CorruptRecordError
from tidelog.records.record import Record, decode_records, encode_record
from tidelog.records.varint import encode_varint


def test_simple_record_bytes():
    # length 8 | attributes 0 | timestampDelta 0 | offsetDelta 0 | key "k" | value "v" | 0 headers
    assert encode_record(Record(0, 0, b"k", b"v")).hex() == "10" + "00" "00" "00" "026b" "0276" "00"


def test_null_key_and_value_are_minus_one():
    assert encode_record(Record(1, -1, None, None)).hex() == "0c" + "00" "01" "02" "01" "01" "00"


def test_empty_key_is_not_null():
    (record,) = decode_records(encode_record(Record(0, 0, b"", None)), 1)
    assert record.key == b""
    assert record.value is None


def test_headers_layout():
    encoded = encode_record(Record(0, 0, None, b"", (("h", b"x"), ("n", None))))
    assert encoded.hex() == "1a" + "00" "00" "00" "01" "00" "04" "0268" "0278" "026e" "01"


def test_round_trip_with_everything():
    records = [
        Record(0, 0, b"key", b"value"),
        Record(1, -5, None, b"v", (("h1", b"a"), ("h2", None), ("é日本", b""))),
        Record(2, 1 << 40, b"k", None, (), -3),
        Record(3, 7, b"\x00" * 300, b"\xff" * 70000, tuple((f"h{i}", b"v") for i in range(100))),
    ]
    data = b"".join(encode_record(record) for record in records)
    assert decode_records(data, len(records)) == records
    assert decode_records(memoryview(data), len(records)) == records
    assert decode_records(bytearray(data), len(records)) == records


def test_header_key_that_is_not_utf8_round_trips_byte_exact():
    raw = encode_record(Record(0, 0, None, None, (("ok", b"1"),))).replace(b"ok", b"\xff\xfe")
    (record,) = decode_records(raw, 1)
    assert encode_record(record) == raw


def test_null_header_key_is_rejected_on_encode():
    with pytest.raises(ValueError):
        encode_record(Record(0, 0, None, None, ((None, b"x"),)))


def test_attributes_out_of_range_is_rejected_on_encode():
    with pytest.raises(ValueError):
        encode_record(Record(0, 0, None, None, (), 300))


def test_fewer_records_than_declared():
    data = encode_record(Record(0, 0, b"k", b"v"))
    with pytest.raises(CorruptRecordError, match="declares 2"):
        decode_records(data, 2)


def test_more_records_than_declared():
    data = encode_record(Record(0, 0, b"k", b"v")) * 2
    with pytest.raises(CorruptRecordError, match="left after"):
        decode_records(data, 1)


def _body(*parts: bytes) -> bytes:
    body = b"".join(parts)
    return encode_varint(len(body)) + body


def test_record_length_overrunning_the_section():
    data = encode_record(Record(0, 0, b"k", b"v"))
    with pytest.raises(CorruptRecordError):
        decode_records(b"\x7e" + data[1:], 1)


def test_key_length_overrunning_the_record():
    with pytest.raises(CorruptRecordError, match="key"):
        decode_records(_body(b"\x00\x00\x00", encode_varint(50), b"k", b"\x01\x00"), 1)


def test_fields_shorter_than_declared_record_length():
    data = _body(b"\x00\x00\x00\x01\x01\x00", b"\x00\x00")
    with pytest.raises(CorruptRecordError, match="declares"):
        decode_records(data, 1)


@pytest.mark.parametrize("length", [-2, -100])
def test_invalid_negative_key_length(length):
    with pytest.raises(CorruptRecordError, match="key length"):
        decode_records(_body(b"\x00\x00\x00", encode_varint(length), b"\x01\x00"), 1)


def test_negative_header_count():
    with pytest.raises(CorruptRecordError, match="header count"):
        decode_records(_body(b"\x00\x00\x00\x01\x01", encode_varint(-1)), 1)


def test_huge_header_count_fails_fast():
    with pytest.raises(CorruptRecordError, match="header count"):
        decode_records(_body(b"\x00\x00\x00\x01\x01", encode_varint(2**31 - 1)), 1)


def test_null_header_key_is_corrupt_on_decode():
    with pytest.raises(CorruptRecordError, match="header key"):
        decode_records(_body(b"\x00\x00\x00\x01\x01\x02", encode_varint(-1), b"\x01"), 1)


def test_negative_record_count():
    with pytest.raises(CorruptRecordError):
        decode_records(b"", -1)


def test_every_truncation_of_a_section_is_corrupt():
    records = [Record(i, i, b"key%d" % i, b"value" * i, (("h", b"v"),)) for i in range(5)]
    data = b"".join(encode_record(record) for record in records)
    for cut in range(len(data)):
        with pytest.raises(CorruptRecordError):
            decode_records(data[:cut], len(records))
