"""Batches written by Apache Kafka 3.9.1's own client code (MemoryRecordsBuilder, and
MemoryRecords.withEndTransactionMarker), captured once as hex.

The same three records were built with every codec by Kafka, with producerId 1000,
producerEpoch 2, baseSequence 10, partitionLeaderEpoch 5 and baseOffset 0. The Java
client's compressed output is what tidelog must read: snappy-java's xerial framing,
zstd-jni's streamed frames without a content size, Kafka's own LZ4 frames, and gzip.
"""

import pytest
import zstandard

from tidelog.records import (
    BATCH_HEADER_SIZE,
    CompressionType,
    ControlRecordType,
    Entry,
    LogRecord,
    build_batch,
    build_control_batch,
    decode_batch,
    is_crc_valid,
    read_batch_header,
    validate_producer_records,
)
from tidelog.records.compression import XERIAL_SNAPPY_MAGIC

T0 = 1_700_000_000_000

ENTRIES = [
    Entry(b"k1", b"hello hello hello hello", (("h1", b"v1"), ("h2", None)), T0),
    Entry(None, b"v2", (), T0 + 5),
    Entry(b"k3", None, (("é", b""),), T0 - 3),
]
EXPECTED = [LogRecord(i, e.timestamp, e.key, e.value, e.headers) for i, e in enumerate(ENTRIES)]
PRODUCER = {"producer_id": 1000, "producer_epoch": 2, "base_sequence": 10}

_HEADER = "02000000000000000003e800020000000a00000003"
_RECORDS = (
    "52000000046b312e68656c6c6f2068656c6c6f2068656c6c6f2068656c6c6f040468310476310468320110"
    "000a02010476320018000504046b33010204c3a900"
)
KAFKA = {
    "none": "00000000000000000000007100000005" + "02ede8fca6000000000002"
    "0000018bcfe568000000018bcfe5680500000000000003e800020000000a00000003" + _RECORDS,
    "gzip": "00000000000000000000007600000005029f8884a70001000000020000018bcfe568000000018bcfe568"
    "0500000000000003e800020000000a000000031f8b08000000000000ff0b62606060c936d4cb48cdc9c957c0"
    "205958320c59ca0c59328c180518b8981859ca8c182418585958b28d1999580eaf6400005380c2d540000000",
    "snappy": "00000000000000000000007a0000000502cdb6c6da0002000000020000018bcfe568000000018bcfe5"
    "680500000000000003e800020000000a0000000382534e4150505900000000010000000100000035403452"
    "000000046b312e68656c6c6f2042060080040468310476310468320110000a02010476320018000504046b"
    "33010204c3a900",
    "lz4": "00000000000000000000007400000005021d14caa50003000000020000018bcfe568000000018bcfe568"
    "0500000000000003e800020000000a0000000304224d1860408234000000ed52000000046b312e68656c6c6f"
    "200600f012040468310476310468320110000a02010476320018000504046b33010204c3a90000000000",
    "zstd": "000000000000000000000073000000050280b9dc500004000000020000018bcfe568000000018bcfe568"
    "0500000000000003e800020000000a0000000328b52ffd0058b40100f40252000000046b312e68656c6c6f20"
    "040468310476310468320110000a02010476320018000504046b33010204c3a9000100998b12010000",
}
# The same records, TimestampType.LOG_APPEND_TIME with append time T0 + 999, no producer.
KAFKA_LOG_APPEND_TIME = (
    "000000000000000000000071ffffffff0291fe499b0008000000020000018bcfe568000000018bcfe56be7"
    "ffffffffffffffffffffffffffff00000003" + _RECORDS
)
# A COMMIT marker, coordinator epoch 17, timestamp T0, leader epoch 5.
KAFKA_COMMIT = (
    "0000000000000000000000420000000502d69628770030000000000000018bcfe568000000018bcfe568"
    "0000000000000003e80002ffffffff000000012000000008000000010c00000000001100"
)


def test_uncompressed_batch_is_byte_identical_to_kafka():
    ours = build_batch(ENTRIES, partition_leader_epoch=5, **PRODUCER)
    assert ours.hex() == KAFKA["none"]


def test_log_append_time_batch_is_byte_identical_to_kafka():
    ours = build_batch(ENTRIES, timestamp_type=1, max_timestamp=T0 + 999)
    assert ours.hex() == KAFKA_LOG_APPEND_TIME
    assert [r.timestamp for r in decode_batch(ours).records] == [T0 + 999] * 3


def test_commit_marker_is_byte_identical_to_kafka():
    ours = build_control_batch(
        ControlRecordType.COMMIT,
        producer_id=1000,
        producer_epoch=2,
        coordinator_epoch=17,
        timestamp=T0,
        partition_leader_epoch=5,
    )
    assert ours.hex() == KAFKA_COMMIT


@pytest.mark.parametrize("codec", list(KAFKA))
def test_read_kafka_batches(codec):
    data = bytes.fromhex(KAFKA[codec])
    header = read_batch_header(data)
    assert is_crc_valid(data, header)
    decoded = decode_batch(data)
    assert decoded.compression is CompressionType.from_name(codec)
    assert decoded.records == EXPECTED
    assert validate_producer_records(data, require_keys=False).record_count == 3


def test_kafka_snappy_is_xerial_framed_and_zstd_has_no_content_size():
    snappy = bytes.fromhex(KAFKA["snappy"])
    assert snappy[BATCH_HEADER_SIZE:].startswith(XERIAL_SNAPPY_MAGIC)
    zstd = bytes.fromhex(KAFKA["zstd"])
    frame = zstandard.get_frame_parameters(zstd[BATCH_HEADER_SIZE:])
    assert frame.content_size == zstandard.CONTENTSIZE_UNKNOWN


@pytest.mark.parametrize("codec", list(CompressionType))
def test_our_compressed_batches_decode_to_the_same_records(codec):
    ours = build_batch(ENTRIES, compression=codec, partition_leader_epoch=5, **PRODUCER)
    assert decode_batch(ours).records == EXPECTED
    # Header fields other than the CRC and length match Kafka's for that codec.
    kafka = read_batch_header(bytes.fromhex(KAFKA[codec.name]))
    assert read_batch_header(ours)._replace(crc=0, batch_length=0) == kafka._replace(
        crc=0, batch_length=0
    )
