import os
import time

import pytest

from storage.helpers import batch
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import OffsetOutOfRangeError
from tidelog.storage.log import Log
from tidelog.storage.scheduler import Scheduler


def segmented_log(directory, clock, config, batches=20, timestamp_step=1000):
    log = Log.open(directory, config, clock=clock)
    for i in range(batches):
        log.append_as_leader(
            batch(2, start=2 * i, size=40, timestamp=1_000_000 + i * timestamp_step)
        )
    return log


def test_retention_ms_deletes_old_segments_but_never_the_active_one(tmp_path, clock):
    config = LogConfig(segment_bytes=500, retention_ms=5_000)
    log = segmented_log(tmp_path / "t-0", clock, config)
    assert len(log.segments) > 3
    clock.now = (1_000_000 + 10 * 1000 + 5_000) / 1000 + 0.5  # records up to #10 expired
    deleted = log.delete_old_segments()
    assert deleted > 0
    assert all(s.largest_timestamp >= 1_000_000 + 10 * 1000 for s in log.segments)
    assert log.log_start_offset == log.segments[0].base_offset > 0
    assert not list((tmp_path / "t-0").glob("*.deleted"))
    clock.now += 10**6  # everything expired: the active segment still stays
    log.delete_old_segments()
    assert len(log.segments) == 1 and log.active_segment.size > 0
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_retention_ms_falls_back_to_file_time_without_timestamps(tmp_path, clock):
    config = LogConfig(segment_bytes=500, retention_ms=60_000)
    log = segmented_log(tmp_path / "t-0", clock, config, timestamp_step=0)
    for segment in log.segments:  # records carry no usable time: mtime decides
        segment.max_timestamp_so_far = -1
    old = log.segments[0]
    clock.now = old.last_modified_ms / 1000 + 30
    assert log.delete_old_segments() == 0
    os.utime(old.log_path, (clock.now - 120, clock.now - 120))
    assert log.delete_old_segments() == 1


def test_retention_bytes(tmp_path, clock):
    config = LogConfig(segment_bytes=500, retention_bytes=1000, retention_ms=-1)
    log = segmented_log(tmp_path / "t-0", clock, config)
    sizes = [s.size for s in log.segments]
    assert sum(sizes) > 2000
    log.delete_old_segments()
    # the oldest segments go while what remains stays at or above retention.bytes
    kept = len(log.segments)
    assert sum(sizes[-kept:]) >= 1000 > sum(sizes[-kept + 1 :])
    assert [s.size for s in log.segments] == sizes[-kept:]
    tiny = LogConfig(segment_bytes=500, retention_bytes=1, retention_ms=-1)
    log.update_config(tiny)  # everything breaches now, but the active segment stays
    log.delete_old_segments()
    assert len(log.segments) == 1 and log.active_segment.size > 0


def test_compact_only_topics_ignore_time_and_size_retention(tmp_path, clock):
    config = LogConfig(
        segment_bytes=500, retention_bytes=10, retention_ms=1, cleanup_policy=("compact",)
    )
    log = segmented_log(tmp_path / "t-0", clock, config)
    clock.now += 10**7
    assert log.delete_old_segments() == 0


def test_delete_records_moves_log_start_offset(tmp_path, clock):
    log = segmented_log(tmp_path / "t-0", clock, LogConfig(segment_bytes=500))
    segments = len(log.segments)
    second = log.segments[1].base_offset
    assert log.maybe_increment_log_start_offset(second + 1) == second + 1
    assert len(log.segments) == segments - 1  # the first segment lies wholly below
    assert log.read(second + 1, 100).first_offset == second + 1
    with pytest.raises(OffsetOutOfRangeError):
        log.read(second, 100)
    assert log.maybe_increment_log_start_offset(3) == second + 1  # never goes back
    with pytest.raises(OffsetOutOfRangeError):
        log.maybe_increment_log_start_offset(log.log_end_offset + 1)
    log.maybe_increment_log_start_offset(log.log_end_offset)
    assert len(log.segments) == 1 and log.read(log.log_end_offset, 10) is None


def test_deleted_segments_stay_readable_until_file_delete_delay(tmp_path, clock):
    """A fetch may still be sending from a segment that retention removes: its files
    are renamed ``.deleted`` at once and closed and removed only after the delay."""
    scheduler = Scheduler()
    try:
        config = LogConfig(segment_bytes=500, retention_ms=1, file_delete_delay_ms=300)
        log = Log.open(tmp_path / "t-0", config, clock=clock, scheduler=scheduler)
        for i in range(10):
            log.append_as_leader(batch(2, start=2 * i, size=40, timestamp=1_000))
        in_flight = log.read(0, 1 << 20).records
        expected = in_flight.to_bytes()
        clock.advance_ms(10**6)
        assert log.delete_old_segments() > 0
        assert list((tmp_path / "t-0").glob("*.log.deleted"))
        assert in_flight.to_bytes() == expected  # still served from the renamed file
        deadline = time.monotonic() + 10
        while list((tmp_path / "t-0").glob("*.deleted")) and time.monotonic() < deadline:
            time.sleep(0.02)
        assert not list((tmp_path / "t-0").glob("*.deleted"))
    finally:
        scheduler.shutdown()
