import subprocess
import time
import uuid

import pytest

from storage.helpers import batch
from tidelog.records import build_batch, iter_decoded_batches
from tidelog.storage.checkpoints import read_offset_checkpoint, read_properties
from tidelog.storage.cleaner import CleanerConfig
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import KafkaStorageError
from tidelog.storage.log_manager import (
    CLEAN_SHUTDOWN_MARKER,
    InconsistentBrokerIdError,
    InconsistentClusterIdError,
    LogManager,
)
from tidelog.storage.partition_metadata import read_topic_id


def manager(dirs, **kwargs) -> LogManager:
    instance = LogManager(
        dirs, kwargs.pop("config", LogConfig(segment_bytes=600)), broker_id=1, **kwargs
    )
    instance.startup()
    return instance


def test_new_partitions_go_to_the_directory_with_fewest(tmp_path):
    """Seed 000: three busy disks and a new empty one — new partitions land on the new
    one until the counts even out, then spread round the four."""
    dirs = [tmp_path / f"disk{i}" for i in range(3)]
    first = manager(dirs)
    for p in range(9):
        first.get_or_create_log("old", p)
    assert set(first.partition_counts().values()) == {3}
    first.shutdown()
    dirs.append(tmp_path / "disk3")
    second = manager(dirs)
    placed = [second.get_or_create_log("new", p).directory.parent.name for p in range(7)]
    assert placed[:3] == ["disk3"] * 3
    assert sorted(placed[3:]) == ["disk0", "disk1", "disk2", "disk3"]
    assert set(second.partition_counts().values()) == {4}


def test_draining_directory_takes_no_new_partitions(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    logs = manager(dirs)
    logs.mark_draining(tmp_path / "b")
    assert {logs.get_or_create_log("t", p).directory.parent.name for p in range(4)} == {"a"}
    logs.mark_draining(tmp_path / "b", draining=False)
    assert logs.get_or_create_log("t", 4).directory.parent.name == "b"


def test_clean_shutdown_marker_and_checkpoints(tmp_path):
    dirs = [tmp_path / "a", tmp_path / "b"]
    logs = manager(dirs)
    for p in range(2):
        log = logs.get_or_create_log("t", p)
        for i in range(10):
            log.append_as_leader(batch(2, start=2 * i, size=40))
    logs.get_log("t", 0).maybe_increment_log_start_offset(5)
    logs.shutdown()
    for directory in dirs:
        assert (directory / CLEAN_SHUTDOWN_MARKER).exists()
        assert read_properties(directory / "meta.properties")["broker.id"] == "1"
    points = {
        **read_offset_checkpoint(dirs[0] / "recovery-point-offset-checkpoint"),
        **read_offset_checkpoint(dirs[1] / "recovery-point-offset-checkpoint"),
    }
    assert points == {("t", 0): 20, ("t", 1): 20}
    starts = {
        **read_offset_checkpoint(dirs[0] / "log-start-offset-checkpoint"),
        **read_offset_checkpoint(dirs[1] / "log-start-offset-checkpoint"),
    }
    assert starts == {("t", 0): 5}
    again = manager(dirs)
    assert again.get_log("t", 0).log_start_offset == 5
    assert again.get_log("t", 1).log_end_offset == 20
    assert not any((d / CLEAN_SHUTDOWN_MARKER).exists() for d in dirs)  # consumed at startup


def test_unclean_shutdown_recovers_a_torn_tail(tmp_path):
    logs = manager([tmp_path / "a"])
    log = logs.get_or_create_log("t", 0)
    for i in range(10):
        log.append_as_leader(batch(2, start=2 * i, size=40))
    logs.checkpoint()
    active = log.active_segment.log_path
    with open(active, "r+b") as handle:  # the crash tore the last write
        handle.truncate(active.stat().st_size - 3)
    torn_size = active.stat().st_size
    again = manager([tmp_path / "a"])  # no clean-shutdown marker was written
    recovered = again.get_log("t", 0)
    assert recovered.log_end_offset == 18
    assert active.stat().st_size < torn_size  # the torn batch is gone from the file
    recovered.append_as_leader(batch(1, start=99))
    decoded = list(iter_decoded_batches(recovered.read(18, 1 << 20).records.to_bytes()))
    assert [r.offset for b in decoded for r in b.records] == [18]


def test_meta_properties_of_another_broker_refuses_to_start(tmp_path):
    manager([tmp_path / "a"]).shutdown()
    other = LogManager([tmp_path / "a"], broker_id=2)
    with pytest.raises(InconsistentBrokerIdError, match="broker 1"):
        other.startup()


def test_unusable_directory_goes_offline_at_startup(tmp_path):
    broken = tmp_path / "broken"
    broken.write_text("a file where a directory should be")
    failures = []
    logs = manager([tmp_path / "good", broken], on_dir_failure=lambda d, r: failures.append(d))
    assert list(logs.offline_dirs) == [broken.resolve()] and failures == [broken.resolve()]
    assert logs.get_or_create_log("t", 0).directory.parent.name == "good"


@pytest.fixture
def tiny_disk(tmp_path):
    """A real 256 KiB filesystem that fills up."""
    mount_point = tmp_path / "tiny"
    mount_point.mkdir()
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(mount_point)], check=True
    )
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=True)


