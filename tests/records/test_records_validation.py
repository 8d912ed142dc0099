"""The broker's checks on a producer's batches."""

import random
import struct

import pytest

from tidelog.records import (
    BATCH_HEADER_SIZE,
    CompressionType,
    ControlBatchFromProducerError,
    ControlRecordType,
    CorruptRecordError,
    EmptyBatchError,
    EmptyRecordsError,
    IncompleteBatchError,
    InvalidBaseOffsetError,
    InvalidBatchLengthError,
    InvalidCrcError,
    InvalidMagicError,
    InvalidRecordCountError,
    InvalidSequenceError,
    NullKeyOnCompactedTopicError,
    Record,
    RecordTooLargeError,
    UnsupportedCompressionError,
    build_batch,
    build_control_batch,
    crc32c,
    encode_batch,
    read_batch_header,
    validate_producer_records,
)
from tidelog.records.batch import BATCH_HEADER_STRUCT, CRC_OFFSET

T0 = 1_700_000_000_000


def _batch(n=3, *, timestamp=T0, **kwargs):
    return build_batch([(b"k%d" % i, b"v%d" % i) for i in range(n)], timestamp=timestamp, **kwargs)


def _with_header(batch: bytes, *, fix_crc: bool = True, **fields) -> bytes:
    header = read_batch_header(batch)._asdict()
    header.pop("position")
    header.update(fields)
    out = bytearray(BATCH_HEADER_STRUCT.pack(*header.values()) + batch[BATCH_HEADER_SIZE:])
    if fix_crc:
        struct.pack_into(">I", out, CRC_OFFSET, crc32c(bytes(out[21:])))
    return bytes(out)


def _fails(data, error, code, position=0, **kwargs):
    with pytest.raises(error) as info:
        validate_producer_records(data, **kwargs)
    assert info.value.error_code == code
    assert info.value.position == position
    assert f"position {position}" in str(info.value)
    return info.value


def test_valid_single_batch():
    batch = _batch(3, producer_id=8, producer_epoch=1, base_sequence=20)
    result = validate_producer_records(batch)
    assert result.record_count == 3
    assert result.size_in_bytes == len(batch)
    assert result.batch_count == 1
    assert result.headers == (read_batch_header(batch),)
    assert result.batches == result.headers
    assert result.max_timestamp == T0
    assert result.offset_of_max_timestamp == 2
    assert result.max_timestamp_batch == 0
    assert (result.producer_id, result.producer_epoch) == (8, 1)
    assert (result.first_sequence, result.last_sequence) == (20, 22)
    assert not result.is_transactional


def test_several_batches_and_max_timestamp_offset():
    batches = [_batch(2, timestamp=T0), _batch(4, timestamp=T0 + 10), _batch(3, timestamp=T0 + 10)]
    data = b"".join(batches)
    result = validate_producer_records(memoryview(data))
    assert result.record_count == 9
    assert [h.position for h in result.headers] == [
        0,
        len(batches[0]),
        len(batches[0] + batches[1]),
    ]
    assert result.max_timestamp == T0 + 10
    # The first batch holding the max: 2 earlier records + lastOffsetDelta 3.
    assert result.offset_of_max_timestamp == 5
    assert result.max_timestamp_batch == 1


def test_no_timestamps_at_all():
    result = validate_producer_records(_batch(2, timestamp=-1))
    assert result.max_timestamp == -1
    assert result.offset_of_max_timestamp == -1


def test_last_sequence_wraps_like_kafka():
    result = validate_producer_records(
        _batch(3, producer_id=1, producer_epoch=0, base_sequence=2**31 - 2)
    )
    assert result.last_sequence == 0


def test_validation_modifies_nothing():
    data = bytearray(_batch(3, compression=CompressionType.GZIP))
    before = bytes(data)
    validate_producer_records(data, require_keys=True)
    assert data == before
    data.extend(b"x")  # no view left behind: the buffer can still be resized


def test_empty():
    with pytest.raises(EmptyRecordsError) as info:
        validate_producer_records(b"")
    assert info.value.error_code == 87


@pytest.mark.parametrize("extra", [1, 16, 60, 61, 70])
def test_trailing_partial_batch(extra):
    batch = _batch()
    _fails(batch + batch[:extra], IncompleteBatchError, 2, position=len(batch))


def test_every_truncation_is_rejected_as_corrupt():
    batch = _batch()
    for cut in range(1, len(batch)):
        with pytest.raises(CorruptRecordError):
            validate_producer_records(batch[:cut])


def test_batch_length_below_header_size():
    batch = _batch()
    _fails(batch + _with_header(batch, batch_length=10), InvalidBatchLengthError, 2, len(batch))


