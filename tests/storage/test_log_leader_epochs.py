"""The log's leader epoch cache: appends as leader and follower, loading and recovery,
truncation, retention and DeleteRecords, deletion, and the divergence a restarted
replica repairs by epoch (seed 004)."""

from __future__ import annotations

import threading
import time

from storage.helpers import batch
from tidelog.records import iter_decoded_batches
from tidelog.storage import leader_epoch
from tidelog.storage.config import LogConfig
from tidelog.storage.leader_epoch import LEADER_EPOCH_CHECKPOINT, EpochEntry
from tidelog.storage.log import Log
from tidelog.storage.log_manager import LogManager
from tidelog.storage.scheduler import Scheduler
from tidelog.storage.segment import LogSegment

CONFIG = LogConfig(segment_bytes=600, index_interval_bytes=150)


def entries(log: Log) -> list[tuple[int, int]]:
    return [tuple(entry) for entry in log.leader_epochs.entries]


def checkpoint(log: Log) -> str:
    return (log.directory / LEADER_EPOCH_CHECKPOINT).read_text()


def epoch_log(directory, epochs=(0, 0, 0, 2, 2, 2, 5, 5), config=CONFIG) -> Log:
    """Batches of 2 records appended by leaders of ``epochs``, one batch each."""
    log = Log.open(directory, config)
    for i, epoch in enumerate(epochs):
        log.append_as_leader(batch(2, start=2 * i, size=40), leader_epoch=epoch)
    return log


def values(log: Log) -> list[tuple[int, bytes]]:
    found = log.read(log.log_start_offset, 1 << 20)
    if found is None:
        return []
    return [
        (record.offset, record.value)
        for decoded in iter_decoded_batches(found.records.to_bytes())
        for record in decoded.records
    ]