def test_full_disk_takes_only_its_directory_offline(tmp_path, tiny_disk):
    failures = []
    config = LogConfig(segment_bytes=64 * 1024, segment_index_bytes=4096)
    logs = manager(
        [tmp_path / "big", tiny_disk],
        config=config,
        on_dir_failure=lambda d, r: failures.append((d, r)),
    )
    on_tiny = logs.get_or_create_log("t", 0, tiny_disk)
    on_big = logs.get_or_create_log("t", 1, tmp_path / "big")
    payload = batch(20, size=1000)
    with pytest.raises(KafkaStorageError):
        for _ in range(1000):
            logs.guarded(on_tiny, lambda: on_tiny.append_as_leader(payload))
    assert [d for d, _ in failures] == [tiny_disk.resolve()]
    assert "No space left" in failures[0][1]
    assert logs.get_log("t", 0) is None  # its partition is offline
    assert logs.offline_dirs.keys() == {tiny_disk.resolve()}
    for _ in range(5):  # the other directory keeps serving
        logs.guarded(on_big, lambda: on_big.append_as_leader(payload))
    assert on_big.log_end_offset == 100
    assert logs.get_or_create_log("t", 2).directory.parent == (tmp_path / "big").resolve()


def test_cleaner_threads_compact_and_retention_skips_compacted_logs(tmp_path):
    compacted = LogConfig(
        segment_bytes=600,
        cleanup_policy=("compact",),
        retention_ms=1,
        min_cleanable_dirty_ratio=0.01,
    )
    logs = LogManager(
        [tmp_path / "a"],
        LogConfig(segment_bytes=600, retention_ms=1),
        broker_id=1,
        topic_configs={"state": compacted},
        cleaner_config=CleanerConfig(
            log_cleaner_backoff_ms=20, log_cleaner_dedupe_buffer_size=1 << 20
        ),
    )
    logs.startup()
    try:
        log = logs.get_or_create_log("state", 0)
        for round_ in range(6):
            for key in range(5):
                log.append_as_leader(build_batch([(f"k{key}", f"v{round_}")], timestamp=1))
        log.roll()
        assert logs.cleaner.wait_until_cleaned(log, log.active_segment.base_offset, timeout=20)
        values = {}
        for decoded in iter_decoded_batches(log.read(0, 1 << 20).records.to_bytes()):
            for record in decoded.records:
                assert record.key not in values  # one value per key once compacted
                values[record.key] = record.value
        assert values == {f"k{key}".encode(): b"v5" for key in range(5)}
        segments = len(log.segments)
        assert logs.cleanup_logs() == 0  # retention.ms=1 does not apply to compact topics
        assert len(log.segments) == segments
        checkpoint = tmp_path / "a" / "cleaner-offset-checkpoint"
        assert read_offset_checkpoint(checkpoint)[("state", 0)] == log.active_segment.base_offset
        logs.delete_log("state", 0)
        assert ("state", 0) not in read_offset_checkpoint(checkpoint)
    finally:
        logs.shutdown()
    assert not logs.cleaner.is_running


