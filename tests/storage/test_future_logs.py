"""Future logs of the log manager: moves between log dirs, their swap, draining dirs and
the start-up recovery of ``-future`` and ``-delete`` directories (seed 000 JBOD)."""

import uuid

import pytest

from storage.helpers import batch
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import KafkaStorageError, LogDirNotFoundError
from tidelog.storage.log import Log
from tidelog.storage.log_manager import LogManager
from tidelog.storage.partition_metadata import read_topic_id

CONFIG = LogConfig(segment_bytes=600, file_delete_delay_ms=0)
TOPIC_ID = uuid.UUID(int=7)


def manager(dirs) -> LogManager:
    instance = LogManager(dirs, CONFIG, broker_id=1)
    instance.startup()
    return instance


def all_bytes(log: Log) -> bytes:
    return b"".join(segment.log.read(0, segment.size) for segment in log.segments)


def fill(log: Log, batches: int, start: int = 0) -> None:
    for i in range(batches):
        log.append_as_leader(batch(3, start=start + 3 * i), leader_epoch=2)


def copy_all(current: Log, future: Log) -> None:
    """What the log-dir mover does, in one go."""
    while future.log_end_offset < current.log_end_offset:
        found = current.read(future.log_end_offset, 1 << 30)
        future.append_as_follower(found.records.to_bytes())


def dir_names(directory) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.is_dir())


@pytest.fixture
def dirs(tmp_path):
    return [tmp_path / "a", tmp_path / "b"]


def moving(dirs, batches: int = 10):
    """A manager with t-0 in dir a holding data, and its future log in dir b."""
    logs = manager(dirs)
    current = logs.get_or_create_log("t", 0, dirs[0], topic_id=TOPIC_ID)
    fill(current, batches)
    future = logs.create_future_log("t", 0, logs.log_dirs[1], topic_id=TOPIC_ID)
    return logs, current, future


def test_a_future_log_is_created_in_the_target_dir_with_kafkas_name(dirs):
    logs, current, future = moving(dirs)
    assert future.directory.parent == logs.log_dirs[1]
    assert future.directory.name.startswith("t-0.")
    assert future.directory.name.endswith("-future")
    assert len(future.directory.name) == len("t-0.") + 32 + len("-future")
    assert read_topic_id(future.directory) == TOPIC_ID
    assert logs.future_log("t", 0) is future and logs.get_log("t", 0) is current
    # future logs count as partitions of their directory for placement (as in Kafka)
    assert logs.partition_counts() == {logs.log_dirs[0]: 1, logs.log_dirs[1]: 1}
    assert logs.cleaner.manager.is_cleaning_in_state_paused(("t", 0))


def test_the_swap_puts_the_future_log_in_place_and_deletes_the_old_one(dirs):
    logs, current, future = moving(dirs)
    current.assign_epoch_start_offset(5, current.log_end_offset)  # a leader not written yet
    expected = all_bytes(current)
    copy_all(current, future)
    swapped = logs.replace_current_with_future("t", 0)
    assert swapped is future and logs.get_log("t", 0) is future
    assert logs.future_log("t", 0) is None
    assert future.directory == logs.log_dirs[1] / "t-0"
    assert all_bytes(future) == expected
    assert future.leader_epochs.entries == current.leader_epochs.entries
    assert not logs.cleaner.manager.is_cleaning_in_state_paused(("t", 0))
    # appends go on in the new place, and survive a restart
    fill(future, 2, start=100)
    expected = all_bytes(future)
    logs.scheduler.submit(lambda: None)
    logs.shutdown()
    assert dir_names(dirs[0]) == []
    again = manager(dirs)
    assert again.get_log("t", 0).directory.parent == again.log_dirs[1]
    assert all_bytes(again.get_log("t", 0)) == expected
    again.shutdown()


def test_a_swap_before_the_future_log_caught_up_is_refused(dirs):
    logs, _, _ = moving(dirs)
    with pytest.raises(Exception, match="caught up"):
        logs.replace_current_with_future("t", 0)
    assert dir_names(dirs[0]) == ["t-0"]
    logs.shutdown()


def test_a_restart_mid_move_keeps_both_logs_and_resumes(dirs):
    logs, current, future = moving(dirs)
    expected = all_bytes(current)
    future.append_as_follower(current.read(0, 200).records.to_bytes())  # part of it
    copied = future.log_end_offset
    logs.shutdown()
    again = manager(dirs)
    assert all_bytes(again.get_log("t", 0)) == expected
    resumed = again.future_log("t", 0)
    assert resumed is not None and resumed.directory.parent == again.log_dirs[1]
    assert 0 < resumed.log_end_offset == copied
    again.shutdown()


