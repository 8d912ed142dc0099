"""flush.messages and flush.ms: an append that reaches ``flush.messages`` is on disk before
it returns, the periodic flusher honours ``flush.ms``, and Kafka's defaults fsync nothing
on the append path. Files are real; fsync calls are watched, never replaced."""

import os
from pathlib import Path

import pytest

from storage.helpers import batch
from tidelog.records import build_batch
from tidelog.storage.checkpoints import RECOVERY_POINT_CHECKPOINT, read_offset_checkpoint
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log
from tidelog.storage.log_manager import LogManager
from waiting import wait_until

YEAR_MS = 365 * 24 * 60 * 60 * 1000


@pytest.fixture
def fsynced(monkeypatch) -> list[Path]:
    """Test-only hook: the path of every file or directory ``os.fsync`` is called on, in
    order. Each call still goes to the real ``os.fsync``."""
    paths: list[Path] = []
    real_fsync = os.fsync

    def watched(fd: int) -> None:
        paths.append(Path(os.readlink(f"/proc/self/fd/{fd}")))
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", watched)
    return paths


def test_flush_messages_1_makes_every_append_durable_before_it_returns(tmp_path, fsynced):
    log = Log.open(tmp_path / "t-0", LogConfig(flush_messages=1))
    segment_file = log.active_segment.log_path.resolve()
    for count in (1, 3, 1, 2):
        fsynced.clear()
        info = log.append_as_leader(batch(count))
        assert segment_file in fsynced
        assert log.recovery_point == log.log_end_offset == info.last_offset + 1


def test_flush_messages_applies_to_a_followers_appends_too(tmp_path, fsynced):
    log = Log.open(tmp_path / "t-0", LogConfig(flush_messages=1))
    segment_file = log.active_segment.log_path.resolve()
    for base in (0, 2, 4):
        fsynced.clear()
        log.append_as_follower(build_batch([("k", "a"), ("k", "b")], base_offset=base))
        assert segment_file in fsynced
        assert log.recovery_point == log.log_end_offset == base + 2


def test_flush_messages_counts_the_offsets_appended_since_the_last_flush(tmp_path, fsynced):
    log = Log.open(tmp_path / "t-0", LogConfig(flush_messages=3))
    segment_file = log.active_segment.log_path.resolve()
    recovery_points = []
    for count in (1, 1, 1, 1, 5, 2):
        fsynced.clear()
        log.append_as_leader(batch(count))
        recovery_points.append((log.recovery_point, segment_file in fsynced))
    # 1, 2 → 3: flush; 1 → a batch of 5 makes 6: flush; 2 stays below 3.
    assert recovery_points == [
        (0, False),
        (0, False),
        (3, True),
        (3, False),
        (9, True),
        (9, False),
    ]


def test_with_kafkas_defaults_an_append_fsyncs_nothing(tmp_path, fsynced):
    log = Log.open(tmp_path / "t-0")
    log.append_as_leader(batch(2))  # a new leader epoch: its checkpoint is written once
    fsynced.clear()
    for start in range(2, 200, 2):
        log.append_as_leader(batch(2, start=start))
    assert fsynced == []
    assert log.recovery_point == 0
    assert log.log_end_offset == 200


def test_the_checkpoint_records_the_recovery_point_that_flush_messages_moved(tmp_path):
    manager = LogManager(
        [tmp_path / "d"], broker_id=1, topic_configs={"t": LogConfig(flush_messages=1)}
    )
    manager.startup()
    try:
        log = manager.get_or_create_log("t", 0)
        log.append_as_leader(batch(4))
        manager.checkpoint()
        checkpoint = read_offset_checkpoint(log.directory.parent / RECOVERY_POINT_CHECKPOINT)
        assert checkpoint[("t", 0)] == 4
    finally:
        manager.shutdown()


def test_flush_dirty_logs_flushes_a_log_once_its_last_flush_is_flush_ms_old(tmp_path, clock):
    manager = LogManager(
        [tmp_path / "d"],
        broker_id=1,
        clock=clock,
        topic_configs={"timed": LogConfig(flush_ms=1000)},
    )
    manager.startup()
    try:
        timed = manager.get_or_create_log("timed", 0)
        untimed = manager.get_or_create_log("untimed", 0)
        for log in (timed, untimed):
            log.append_as_leader(batch(3))

        clock.advance_ms(999)
        manager.flush_dirty_logs()
        assert timed.recovery_point == 0

        clock.advance_ms(1)
        manager.flush_dirty_logs()
        assert timed.recovery_point == 3
        assert timed.last_flushed_ms == int(clock() * 1000)

        # The next flush is due flush.ms after this one, not after the first append.
        timed.append_as_leader(batch(2))
        clock.advance_ms(999)
        manager.flush_dirty_logs()
        assert timed.recovery_point == 3
        clock.advance_ms(1)
        manager.flush_dirty_logs()
        assert timed.recovery_point == 5

        clock.advance_ms(YEAR_MS)
        manager.flush_dirty_logs()
        assert untimed.recovery_point == 0  # flush.ms: Long.MAX_VALUE
    finally:
        manager.shutdown()


def test_the_flusher_is_off_by_default(tmp_path):
    manager = LogManager([tmp_path / "d"], broker_id=1)
    manager.startup()
    try:
        assert manager.scheduler.pending == 0
    finally:
        manager.shutdown()


def test_the_flusher_runs_every_interval_on_the_scheduler(tmp_path, clock):
    manager = LogManager(
        [tmp_path / "d"],
        broker_id=1,
        clock=clock,
        topic_configs={"t": LogConfig(flush_ms=1000)},
        flush_scheduler_interval_ms=10,
    )
    manager.startup()
    try:
        assert manager.scheduler.pending == 1
        log = manager.get_or_create_log("t", 0)
        for expected in (2, 4):
            log.append_as_leader(batch(2))
            clock.advance_ms(1000)
            wait_until(
                lambda expected=expected: log.recovery_point == expected,
                f"the flusher's recovery point {expected}",
                10,
            )
    finally:
        manager.shutdown()