def test_a_topic_switched_to_compact_is_cleaned_without_waiting_out_the_backoff(tmp_path):
    """With a back-off of an hour, only the wake-up of the config change can start it."""
    logs = LogManager(
        [tmp_path / "a"],
        LogConfig(segment_bytes=600),
        broker_id=1,
        cleaner_config=CleanerConfig(
            log_cleaner_backoff_ms=3_600_000, log_cleaner_dedupe_buffer_size=1 << 20
        ),
    )
    logs.startup()
    try:
        log = logs.get_or_create_log("state", 0)
        for round_ in range(6):
            for key in range(5):
                log.append_as_leader(build_batch([(f"k{key}", f"v{round_}")], timestamp=1))
        log.roll()
        time.sleep(0.2)  # the cleaner thread is in its back-off, having found nothing
        compacted = LogConfig(
            segment_bytes=600, cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.01
        )
        logs.set_topic_config("state", compacted)
        tp = ("state", 0)
        deadline = time.monotonic() + 60
        while logs.cleaner.manager.all_cleaner_checkpoints().get(tp, -1) < log.log_end_offset:
            assert time.monotonic() < deadline, "not cleaned: the back-off was waited out"
            time.sleep(0.01)
    finally:
        logs.shutdown()


def test_offline_partition_is_not_recreated_elsewhere(tmp_path):
    logs = manager([tmp_path / "a", tmp_path / "b"])
    log = logs.get_or_create_log("t", 0, tmp_path / "a")
    logs.handle_dir_failure(tmp_path / "a", "disk pulled")
    with pytest.raises(KafkaStorageError, match="offline"):
        logs.get_or_create_log("t", 0)
    assert not (tmp_path / "b" / "t-0").exists()
    assert log.directory.exists()


def test_malformed_checkpoint_means_full_recovery_not_a_failed_start(tmp_path, caplog):
    logs = manager([tmp_path / "a"])
    log = logs.get_or_create_log("t", 0)
    for i in range(10):
        log.append_as_leader(batch(2, start=2 * i, size=40))
    logs.shutdown()
    (tmp_path / "a" / "recovery-point-offset-checkpoint").write_text("garbage\n")
    (tmp_path / "a" / CLEAN_SHUTDOWN_MARKER).unlink()
    again = manager([tmp_path / "a"])
    assert not again.offline_dirs
    assert again.get_log("t", 0).log_end_offset == 20
    assert any("recovering every log" in m for m in caplog.messages)


def test_meta_properties_of_another_cluster_refuses_to_start(tmp_path):
    LogManager([tmp_path / "a"], broker_id=1, cluster_id="blue").startup()
    kept = LogManager([tmp_path / "a"], broker_id=1)  # no cluster id yet: keep the file's
    kept.startup()
    assert read_properties(tmp_path / "a" / "meta.properties")["cluster.id"] == "blue"
    with pytest.raises(InconsistentClusterIdError, match="cluster blue"):
        LogManager([tmp_path / "a"], broker_id=1, cluster_id="green").startup()


def test_a_log_of_a_deleted_topic_with_the_same_name_is_replaced(tmp_path):
    old_id, new_id = uuid.UUID(int=1), uuid.UUID(int=2)
    logs = manager([tmp_path / "a"])
    old = logs.get_or_create_log("t", 0, topic_id=old_id)
    old.append_as_leader(batch(3))
    assert (old.directory / "partition.metadata").read_text() == (
        "version: 0\ntopic_id: AAAAAAAAAAAAAAAAAAAAAQ\n"
    )
    assert logs.get_or_create_log("t", 0, topic_id=old_id) is old
    logs.shutdown()

    logs = manager([tmp_path / "a"])  # the broker restarts with the old directory
    new = logs.get_or_create_log("t", 0, topic_id=new_id)
    assert new.log_end_offset == 0
    assert read_topic_id(new.directory) == new_id
    logs.shutdown()


def test_a_log_without_a_recorded_topic_id_is_adopted(tmp_path):
    logs = manager([tmp_path / "a"])
    log = logs.get_or_create_log("t", 0)
    log.append_as_leader(batch(2))
    assert read_topic_id(log.directory) is None
    assert logs.get_or_create_log("t", 0, topic_id=uuid.UUID(int=7)) is log
    assert log.log_end_offset == 2 and read_topic_id(log.directory) == uuid.UUID(int=7)
    logs.shutdown()
