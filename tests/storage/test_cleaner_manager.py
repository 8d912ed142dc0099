"""Cleaning states, log selection and checkpoints (``LogCleanerManager``), and the
cleaner threads (``LogCleaner``)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from tidelog.records import build_batch, iter_decoded_batches
from tidelog.storage.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tidelog.storage.cleaner import (
    CleanerConfig,
    CleaningEvent,
    IllegalCleaningStateError,
    LogCleaner,
    LogCleanerManager,
    LogCleaningAborted,
    LogCleaningInProgress,
    LogCleaningPaused,
    transition,
)
from tidelog.storage.cleaner.cleaner import Cleaner
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log

T0 = 1_700_000_000_000


def compacted(**overrides) -> LogConfig:
    settings = {"cleanup_policy": ("compact",), "segment_bytes": 4096}
    settings.update(overrides)
    return LogConfig(**settings)


class Broker:
    """One log directory with a live table of logs, as the log manager keeps it."""

    def __init__(self, root: Path, clock):
        self.dir = root / "data"
        self.dir.mkdir()
        self.clock = clock
        self.logs: dict[tuple[str, int], Log] = {}

    def log(self, topic: str, config: LogConfig | None = None) -> Log:
        log = Log.open(self.dir / f"{topic}-0", config or compacted(), clock=self.clock)
        self.logs[(topic, 0)] = log
        return log

    def manager(self) -> LogCleanerManager:
        return LogCleanerManager([self.dir], self.logs)

    def checkpoints(self) -> dict:
        return read_offset_checkpoint(self.dir / CLEANER_OFFSET_CHECKPOINT)


@pytest.fixture
def broker(tmp_path, clock) -> Broker:
    return Broker(tmp_path, clock)


def fill(log: Log, rounds: int, *, keys: int = 5, timestamp: int = T0) -> None:
    """``rounds`` segments, each updating ``keys`` keys once; the active one is empty."""
    for round_ in range(rounds):
        log.append_as_leader(
            build_batch(
                [(f"k{i}", f"{round_}-{i}" + "x" * 40) for i in range(keys)],
                timestamp=timestamp,
            )
        )
        log.roll()


def values(log: Log) -> list[tuple[bytes, bytes]]:
    found = []
    for segment in log.segments:
        for batch in iter_decoded_batches(segment.log.read(0, segment.size)):
            found.extend((r.key, r.value) for r in batch.records)
    return found


# -- the transition table ------------------------------------------------------------------


def test_transition_table():
    paused = LogCleaningPaused
    assert transition(None, CleaningEvent.START) == LogCleaningInProgress()
    assert transition(None, CleaningEvent.ABORT_AND_PAUSE) == paused(1)
    assert transition(LogCleaningInProgress(), CleaningEvent.DONE) is None
    assert transition(LogCleaningInProgress(), CleaningEvent.ABORT_AND_PAUSE) == (
        LogCleaningAborted()
    )
    assert transition(LogCleaningAborted(), CleaningEvent.DONE) == paused(1)
    assert transition(paused(2), CleaningEvent.ABORT_AND_PAUSE) == paused(3)
    assert transition(paused(2), CleaningEvent.RESUME) == paused(1)
    assert transition(paused(1), CleaningEvent.RESUME) is None


@pytest.mark.parametrize(
    ("state", "event"),
    [
        (None, CleaningEvent.DONE),
        (None, CleaningEvent.RESUME),
        (LogCleaningInProgress(), CleaningEvent.START),
        (LogCleaningInProgress(), CleaningEvent.RESUME),
        (LogCleaningAborted(), CleaningEvent.ABORT_AND_PAUSE),
        (LogCleaningAborted(), CleaningEvent.START),
        (LogCleaningPaused(1), CleaningEvent.START),
        (LogCleaningPaused(1), CleaningEvent.DONE),
    ],
)
def test_illegal_transitions_raise(state, event):
    with pytest.raises(IllegalCleaningStateError):
        transition(state, event, ("t", 0))


# -- choosing the log ----------------------------------------------------------------------


def test_grabs_the_filthiest_compacted_log_and_marks_it_in_progress(broker):
    a = broker.log("a", compacted(min_cleanable_dirty_ratio=0.2))
    b = broker.log("b", compacted(min_cleanable_dirty_ratio=0.2))
    c = broker.log("c")
    plain = broker.log("plain", LogConfig(cleanup_policy=("delete",)))
    for log in (a, b, c, plain):
        fill(log, 4)
    manager = broker.manager()
    # a: 3 of its 4 segments clean (ratio 0.25); b: 2 of 4 (0.5); c: 3 of 4, but its
    # min.cleanable.dirty.ratio is the default 0.5; plain is not compacted.
    manager.update_checkpoints(broker.dir, update=(("a", 0), 15))
    manager.update_checkpoints(broker.dir, update=(("b", 0), 10))
    manager.update_checkpoints(broker.dir, update=(("c", 0), 15))

    first = manager.grab_filthiest_compacted_log(T0)
    assert first.topic_partition == ("b", 0)
    assert first.cleanable_ratio == pytest.approx(0.5)
    assert manager.cleaning_state(("b", 0)) == LogCleaningInProgress()

    second = manager.grab_filthiest_compacted_log(T0)  # b is busy now
    assert second.topic_partition == ("a", 0)
    assert second.cleanable_ratio == pytest.approx(0.25)
    assert (second.first_dirty_offset, second.first_uncleanable_offset) == (15, 20)
    assert manager.grab_filthiest_compacted_log(T0) is None  # c is below its ratio
    assert manager.cleaning_state(("c", 0)) is None
    assert manager.cleaning_state(("plain", 0)) is None


def test_dirty_ratio_is_computed_from_segment_sizes(broker):
    log = broker.log("a")
    fill(log, 4)
    manager = broker.manager()
    manager.update_checkpoints(broker.dir, update=(("a", 0), 10))
    log.update_config(compacted(min_cleanable_dirty_ratio=0.0))
    chosen = manager.grab_filthiest_compacted_log(T0)
    sizes = [s.size for s in log.segments]
    assert chosen.clean_bytes == sum(sizes[:2])
    assert chosen.cleanable_bytes == sum(sizes[2:4])
    assert chosen.cleanable_ratio == pytest.approx(0.5)


def test_max_compaction_lag_forces_a_cleaning_below_the_dirty_ratio(broker):
    hour = 3_600_000
    log = broker.log("a", compacted(max_compaction_lag_ms=hour))
    fill(log, 9, timestamp=T0 - 2 * hour)
    fill(log, 1, timestamp=T0 - 2 * hour)
    manager = broker.manager()
    manager.update_checkpoints(broker.dir, update=(("a", 0), 45))  # 1 dirty of 10
    chosen = manager.grab_filthiest_compacted_log(T0)
    assert chosen is not None and chosen.needs_compaction_now
    assert chosen.cleanable_ratio < 0.5

    fresh = broker.log("b", compacted(max_compaction_lag_ms=hour))
    fill(fresh, 9, timestamp=T0 - 2 * hour)
    fill(fresh, 1, timestamp=T0 - hour // 2)  # its dirty record is younger than the lag
    manager.update_checkpoints(broker.dir, update=(("b", 0), 45))
    assert manager.grab_filthiest_compacted_log(T0) is None


def test_min_compaction_lag_makes_recent_logs_not_cleanable(broker):
    log = broker.log("a", compacted(min_compaction_lag_ms=60_000))
    fill(log, 3, timestamp=T0 - 1_000)
    manager = broker.manager()
    assert manager.grab_filthiest_compacted_log(T0) is None
    chosen = manager.grab_filthiest_compacted_log(T0 + 60_000)
    assert chosen is not None and chosen.first_uncleanable_offset == 15


def test_a_checkpoint_out_of_the_log_is_reset_and_rewritten(broker):
    log = broker.log("a")
    fill(log, 2)
    manager = broker.manager()
    manager.update_checkpoints(broker.dir, update=(("a", 0), 1_000))  # past the log end
    chosen = manager.grab_filthiest_compacted_log(T0)
    assert chosen.first_dirty_offset == 0
    assert broker.checkpoints() == {("a", 0): 0}


def test_uncleanable_partitions_are_skipped(broker):
    fill(broker.log("a"), 2)
    manager = broker.manager()
    manager.mark_partition_uncleanable(broker.dir, ("a", 0))
    assert manager.grab_filthiest_compacted_log(T0) is None
    assert manager.uncleanable_partitions(broker.dir) == {("a", 0)}


# -- states through the manager ------------------------------------------------------------


def test_done_cleaning_checkpoints_and_frees_the_log(broker):
    fill(broker.log("a"), 2)
    manager = broker.manager()
    chosen = manager.grab_filthiest_compacted_log(T0)
    manager.done_cleaning(chosen.topic_partition, broker.dir, 10)
    assert manager.cleaning_state(("a", 0)) is None
    assert broker.checkpoints() == {("a", 0): 10}
    with pytest.raises(IllegalCleaningStateError):
        manager.done_cleaning(("a", 0), broker.dir, 12)  # not in progress any more
    assert broker.checkpoints() == {("a", 0): 10}


def test_pause_is_reentrant_and_blocks_grabbing(broker):
    fill(broker.log("a"), 2)
    manager = broker.manager()
    tp = ("a", 0)
    manager.abort_and_pause_cleaning(tp)
    manager.abort_and_pause_cleaning(tp)
    assert manager.cleaning_state(tp) == LogCleaningPaused(2)
    assert manager.grab_filthiest_compacted_log(T0) is None
    manager.resume_cleaning([tp])
    assert manager.cleaning_state(tp) == LogCleaningPaused(1)
    assert manager.grab_filthiest_compacted_log(T0) is None
    manager.resume_cleaning([tp])
    assert manager.cleaning_state(tp) is None
    with pytest.raises(IllegalCleaningStateError):
        manager.resume_cleaning([tp])
    assert manager.grab_filthiest_compacted_log(T0).topic_partition == tp


def test_abort_during_cleaning_waits_for_the_cleaner_then_pauses(broker):
    fill(broker.log("a"), 2)
    manager = broker.manager()
    tp = ("a", 0)
    manager.grab_filthiest_compacted_log(T0)
    aborted = threading.Event()

    def abort():
        manager.abort_and_pause_cleaning(tp)
        aborted.set()

    aborter = threading.Thread(target=abort)
    aborter.start()
    while manager.cleaning_state(tp) != LogCleaningAborted():
        aborter.join(0.001)
    assert not aborted.is_set()  # waiting for the cleaner's acknowledgement
    with pytest.raises(Exception, match="aborted"):
        manager.check_cleaning_aborted(tp)
    manager.done_cleaning(tp, broker.dir, 10)  # the cleaner gives up
    aborter.join(5)
    assert aborted.is_set()
    assert manager.cleaning_state(tp) == LogCleaningPaused(1)
    assert broker.checkpoints() == {}  # an aborted cleaning checkpoints nothing
    manager.resume_cleaning([tp])
    assert manager.cleaning_state(tp) is None


def test_abort_and_pause_times_out_without_a_cleaner(broker):
    fill(broker.log("a"), 2)
    manager = broker.manager()
    manager.grab_filthiest_compacted_log(T0)
    with pytest.raises(TimeoutError):
        manager.abort_and_pause_cleaning(("a", 0), timeout=0.05)


def test_deletion_pass_and_non_compacted_pause(broker):
    broker.log("a")
    broker.log("plain", LogConfig())
    manager = broker.manager()
    assert [tp for tp, _ in manager.pause_cleaning_for_non_compacted_partitions()] == [("plain", 0)]
    deletable = manager.deletable_logs()
    assert [tp for tp, _ in deletable] == [("a", 0)]
    assert manager.cleaning_state(("a", 0)) == LogCleaningInProgress()
    manager.done_deleting([("a", 0)])
    assert manager.cleaning_state(("a", 0)) is None
    assert manager.cleaning_state(("plain", 0)) == LogCleaningPaused(1)


# -- checkpoints ---------------------------------------------------------------------------


def test_checkpoints_follow_partitions(broker, tmp_path):
    broker.log("a")
    broker.log("b")
    manager = broker.manager()
    manager.update_checkpoints(broker.dir, update=(("a", 0), 7))
    manager.update_checkpoints(broker.dir, update=(("b", 0), 9))
    manager.maybe_truncate_checkpoint(broker.dir, ("a", 0), 3)
    manager.maybe_truncate_checkpoint(broker.dir, ("b", 0), 20)
    assert broker.checkpoints() == {("a", 0): 3, ("b", 0): 9}

    manager.update_checkpoints(broker.dir, remove=("a", 0))
    assert broker.checkpoints() == {("b", 0): 9}
    del broker.logs[("b", 0)]  # a deleted partition's entry goes with the next write
    manager.update_checkpoints(broker.dir)
    assert broker.checkpoints() == {}

    other = tmp_path / "other"
    other.mkdir()
    manager.add_log_dir(other)
    manager.update_checkpoints(broker.dir, update=(("a", 0), 5))
    manager.alter_checkpoint_dir(("a", 0), broker.dir, other)
    assert broker.checkpoints() == {}
    assert read_offset_checkpoint(other / CLEANER_OFFSET_CHECKPOINT) == {("a", 0): 5}
    assert manager.all_cleaner_checkpoints() == {("a", 0): 5}


def test_checkpoint_file_is_kafkas_format(broker):
    broker.log("a")
    broker.manager().update_checkpoints(broker.dir, update=(("a", 0), 42))
    text = (broker.dir / CLEANER_OFFSET_CHECKPOINT).read_text()
    assert text == "0\n1\na 0 42\n"


# -- the cleaner threads -------------------------------------------------------------------


def cleaner_for(broker: Broker, **settings) -> LogCleaner:
    config = CleanerConfig(
        log_cleaner_backoff_ms=settings.pop("backoff_ms", 10),
        log_cleaner_dedupe_buffer_size=settings.pop("memory", 24 * 1000),
        **settings,
    )
    return LogCleaner(config, [broker.dir], broker.logs, clock=broker.clock)


def test_cleaner_threads_clean_every_compacted_log(broker):
    logs = [broker.log(name) for name in ("a", "b", "c")]
    for log in logs:
        fill(log, 3)
    cleaner = cleaner_for(broker, log_cleaner_threads=2)
    cleaner.start()
    try:
        for log in logs:
            assert cleaner.wait_until_cleaned(log, 15, timeout=10)
        assert broker.checkpoints() == {("a", 0): 15, ("b", 0): 15, ("c", 0): 15}
        fill(logs[0], 2)  # new dirty data: the next cleaning starts at the checkpoint
        assert cleaner.wait_until_cleaned(logs[0], 25, timeout=10)
    finally:
        cleaner.shutdown()
    assert not cleaner.is_running
    assert len(cleaner.threads) == 0
    for log, last_round in zip(logs, (1, 2, 2), strict=True):
        expected = [(f"k{i}".encode(), f"{last_round}-{i}".encode() + b"x" * 40) for i in range(5)]
        assert values(log) == expected


def test_disabled_cleaner_starts_no_thread(broker):
    cleaner = cleaner_for(broker, log_cleaner_enable=False)
    cleaner.start()
    assert cleaner.threads == [] and not cleaner.is_running


def test_abort_stops_a_running_cleaning_and_resume_lets_it_finish(broker, monkeypatch):
    log = broker.log("a")
    fill(log, 3)
    before = values(log)
    entered, release = threading.Event(), threading.Event()
    real = Cleaner._clean_segments

    def slow(self, *args):
        entered.set()
        release.wait(10)
        return real(self, *args)

    monkeypatch.setattr(Cleaner, "_clean_segments", slow)
    cleaner = cleaner_for(broker)
    cleaner.start()
    try:
        assert entered.wait(10)
        tp = ("a", 0)
        aborter = threading.Thread(target=cleaner.abort_and_pause_cleaning, args=(tp,))
        aborter.start()
        while cleaner.manager.cleaning_state(tp) != LogCleaningAborted():
            aborter.join(0.001)
        release.set()
        aborter.join(10)
        assert not aborter.is_alive()
        assert cleaner.manager.cleaning_state(tp) == LogCleaningPaused(1)
        assert values(log) == before
        assert not [p for p in log.directory.iterdir() if p.name.endswith(".cleaned")]
        assert broker.checkpoints().get(tp, 0) == 0

        cleaner.resume_cleaning([tp])
        assert cleaner.wait_until_cleaned(log, 15, timeout=10)
    finally:
        release.set()
        cleaner.shutdown()
    assert len(values(log)) == 5


def test_a_failing_log_is_marked_uncleanable_and_the_others_go_on(broker, monkeypatch):
    bad = broker.log("bad")
    good = broker.log("good")
    fill(bad, 3)
    fill(good, 2)
    real = Cleaner.clean

    def clean(self, to_clean):
        if to_clean.log is bad:
            raise OSError("disk trouble")
        return real(self, to_clean)

    monkeypatch.setattr(Cleaner, "clean", clean)
    cleaner = cleaner_for(broker)
    cleaner.start()
    try:
        assert cleaner.wait_until_cleaned(good, 10, timeout=10)
    finally:
        cleaner.shutdown()
    assert cleaner.manager.uncleanable_partitions(broker.dir) == {("bad", 0)}
    assert cleaner.manager.cleaning_state(("bad", 0)) is None


def test_shutdown_stops_a_cleaning_in_progress(broker, monkeypatch):
    log = broker.log("a")
    fill(log, 3)
    before = values(log)
    entered = threading.Event()
    real = Cleaner._clean_segments

    def slow(self, *args):
        entered.set()
        cleaner._stopping.wait(10)
        return real(self, *args)

    monkeypatch.setattr(Cleaner, "_clean_segments", slow)
    cleaner = cleaner_for(broker)
    cleaner.start()
    assert entered.wait(10)
    cleaner.shutdown(timeout=10)
    assert not cleaner.is_running
    assert values(log) == before
    assert cleaner.manager.cleaning_state(("a", 0)) is None


def test_cleaner_config_from_kafka_properties():
    config = CleanerConfig.from_properties(
        {
            "log.cleaner.threads": "4",
            "log.cleaner.dedupe.buffer.size": str(64 * 1024 * 1024),
            "log.cleaner.io.buffer.load.factor": "0.75",
            "log.cleaner.backoff.ms": "100",
            "log.cleaner.enable": "false",
            "log.dirs": "/ignored",
        }
    )
    assert config.log_cleaner_threads == 4
    assert config.dedupe_buffer_per_thread == 16 * 1024 * 1024
    assert config.log_cleaner_io_buffer_load_factor == 0.75
    assert (config.log_cleaner_backoff_ms, config.log_cleaner_enable) == (100, False)
    defaults = CleanerConfig()
    assert defaults.log_cleaner_dedupe_buffer_size == 128 * 1024 * 1024
    assert (defaults.log_cleaner_threads, defaults.log_cleaner_backoff_ms) == (1, 15_000)
    assert defaults.log_cleaner_io_buffer_load_factor == 0.9 and defaults.log_cleaner_enable
    with pytest.raises(ValueError):
        CleanerConfig(log_cleaner_threads=0)


def test_checkpoint_written_by_someone_else_is_read(broker):
    log = broker.log("a")
    fill(log, 2)
    write_offset_checkpoint(broker.dir / CLEANER_OFFSET_CHECKPOINT, {("a", 0): 5})
    manager = broker.manager()
    log.update_config(compacted(min_cleanable_dirty_ratio=0.0))
    assert manager.grab_filthiest_compacted_log(T0).first_dirty_offset == 5