def test_leader_appends_record_each_new_epoch_once(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    assert entries(log) == [(0, 0), (2, 6), (5, 12)]
    assert checkpoint(log) == "0\n3\n0 0\n2 6\n5 12\n"
    assert log.latest_epoch == 5
    assert log.end_offset_for_epoch(2) == (2, 12)
    assert log.end_offset_for_epoch(5) == (5, 16)


def test_appends_in_the_same_epoch_leave_the_checkpoint_alone(tmp_path):
    log = epoch_log(tmp_path / "t-0", epochs=(4,))
    path = log.directory / LEADER_EPOCH_CHECKPOINT
    path.write_text("sentinel")  # any rewrite would replace it
    for i in range(5):
        log.append_as_leader(batch(2, start=10 + 2 * i), leader_epoch=4)
    assert path.read_text() == "sentinel"


def test_log_append_time_appends_record_epochs_too(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(message_timestamp_type="LogAppendTime"))
    log.append_as_leader(batch(3), leader_epoch=1)
    log.append_as_leader(batch(3), leader_epoch=3)
    assert entries(log) == [(1, 0), (3, 3)]


def test_a_new_leader_records_its_epoch_before_writing(tmp_path):
    log = epoch_log(tmp_path / "t-0", epochs=(0, 0))
    log.assign_epoch_start_offset(3, log.log_end_offset)
    assert entries(log) == [(0, 0), (3, 4)]
    assert log.end_offset_for_epoch(0) == (0, 4)
    assert log.end_offset_for_epoch(3) == (3, 4)


def test_follower_appends_take_the_epochs_of_the_batches(tmp_path):
    leader = epoch_log(tmp_path / "leader" / "t-0")
    follower = Log.open(tmp_path / "follower" / "t-0", CONFIG)
    offset = 0
    while offset < leader.log_end_offset:  # fetch as a follower does, a little at a time
        data = leader.read(offset, 100).records.to_bytes()
        offset = follower.append_as_follower(data).last_offset + 1
    assert entries(follower) == entries(leader) == [(0, 0), (2, 6), (5, 12)]
    assert checkpoint(follower) == checkpoint(leader)


def test_reopening_loads_the_checkpoint(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    log.close()
    reopened = Log.open(tmp_path / "t-0", CONFIG)
    assert entries(reopened) == [(0, 0), (2, 6), (5, 12)]


def test_recovery_rebuilds_entries_from_batches_past_the_recovery_point(tmp_path):
    log = epoch_log(tmp_path / "t-0", epochs=(0,) * 6 + (2,) * 6 + (5,) * 6)
    assert len(log.segments) >= 4
    recovery_point = log.segments[3].base_offset  # inside epoch 2's batches
    assert 12 < recovery_point < 24
    log.close()
    # A crash before the checkpoint learnt of epochs 2 and 5 (worse than a lost file
    # write can leave: the log writes every epoch before its recovery point passes it).
    (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).write_text("0\n1\n0 0\n")
    recovered = Log.open(
        tmp_path / "t-0", CONFIG, had_clean_shutdown=False, recovery_point=recovery_point
    )
    # Only batches from the recovery point's segment on are scanned, as in Kafka: epoch 2
    # is found at the first batch of that segment, epoch 5 where it began.
    assert entries(recovered) == [(0, 0), (2, recovery_point), (5, 24)]
    assert checkpoint(recovered) == f"0\n3\n0 0\n2 {recovery_point}\n5 24\n"


def test_loading_drops_epochs_of_data_that_did_not_survive(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    active = log.active_segment
    last = list(active.log.batch_headers())[-2]  # the first batch of epoch 5
    log.close()
    with open(active.log_path, "r+b") as handle:  # the crash tore epoch 5's data off
        handle.truncate(last.position + 10)
    recovered = Log.open(tmp_path / "t-0", CONFIG, had_clean_shutdown=False)
    assert recovered.log_end_offset == 12
    assert entries(recovered) == [(0, 0), (2, 6)]
    assert checkpoint(recovered) == "0\n2\n0 0\n2 6\n"


def test_truncation_cuts_the_cache_where_it_cuts_the_log(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    assert log.truncate_to(14)
    assert entries(log) == [(0, 0), (2, 6), (5, 12)]
    assert log.truncate_to(12)
    assert entries(log) == [(0, 0), (2, 6)]
    assert checkpoint(log) == "0\n2\n0 0\n2 6\n"
    log.append_as_leader(batch(2), leader_epoch=7)
    assert entries(log) == [(0, 0), (2, 6), (7, 12)]
    log.truncate_fully_and_start_at(50)
    assert entries(log) == [] and checkpoint(log) == "0\n0\n"


def test_retention_and_delete_records_move_the_first_entry_up(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    assert log.maybe_increment_log_start_offset(3) == 3
    assert entries(log) == [(0, 3), (2, 6), (5, 12)]
    assert log.maybe_increment_log_start_offset(8) == 8
    assert entries(log) == [(2, 8), (5, 12)]
    assert checkpoint(log) == "0\n2\n2 8\n5 12\n"
    assert log.end_offset_for_epoch(0) == (0, 8)  # gone: ends where the log starts now


def test_retention_deleting_segments_truncates_from_the_start(tmp_path):
    config = LogConfig(segment_bytes=600, retention_bytes=1300)
    log = epoch_log(tmp_path / "t-0", epochs=(0,) * 2 + (2,) * 8 + (5,) * 2, config=config)
    assert log.delete_old_segments() > 0
    start = log.log_start_offset
    assert 4 < start < 20
    assert entries(log) == [(2, start), (5, 20)]


def test_deleting_the_log_removes_the_checkpoint_with_the_directory(tmp_path):
    log = epoch_log(tmp_path / "t-0")
    assert (tmp_path / "t-0" / LEADER_EPOCH_CHECKPOINT).exists()
    log.delete()
    assert not (tmp_path / "t-0").exists()


def test_a_malformed_checkpoint_takes_only_its_directory_offline(tmp_path, caplog):
    dirs = [tmp_path / "a", tmp_path / "b"]
    first = LogManager(dirs, CONFIG, broker_id=1)
    first.startup()
    for partition, directory in enumerate(dirs):
        first.get_or_create_log("t", partition, directory).append_as_leader(batch(2))
    first.shutdown()
    (tmp_path / "a" / "t-0" / LEADER_EPOCH_CHECKPOINT).write_text("0\n2\n0 0\n")
    second = LogManager(dirs, CONFIG, broker_id=1)
    second.startup()
    assert list(second.offline_dirs) == [(tmp_path / "a").resolve()]
    assert "expected 2 entries, found 1" in second.offline_dirs[(tmp_path / "a").resolve()]
    assert second.get_log("t", 0) is None and second.get_log("t", 1) is not None
    second.shutdown()


def test_divergent_tail_is_truncated_by_epoch_and_the_logs_converge(tmp_path):
    """Issue 5's divergence scenario on two logs: the leader of epoch 0 wrote offsets
    0-6 but only 0-5 reached the follower (the HW is 4). The follower becomes leader of
    epoch 1 and writes two records; the old leader returns, asks for the end of its
    latest epoch, truncates its divergent offset 6 only, and fetches the rest."""
    old = Log.open(tmp_path / "old" / "t-0", CONFIG)
    for i in range(7):
        old.append_as_leader(batch(1, start=i, key_prefix="old"), leader_epoch=0)
    new = Log.open(tmp_path / "new" / "t-0", CONFIG)
    new.append_as_follower(old.read(0, 1 << 20, max_offset=6).records.to_bytes())
    assert new.log_end_offset == 6

    new.assign_epoch_start_offset(1, new.log_end_offset)  # elected, epoch 1
    for i in range(2):
        new.append_as_leader(batch(1, start=100 + i, key_prefix="new"), leader_epoch=1)

    epoch, end_offset = new.end_offset_for_epoch(old.latest_epoch)
    assert (epoch, end_offset) == (0, 6)
    old.truncate_to(min(end_offset, old.log_end_offset))
    assert old.log_end_offset == 6  # the committed offsets 0-5 stay; the HW (4) would cut more
    old.append_as_follower(new.read(old.log_end_offset, 1 << 20).records.to_bytes())

    assert values(old) == values(new)
    assert entries(old) == entries(new) == [(0, 0), (1, 6)]
    assert [EpochEntry(*e) for e in entries(old)] == list(new.leader_epochs.entries)


def hold_checkpoint_writes(monkeypatch) -> threading.Event:
    """From now on, checkpoint writes of leader epochs wait until the test sets the
    returned event (a disk busy with other writes, where two fsyncs take long); its
    ``writers`` names the thread of each write that began."""
    release = threading.Event()
    release.writers = []
    write = leader_epoch.write_leader_epoch_checkpoint

    def held(path, entries):
        release.writers.append(threading.current_thread().name)
        release.wait(10)
        write(path, entries)

    monkeypatch.setattr(leader_epoch, "write_leader_epoch_checkpoint", held)
    return release


def wait_until_held(release: threading.Event) -> None:
    while not release.writers:
        time.sleep(0.005)


def test_appends_go_on_while_a_new_leaders_epoch_is_checkpointed(tmp_path, monkeypatch):
    log = epoch_log(tmp_path / "t-0", epochs=(0,))
    release = hold_checkpoint_writes(monkeypatch)
    log.assign_epoch_start_offset(3, log.log_end_offset, write=False)  # as LeaderAndIsr
    writer = threading.Thread(target=log.write_leader_epochs)  # its worker thread
    writer.start()
    wait_until_held(release)
    appended = threading.Event()
    threading.Thread(
        target=lambda: (log.append_as_leader(batch(2, start=10), leader_epoch=3), appended.set()),
        daemon=True,
    ).start()
    # On the event loop, an append waiting for the write would hold up every request.
    assert appended.wait(5), "the append waited for the epoch checkpoint's fsyncs"
    assert entries(log) == [(0, 0), (3, 2)] and log.log_end_offset == 4
    release.set()
    writer.join()
    assert checkpoint(log) == "0\n2\n0 0\n3 2\n"


def test_a_followers_new_epoch_is_checkpointed_by_the_scheduler(tmp_path, monkeypatch):
    leader = epoch_log(tmp_path / "leader" / "t-0", epochs=(0, 4))
    release = hold_checkpoint_writes(monkeypatch)
    scheduler = Scheduler()
    try:
        follower = Log.open(tmp_path / "follower" / "t-0", CONFIG, scheduler=scheduler)
        follower.append_as_follower(leader.read(0, 1 << 20).records.to_bytes())
        assert entries(follower) == [(0, 0), (4, 2)]  # known at once, in memory
        wait_until_held(release)
        release.set()
    finally:
        scheduler.shutdown()
    assert release.writers == ["tidelog-storage-scheduler"]
    assert checkpoint(follower) == checkpoint(leader) == "0\n2\n0 0\n4 2\n"


def test_a_flush_checkpoints_the_epochs_before_it_moves_the_recovery_point(tmp_path):
    log = epoch_log(tmp_path / "t-0", epochs=(0,))
    log.assign_epoch_start_offset(6, log.log_end_offset, write=False)
    log.append_as_leader(batch(2, start=10), leader_epoch=6)
    assert checkpoint(log) == "0\n1\n0 0\n"  # epoch 6 only in memory
    log.flush()
    assert log.recovery_point == 4
    # Recovery re-reads the epochs of the batches past the recovery point only.
    assert checkpoint(log) == "0\n2\n0 0\n6 2\n"


def test_a_deleted_logs_deferred_epoch_checkpoint_does_nothing(tmp_path):
    log = epoch_log(tmp_path / "t-0", epochs=(0,))
    log.assign_epoch_start_offset(2, log.log_end_offset, write=False)
    log.delete()
    log.write_leader_epochs()  # an I/O error here would take the log dir offline
    assert not (tmp_path / "t-0").exists()


def test_a_truncation_during_a_flush_keeps_the_recovery_point_where_it_was(tmp_path, monkeypatch):
    """A follower truncates and appends a new epoch's batches again while a flush is
    fsyncing segments: the flush must not move the recovery point over them (their
    bytes and their epoch's entry may not be on disk)."""
    log = epoch_log(tmp_path / "t-0", epochs=(0, 0, 0))
    diverged = epoch_log(tmp_path / "leader" / "t-0", epochs=(0, 7, 7))
    fsync = LogSegment.flush

    def flush_while_the_follower_truncates(segment):
        monkeypatch.setattr(LogSegment, "flush", fsync)  # once
        log.truncate_to(2)
        log.append_as_follower(diverged.read(2, 1 << 20).records.to_bytes())
        fsync(segment)

    monkeypatch.setattr(LogSegment, "flush", flush_while_the_follower_truncates)
    log.flush()
    assert log.log_end_offset == 6 and entries(log) == [(0, 0), (7, 2)]
    assert log.recovery_point == 0
    log.flush()
    assert log.recovery_point == 6 and checkpoint(log) == "0\n2\n0 0\n7 2\n"
