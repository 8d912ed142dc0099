"""Writing and reading whole batches: builder and reader."""

import contextlib
import random
import struct

import pytest

from tidelog.records import (
    BATCH_HEADER_SIZE,
    CompressionType,
    ControlRecordType,
    CorruptRecordError,
    DecompressionError,
    Entry,
    IncompleteBatchError,
    InvalidBatchLengthError,
    InvalidCrcError,
    InvalidMagicError,
    LogRecord,
    Record,
    RecordsError,
    UnsupportedCompressionError,
    build_batch,
    build_control_batch,
    crc32c,
    decode_batch,
    decode_control_key,
    decode_end_txn_marker,
    encode_batch,
    iter_decoded_batches,
    read_batch_header,
)
from tidelog.records.batch import BATCH_HEADER_STRUCT, CRC_OFFSET

CODECS = list(CompressionType)
T0 = 1_700_000_000_000


def _records():
    return [
        Record(0, 0, b"k0", b"v0"),
        Record(1, 10, None, b"tombstone? no, null key"),
        Record(2, -3, b"k2", None, (("trace", b"abc"), ("empty", None))),
        Record(3, 7, b"", b"", (("é", b""),)),
    ]


def _with_header(batch: bytes, section: bytes | None = None, **fields) -> bytes:
    """``batch`` with header fields replaced (and a new records section), CRC recomputed."""
    header = read_batch_header(batch)._asdict()
    header.pop("position")
    body = batch[BATCH_HEADER_SIZE:] if section is None else section
    header["batch_length"] = BATCH_HEADER_SIZE - 12 + len(body)
    header.update(fields)
    out = bytearray(BATCH_HEADER_STRUCT.pack(*header.values()) + body)
    struct.pack_into(">I", out, CRC_OFFSET, crc32c(bytes(out[21:])))
    return bytes(out)


@pytest.mark.parametrize("codec", CODECS)
def test_round_trip_every_codec(codec):
    batch = encode_batch(
        _records(),
        base_offset=1000,
        base_timestamp=T0,
        compression=codec,
        producer_id=77,
        producer_epoch=3,
        base_sequence=5,
        partition_leader_epoch=9,
        is_transactional=True,
    )
    decoded = decode_batch(batch)
    header = decoded.header
    assert header.magic == 2
    assert header.compression == codec
    assert decoded.compression is codec
    assert header.is_transactional and not header.is_control
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (77, 3, 5)
    assert header.partition_leader_epoch == 9
    assert header.records_count == 4 and header.last_offset_delta == 3
    assert header.base_timestamp == T0 and header.max_timestamp == T0 + 10
    assert header.size == len(batch)
    assert decoded.records == [
        LogRecord(1000, T0, b"k0", b"v0"),
        LogRecord(1001, T0 + 10, None, b"tombstone? no, null key"),
        LogRecord(1002, T0 - 3, b"k2", None, (("trace", b"abc"), ("empty", None))),
        LogRecord(1003, T0 + 7, b"", b"", (("é", b""),)),
    ]


def test_attribute_flags():
    batch = encode_batch(
        _records(),
        base_timestamp=T0,
        compression=CompressionType.LZ4,
        timestamp_type=1,
        is_transactional=True,
        is_control=True,
        delete_horizon=True,
    )
    assert read_batch_header(batch).attributes == 0x03 | 0x08 | 0x10 | 0x20 | 0x40


def test_explicit_max_timestamp_and_last_offset_delta():
    batch = encode_batch(
        _records()[:1], base_timestamp=T0, max_timestamp=T0 + 99, last_offset_delta=4
    )
    header = read_batch_header(batch)
    assert header.max_timestamp == T0 + 99
    assert header.last_offset_delta == 4


def test_empty_batch_needs_last_offset_delta():
    with pytest.raises(ValueError):
        encode_batch([], base_timestamp=T0)
    batch = encode_batch([], base_timestamp=T0, last_offset_delta=9)
    decoded = decode_batch(batch)
    assert decoded.records == []
    assert decoded.header.max_timestamp == T0
    assert decoded.header.last_offset_delta == 9


