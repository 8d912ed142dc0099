import os
import threading
import time

import pytest

from storage.helpers import batch
from tidelog.records import (
    CompressionType,
    CorruptRecordError,
    InvalidCrcError,
    NullKeyOnCompactedTopicError,
    RecordsError,
    build_batch,
    decode_batch,
    is_crc_valid,
    iter_batch_headers,
    iter_decoded_batches,
)
from tidelog.storage.config import LogConfig, LogConfigError
from tidelog.storage.errors import OffsetOutOfRangeError
from tidelog.storage.log import Log


def read_all(log: Log, start: int = 0, max_offset: int | None = None):
    records, offset = [], start
    while True:
        found = log.read(offset, 1 << 20, max_offset)
        if found is None:
            return records
        for decoded in iter_decoded_batches(found.records.to_bytes()):
            records.extend(r for r in decoded.records if r.offset >= offset)
        offset = records[-1].offset + 1


def test_append_rewrites_only_base_offset_and_epoch(tmp_path):
    log = Log.open(tmp_path / "t-0")
    first = batch(3)
    log.append_as_leader(first, leader_epoch=7)
    produced = build_batch([("a", "1"), ("b", "2")], compression=CompressionType.LZ4)
    info = log.append_as_leader(produced, leader_epoch=7)
    assert (info.first_offset, info.last_offset, info.record_count) == (3, 4, 2)
    stored = log.read(3, 1 << 20).records.to_bytes()
    # Everything but baseOffset (bytes 0-8) and partitionLeaderEpoch (12-16) is untouched.
    assert stored[8:12] == produced[8:12] and stored[16:] == produced[16:]
    header = next(iter_batch_headers(stored))
    assert (header.base_offset, header.partition_leader_epoch) == (3, 7)
    assert is_crc_valid(stored, header)
    assert [r.offset for r in decode_batch(stored).records] == [3, 4]
    assert log.log_end_offset == 5
    assert log.segments[0].log_path.name == "00000000000000000000.log"


def test_invalid_batch_is_rejected_and_nothing_is_written(tmp_path):
    log = Log.open(tmp_path / "t-0")
    log.append_as_leader(batch(2))
    size = log.active_segment.log_path.stat().st_size
    good = batch(2, start=2)
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    with pytest.raises(InvalidCrcError) as caught:
        log.append_as_leader(good + bytes(corrupt))  # one good batch then a bad one
    assert caught.value.error_code == 2  # CORRUPT_MESSAGE
    with pytest.raises(CorruptRecordError):
        log.append_as_leader(good[:-5])
    assert log.log_end_offset == 2
    assert log.active_segment.log_path.stat().st_size == size


def test_compacted_topic_rejects_null_keys(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(cleanup_policy=("compact",)))
    with pytest.raises(NullKeyOnCompactedTopicError) as caught:
        log.append_as_leader(build_batch([("k", "v"), (None, "v")]))
    assert isinstance(caught.value, RecordsError) and caught.value.error_code == 87
    assert log.log_end_offset == 0 and log.active_segment.size == 0


def test_roll_on_segment_bytes_and_index_interval(tmp_path):
    config = LogConfig(segment_bytes=1024, index_interval_bytes=200)
    log = Log.open(tmp_path / "t-0", config)
    for i in range(40):
        log.append_as_leader(batch(2, start=2 * i, size=40))
    assert len(log.segments) > 3
    for segment, following in zip(log.segments, log.segments[1:], strict=False):
        assert segment.size <= 1024
        assert following.base_offset == segment.read_next_offset()
        assert segment.index_path.stat().st_size == segment.offset_index.entries * 8  # trimmed
        assert segment.offset_index.entries >= 2
        for slot in range(segment.offset_index.entries):
            entry = segment.offset_index.entry(slot)
            at = next(segment.log.batch_headers(entry.position))
            assert at.last_offset == entry.offset  # entries sit on batch boundaries
    assert [r.offset for r in read_all(log)] == list(range(80))