def test_magic_not_2():
    _fails(_with_header(_batch(), magic=1), InvalidMagicError, 87)


def test_legacy_message_set_is_reported_as_wrong_magic():
    # A v1 message: offset, size 22, crc, magic 1, attributes, timestamp, null key, value "x".
    message = struct.pack(">qiIbbqii", 0, 27, 0, 1, 0, T0, -1, 1) + b"x"
    _fails(message, InvalidMagicError, 87)


def test_base_offset_not_zero():
    _fails(_with_header(_batch(), base_offset=5), InvalidBaseOffsetError, 87)


def test_batch_too_large():
    batch = _batch()
    _fails(batch, RecordTooLargeError, 10, max_message_bytes=len(batch) - 1)
    assert validate_producer_records(batch, max_message_bytes=len(batch)).record_count == 3


def test_default_max_message_bytes():
    big = build_batch([(b"k", b"\x00" * 1_048_600)], timestamp=T0)
    _fails(big, RecordTooLargeError, 10)


def test_bad_crc():
    _fails(_with_header(_batch(), fix_crc=False, crc=1), InvalidCrcError, 2)


def test_bad_crc_in_second_batch_names_its_position():
    first = _batch()
    second = bytearray(_batch())
    second[-2] ^= 1
    _fails(first + bytes(second), InvalidCrcError, 2, position=len(first))


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec(codec_id):
    _fails(_with_header(_batch(), attributes=codec_id), UnsupportedCompressionError, 76)


def test_zero_records():
    empty = encode_batch([], base_timestamp=T0, last_offset_delta=-1)
    _fails(empty, EmptyBatchError, 87)


@pytest.mark.parametrize(("last_offset_delta", "count"), [(5, 3), (1, 3), (2, -1)])
def test_count_inconsistent_with_last_offset_delta(last_offset_delta, count):
    batch = _with_header(_batch(3), last_offset_delta=last_offset_delta, records_count=count)
    _fails(batch, InvalidRecordCountError, 87)


def test_control_batch_from_producer():
    marker = build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0)
    _fails(marker, ControlBatchFromProducerError, 87)


def test_producer_id_without_sequence():
    _fails(_batch(producer_id=3, producer_epoch=0, base_sequence=-1), InvalidSequenceError, 87)


@pytest.mark.parametrize("codec", list(CompressionType))
def test_null_key_on_compacted_topic(codec):
    batch = encode_batch(
        [Record(0, 0, b"k", b"v"), Record(1, 0, None, b"v")], base_timestamp=T0, compression=codec
    )
    assert validate_producer_records(batch).record_count == 2
    error = _fails(batch, NullKeyOnCompactedTopicError, 87, require_keys=True)
    assert "record 1" in str(error)
    keyed = encode_batch([Record(0, 0, b"k", None)], base_timestamp=T0, compression=codec)
    assert validate_producer_records(keyed, require_keys=True).record_count == 1


def test_require_keys_reports_corrupt_records():
    # CRC and counts agree, but the records section does not parse.
    batch = _batch(1)
    section = b"\x7f\x00"
    damaged = _with_header(
        batch[:BATCH_HEADER_SIZE] + section, batch_length=BATCH_HEADER_SIZE - 12 + len(section)
    )
    assert validate_producer_records(damaged).record_count == 1
    _fails(damaged, CorruptRecordError, 2, require_keys=True)


@pytest.mark.parametrize("seed", range(30))
def test_null_key_scan_agrees_with_full_decoding(seed):
    """The lean scan of compacted-topic produce finds exactly the first null key that
    decoding every record finds, whatever the record shapes and codec."""
    rng = random.Random(seed)
    entries = []
    for _ in range(rng.randrange(1, 60)):
        key = None if rng.random() < 0.05 else rng.randbytes(rng.choice([0, 1, 63, 64, 200]))
        value = None if rng.random() < 0.2 else rng.randbytes(rng.choice([0, 5, 130, 20000]))
        headers = [(f"h{i}", rng.randbytes(rng.randrange(3))) for i in range(rng.randrange(3))]
        entries.append((key, value, headers, rng.randrange(-(2**40), 2**40)))
    codec = rng.choice(list(CompressionType))
    batch = build_batch(entries, compression=codec)
    first_null = next((i for i, e in enumerate(entries) if e[0] is None), None)
    if first_null is None:
        assert validate_producer_records(batch, require_keys=True).record_count == len(entries)
    else:
        with pytest.raises(NullKeyOnCompactedTopicError, match=f"record {first_null}\\)"):
            validate_producer_records(batch, require_keys=True)