def test_a_crash_after_the_commit_point_finishes_the_swap(dirs):
    """The swap commits by renaming the current dir to -delete: a crash right after
    leaves a -delete and a -future dir, and the start-up finishes the swap."""
    logs, current, future = moving(dirs)
    copy_all(current, future)
    expected = all_bytes(current)
    current.rename_dir(current.directory.with_name(f"t-0.{uuid.uuid4().hex}-delete"))
    future.flush()  # the swap flushes it before the commit; then the process dies
    again = manager(dirs)
    log = again.get_log("t", 0)
    assert log.directory == again.log_dirs[1] / "t-0"
    assert again.future_log("t", 0) is None
    assert all_bytes(log) == expected
    assert dir_names(dirs[0]) == []
    again.shutdown()


def test_a_delete_dir_is_deleted_at_startup(dirs):
    logs = manager(dirs)
    fill(logs.get_or_create_log("t", 0, dirs[0]), 3)
    logs.shutdown()
    stale = dirs[1] / f"t-0.{uuid.uuid4().hex}-delete"
    stale.mkdir()
    (stale / "00000000000000000000.log").write_bytes(b"old")
    again = manager(dirs)
    assert not stale.exists()
    assert again.get_log("t", 0).log_end_offset == 9
    again.shutdown()


def test_a_delete_dir_of_a_partition_without_a_current_log_is_kept(dirs):
    """Its replacement may be in a directory that failed: never the last copy deleted."""
    dirs[0].mkdir()
    stale = dirs[0] / f"t-0.{uuid.uuid4().hex}-delete"
    stale.mkdir()
    again = manager(dirs)
    assert stale.exists() and again.get_log("t", 0) is None
    again.shutdown()


def test_a_truncation_of_the_current_log_truncates_the_future_log(dirs):
    logs, current, future = moving(dirs)
    copy_all(current, future)
    logs.truncate_to("t", 0, 12)
    assert current.log_end_offset == future.log_end_offset == 12
    assert all_bytes(future) == all_bytes(current)
    logs.shutdown()


def test_deleting_a_partition_deletes_its_future_log_too(dirs):
    logs, current, future = moving(dirs)
    logs.delete_log("t", 0)
    assert logs.future_log("t", 0) is None and logs.get_log("t", 0) is None
    assert dir_names(dirs[0]) == dir_names(dirs[1]) == []
    logs.shutdown()


def test_dropping_a_move_keeps_the_current_log(dirs):
    logs, current, future = moving(dirs)
    logs.delete_future_log("t", 0)
    assert not future.directory.exists() and logs.get_log("t", 0) is current
    assert not logs.cleaner.manager.is_cleaning_in_state_paused(("t", 0))
    logs.shutdown()


def test_a_preferred_dir_is_where_the_log_is_created(dirs):
    logs = manager(dirs)
    logs.get_or_create_log("x", 0, dirs[1])  # so that placement alone would pick dir a
    logs.maybe_update_preferred_dir("t", 0, logs.log_dirs[1])
    assert logs.get_or_create_log("t", 0).directory.parent == logs.log_dirs[1]
    logs.delete_log("t", 0)
    assert logs.get_or_create_log("t", 0).directory.parent == logs.log_dirs[0]  # used once
    logs.shutdown()


def test_draining_and_offline_dirs_take_no_new_partition(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b", tmp_path / "c"]
    logs = manager(dirs)
    logs.set_draining_dirs([dirs[0]])
    logs.handle_dir_failure(dirs[1], "test")
    assert {logs.get_or_create_log("t", p).directory.parent.name for p in range(4)} == {"c"}
    logs.set_draining_dirs([])
    assert logs.get_or_create_log("u", 0).directory.parent.name == "a"
    with pytest.raises(LogDirNotFoundError):
        logs.set_draining_dirs([tmp_path / "elsewhere"])
    logs.shutdown()


def test_partitions_to_drain_leaves_out_the_ones_moving(dirs):
    logs = manager(dirs)
    for p in range(3):
        logs.get_or_create_log("t", p, dirs[0])
    logs.set_draining_dirs([dirs[0]])
    assert logs.partitions_to_drain() == [("t", 0), ("t", 1), ("t", 2)]
    logs.create_future_log("t", 1, logs.log_dirs[1])
    assert logs.partitions_to_drain() == [("t", 0), ("t", 2)]
    logs.shutdown()


def test_a_future_log_cannot_go_to_an_offline_dir_or_its_current_dir(dirs):
    logs = manager(dirs)
    logs.get_or_create_log("t", 0, dirs[0])
    with pytest.raises(Exception, match="already"):
        logs.create_future_log("t", 0, logs.log_dirs[0])
    logs.handle_dir_failure(dirs[1], "test")
    with pytest.raises(KafkaStorageError):
        logs.create_future_log("t", 0, logs.log_dirs[1])
    logs.shutdown()