def test_roll_on_segment_ms(tmp_path, clock):
    log = Log.open(tmp_path / "t-0", LogConfig(segment_ms=60_000), clock=clock)
    log.append_as_leader(batch(1, timestamp=1_000))
    log.append_as_leader(batch(1, timestamp=30_000))
    assert len(log.segments) == 1
    log.append_as_leader(batch(1, timestamp=62_000))  # first batch's timestamp + segment.ms
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_when_index_is_full(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(segment_index_bytes=4 * 12, index_interval_bytes=1))
    for i in range(12):
        log.append_as_leader(batch(1, start=i))
    assert len(log.segments) > 1
    # 48 bytes hold 6 offset entries and 4 time entries (one kept for the roll).
    assert all(s.offset_index.entries <= 6 and s.time_index.entries <= 4 for s in log.segments)
    assert [r.offset for r in read_all(log)] == list(range(12))


def test_read_returns_whole_batches(tmp_path):
    log = Log.open(tmp_path / "t-0")
    for i in range(10):
        log.append_as_leader(batch(5, start=5 * i, size=100))
    sizes = [h.size for h in log.segments[0].log.batch_headers()]
    found = log.read(12, 1)  # smaller than a batch: still the first whole batch
    headers = list(iter_batch_headers(found.records.to_bytes()))
    assert [(h.base_offset, h.last_offset) for h in headers] == [(10, 14)]
    found = log.read(12, sum(sizes[2:5]) - 1)  # cut inside the third batch: two batches
    assert found.records.size == sizes[2] + sizes[3]
    found = log.read(12, sum(sizes[2:5]))
    assert found.records.size == sum(sizes[2:5])
    assert log.read(50, 100) is None  # at the log end offset: nothing yet
    with pytest.raises(OffsetOutOfRangeError):
        log.read(51, 100)


def test_read_stops_at_max_offset(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=600))
    for i in range(10):
        log.append_as_leader(batch(3, start=3 * i, size=50))
    assert len(log.segments) > 2
    records = read_all(log, 0, max_offset=12)
    assert [r.offset for r in records] == list(range(12))
    assert log.read(12, 1 << 20, max_offset=12) is None


def test_offset_for_timestamp_with_out_of_order_timestamps(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=500, index_interval_bytes=1))
    timestamps = [100, 300, 200, 250, 500, 400, 450, 900, 600]
    for i, ts in enumerate(timestamps):
        log.append_as_leader(build_batch([(f"k{i}", "v" * 40)], timestamp=ts))
    assert len(log.segments) > 2
    for target in (0, 100, 150, 200, 250, 260, 301, 450, 501, 650, 900):
        expected = next((i, ts) for i, ts in enumerate(timestamps) if ts >= target)
        found = log.offset_for_timestamp(target)
        assert (found.offset, found.timestamp) == expected, target
    assert log.offset_for_timestamp(901) is None


def test_truncate_to_removes_later_batches_and_segments(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=500))
    for i in range(20):
        log.append_as_leader(batch(2, start=2 * i, size=40))
    assert len(log.segments) > 3
    assert log.truncate_to(17)  # inside batch [16, 17]: whole batch goes
    assert log.log_end_offset == 16
    assert [r.offset for r in read_all(log)] == list(range(16))
    info = log.append_as_leader(batch(1))
    assert info.first_offset == 16
    assert not log.truncate_to(100)
    log.truncate_to(0)
    assert log.log_end_offset == 0 and log.read(0, 100) is None


def test_follower_append_keeps_offsets(tmp_path):
    leader = Log.open(tmp_path / "t-0")
    follower = Log.open(tmp_path / "copy" / "t-0")
    for i in range(5):
        leader.append_as_leader(batch(3, start=3 * i), leader_epoch=2)
    follower.append_as_follower(leader.read(0, 1 << 20).records.to_bytes())
    assert follower.log_end_offset == 15
    assert read_all(follower) == read_all(leader)
    with pytest.raises(OffsetOutOfRangeError):
        follower.append_as_follower(leader.read(3, 1 << 20).records.to_bytes())