@pytest.mark.parametrize(
    "fields",
    [{"producer_epoch": 1 << 15}, {"base_offset": 1 << 63}, {"timestamp_type": 2}],
)
def test_out_of_range_header_fields_raise_value_error(fields):
    with pytest.raises(ValueError):
        encode_batch(_records(), base_timestamp=T0, **fields)


def test_log_append_time_gives_every_record_max_timestamp():
    batch = encode_batch(_records(), base_timestamp=T0, timestamp_type=1, max_timestamp=T0 + 5000)
    decoded = decode_batch(batch)
    assert decoded.timestamp_type == 1
    assert [record.timestamp for record in decoded.records] == [T0 + 5000] * 4


def test_build_batch_entry_forms():
    class Message:
        def __init__(self, key, value, timestamp):
            self.key, self.value, self.timestamp = key, value, timestamp

    batch = build_batch(
        [
            (b"a", b"1"),
            ("b", "2", {"h": "x"}),
            ("c", None, [("h", None)], T0 + 50),
            Entry(None, b"4", timestamp=T0 - 1),
            Message(b"e", b"5", T0 + 2),
            LogRecord(99, T0 + 3, b"f", b"6", (("z", b"z"),)),
        ],
        base_offset=10,
        timestamp=T0,
        compression=CompressionType.GZIP,
        producer_id=5,
        producer_epoch=0,
        base_sequence=0,
    )
    decoded = decode_batch(batch)
    assert decoded.header.base_timestamp == T0
    assert decoded.header.producer_id == 5
    assert decoded.records == [
        LogRecord(10, T0, b"a", b"1"),
        LogRecord(11, T0, b"b", b"2", (("h", b"x"),)),
        LogRecord(12, T0 + 50, b"c", None, (("h", None),)),
        LogRecord(13, T0 - 1, None, b"4"),
        LogRecord(14, T0 + 2, b"e", b"5"),
        LogRecord(15, T0 + 3, b"f", b"6", (("z", b"z"),)),
    ]


def test_build_batch_base_timestamp_is_first_record():
    batch = build_batch([Entry(b"a", b"1", timestamp=T0 + 9), (b"b", b"2")], timestamp=T0)
    header = read_batch_header(batch)
    assert header.base_timestamp == T0 + 9
    assert header.max_timestamp == T0 + 9


def test_build_batch_needs_entries():
    with pytest.raises(ValueError):
        build_batch([])


@pytest.mark.parametrize("marker", [ControlRecordType.COMMIT, ControlRecordType.ABORT])
def test_control_batch(marker):
    batch = build_control_batch(
        marker, producer_id=4, producer_epoch=2, coordinator_epoch=11, base_offset=50, timestamp=T0
    )
    decoded = decode_batch(batch)
    assert decoded.is_control and decoded.is_transactional
    assert decoded.header.base_sequence == -1
    (record,) = decoded.records
    assert record.offset == 50
    assert record.key == struct.pack(">hh", 0, marker)
    assert record.value == struct.pack(">hi", 0, 11)
    assert decode_control_key(record.key) is marker
    marker_value = decode_end_txn_marker(decode_control_key(record.key), record.value)
    assert marker_value.control_type is marker
    assert marker_value.coordinator_epoch == 11


def test_control_key_errors():
    with pytest.raises(CorruptRecordError):
        decode_control_key(b"\x00")
    with pytest.raises(CorruptRecordError):
        decode_control_key(None)
    assert decode_control_key(struct.pack(">hh", 0, 99)) == 99
    with pytest.raises(CorruptRecordError):
        decode_end_txn_marker(ControlRecordType.COMMIT, b"\x00\x00")
    with pytest.raises(ValueError):
        build_control_batch(ControlRecordType.LEADER_CHANGE, producer_id=1, producer_epoch=1)