def test_log_append_time(tmp_path, clock):
    log = Log.open(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"), clock=clock)
    info = log.append_as_leader(batch(3, timestamp=5))
    assert info.log_append_time == int(clock() * 1000)
    decoded = decode_batch(log.read(0, 1000).records.to_bytes())
    assert decoded.timestamp_type == 1
    assert {r.timestamp for r in decoded.records} == {info.log_append_time}


def test_file_slice_can_be_sent_with_sendfile(tmp_path):
    log = Log.open(tmp_path / "t-0")
    for i in range(4):
        log.append_as_leader(batch(2, start=2 * i))
    found = log.read(2, 1 << 20)
    out_path = tmp_path / "sent"
    with open(out_path, "wb") as out:
        sent = os.sendfile(
            out.fileno(), found.records.fileno(), found.records.position, found.records.size
        )
    assert sent == found.records.size
    assert out_path.read_bytes() == found.records.to_bytes()


def test_config_from_kafka_properties():
    config = LogConfig.from_properties(
        {"segment.bytes": "2048", "cleanup.policy": "compact,delete"}
    )
    assert config.segment_bytes == 2048 and config.compact and config.delete
    with pytest.raises(LogConfigError, match="unknown"):
        LogConfig.from_properties({"segment.bites": "1"})
    with pytest.raises(LogConfigError):
        LogConfig.from_properties({"segment.bytes": "big"})


def test_follower_append_writes_only_whole_intact_batches(tmp_path):
    leader = Log.open(tmp_path / "leader" / "t-0")
    for i in range(3):
        leader.append_as_leader(batch(2, start=2 * i))
    fetched = leader.read(0, 1 << 20).records.to_bytes()
    follower = Log.open(tmp_path / "t-0")
    follower.append_as_follower(fetched[:-7])  # a response cut inside its last batch
    assert follower.log_end_offset == 4
    assert follower.active_segment.size == len(fetched) - len(batch(2, start=4))
    follower.append_as_follower(leader.read(4, 1 << 20).records.to_bytes())
    assert read_all(follower) == read_all(leader)

    corrupt = bytearray(leader.read(0, 1 << 20).records.to_bytes())
    corrupt[-3] ^= 0x10
    fresh = Log.open(tmp_path / "fresh" / "t-0")
    with pytest.raises(InvalidCrcError):
        fresh.append_as_follower(bytes(corrupt))
    swapped = leader.read(2, 100).records.to_bytes() + leader.read(0, 100).records.to_bytes()
    with pytest.raises(CorruptRecordError, match="backwards"):
        fresh.append_as_follower(swapped)
    assert fresh.log_end_offset == 0 and fresh.active_segment.size == 0


def test_many_batches_in_one_append_roll_instead_of_overflowing_an_index(tmp_path):
    config = LogConfig(segment_index_bytes=48, index_interval_bytes=1)
    log = Log.open(tmp_path / "t-0", config)
    log.append_as_leader(batch(1))
    many = b"".join(batch(1, start=i) for i in range(10))
    log.append_as_leader(many)
    log.append_as_leader(many)
    assert [r.offset for r in read_all(log)] == list(range(21))
    bases = [s.base_offset for s in log.segments]
    assert bases == sorted(set(bases))


def test_readers_never_see_past_the_bound_while_appends_and_rolls_run(tmp_path):
    """A reader bounded by the log end it observed (as a consumer is by the high
    watermark) gets exactly the offsets below it, while a writer appends and rolls
    segments (which remaps their indexes) underneath."""
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=4096, index_interval_bytes=64))
    log.append_as_leader(batch(2))
    stop = threading.Event()

    def write():
        for i in range(1, 1500):
            log.append_as_leader(batch(2, start=2 * i, size=20))
        stop.set()

    writer = threading.Thread(target=write)
    writer.start()
    reads = 0
    try:
        while not stop.is_set():
            bound = log.log_end_offset
            start = max(0, bound - 30)
            assert [r.offset for r in read_all(log, start, max_offset=bound)] == list(
                range(start, bound)
            )
            reads += 1
            time.sleep(0.0005)  # a spinning reader would starve the writer of the GIL
    finally:
        writer.join()
    assert reads > 20 and len(log.segments) > 10