def test_decode_at_position_and_iterate():
    batches = [
        build_batch([(b"a", b"1"), (b"b", b"2")], base_offset=0, timestamp=T0),
        build_batch([(b"c", b"3")], base_offset=2, timestamp=T0, compression=CompressionType.ZSTD),
        build_batch(
            [(b"d", b"4")], base_offset=3, timestamp=T0, compression=CompressionType.SNAPPY
        ),
    ]
    data = b"".join(batches)
    second = decode_batch(data, len(batches[0]))
    assert second.header.position == len(batches[0])
    assert [r.key for r in second.records] == [b"c"]
    decoded = list(iter_decoded_batches(memoryview(data)))
    assert [r.offset for batch in decoded for r in batch.records] == [0, 1, 2, 3]


def test_iterate_with_partial_tail():
    batch = build_batch([(b"a", b"1")], timestamp=T0)
    data = batch + batch[:30]
    with pytest.raises(IncompleteBatchError):
        list(iter_decoded_batches(data))
    assert len(list(iter_decoded_batches(data, allow_partial=True))) == 1


def test_bad_crc():
    batch = bytearray(build_batch([(b"a", b"1")], timestamp=T0))
    batch[-2] ^= 0x01  # the value b"1" becomes b"0"
    with pytest.raises(InvalidCrcError) as info:
        decode_batch(batch)
    assert info.value.error_code == 2
    assert decode_batch(batch, verify_crc=False).records[0].value == b"0"


def test_wrong_magic():
    batch = bytearray(build_batch([(b"a", b"1")], timestamp=T0))
    batch[16] = 1
    with pytest.raises(InvalidMagicError):
        decode_batch(batch)


def test_batch_length_below_header_size():
    batch = _with_header(build_batch([(b"a", b"1")], timestamp=T0), batch_length=20)
    with pytest.raises(InvalidBatchLengthError):
        decode_batch(batch)


def test_unknown_codec_in_attributes():
    batch = _with_header(build_batch([(b"a", b"1")], timestamp=T0), attributes=6)
    with pytest.raises(UnsupportedCompressionError) as info:
        decode_batch(batch)
    assert info.value.error_code == 76


def test_record_count_mismatch():
    batch = build_batch([(b"a", b"1"), (b"b", b"2")], timestamp=T0)
    for count in (1, 3, -1):
        with pytest.raises(CorruptRecordError):
            decode_batch(_with_header(batch, records_count=count))


def test_bad_compressed_section():
    batch = build_batch([(b"a", b"1")], timestamp=T0, compression=CompressionType.ZSTD)
    with pytest.raises(DecompressionError) as info:
        decode_batch(_with_header(batch, section=b"not zstd at all"))
    assert info.value.position == 0


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation_of_a_batch_is_corrupt(codec):
    batch = encode_batch(_records(), base_timestamp=T0, compression=codec)
    for cut in range(len(batch)):
        with pytest.raises(CorruptRecordError):
            decode_batch(batch[:cut])


@pytest.mark.parametrize("codec", CODECS)
def test_every_truncation_of_the_records_section_with_a_valid_crc_is_corrupt(codec):
    # The framing and CRC agree with the cut: only the record parsing can notice.
    batch = encode_batch(_records(), base_timestamp=T0, compression=codec)
    section = batch[BATCH_HEADER_SIZE:]
    for cut in range(len(section)):
        with pytest.raises(CorruptRecordError):
            decode_batch(_with_header(batch, section=section[:cut]))


@pytest.mark.parametrize("codec", CODECS)
def test_random_damage_never_leaks_other_exceptions(codec):
    rng = random.Random(codec)
    records = [Record(i, i, b"k%d" % i, b"v" * i, (("h", b"x"),)) for i in range(8)]
    section = encode_batch(records, base_timestamp=T0, compression=codec)[BATCH_HEADER_SIZE:]
    batch = encode_batch(records, base_timestamp=T0, compression=codec)
    for _ in range(300):
        damaged = bytearray(section)
        for _ in range(rng.randrange(1, 4)):
            damaged[rng.randrange(len(damaged))] = rng.randrange(256)
        with contextlib.suppress(RecordsError):
            decode_batch(_with_header(batch, section=bytes(damaged)))
