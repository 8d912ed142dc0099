"""The log-dir mover: AlterReplicaLogDirs' errors, the local copy of a future log while
the current one keeps taking appends, the swap, truncations and start offsets followed,
the quota, and draining directories; on real logs and a real replica manager."""

from __future__ import annotations

import asyncio
import uuid

import pytest

from tidelog.protocol.errors import ErrorCode
from tidelog.records import build_batch
from tidelog.replication.log_dir_mover import LogDirMover
from tidelog.replication.replica_manager import ReplicaManager
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log
from tidelog.storage.log_manager import LogManager
from waiting import wait_until

TOPIC_ID = uuid.UUID(int=3)


@pytest.fixture
def replicas(tmp_path):
    logs = LogManager(
        [tmp_path / "a", tmp_path / "b"],
        LogConfig(segment_bytes=20_000, segment_index_bytes=4096, file_delete_delay_ms=0),
        broker_id=1,
    )
    logs.startup()
    yield ReplicaManager(1, logs)
    logs.shutdown()


def host(replicas: ReplicaManager, index: int = 0, *, leader: int = 1, epoch: int = 1) -> None:
    code = replicas.become_leader_or_follower(
        "t", TOPIC_ID, index, leader=leader, leader_epoch=epoch, replicas=[1], isr=[1]
    )
    assert code == ErrorCode.NONE


def produce(replicas: ReplicaManager, count: int, index: int = 0) -> None:
    for i in range(count):
        records = build_batch([(f"k{i}".encode(), b"v" * 100)] * 3)
        assert replicas.append("t", index, records, acks=1).error == ErrorCode.NONE


def all_bytes(log: Log) -> bytes:
    return b"".join(segment.log.read(0, segment.size) for segment in log.segments)


def dir_of(replicas: ReplicaManager, index: int = 0):
    return replicas.partitions[("t", index)].log.directory


def run_until_idle(mover: LogDirMover, between=lambda: None) -> int:
    steps = 0
    while mover.step():
        between()
        steps += 1
    return steps


def test_alter_replica_log_dir_errors_are_kafkas(replicas, tmp_path):
    logs = replicas.log_manager
    assert (
        replicas.alter_replica_log_dir("t", 0, str(tmp_path / "c")) == ErrorCode.LOG_DIR_NOT_FOUND
    )
    # not hosted yet: the directory is remembered for when the log is created
    target = str(tmp_path / "b")
    assert replicas.alter_replica_log_dir("t", 0, target) == ErrorCode.REPLICA_NOT_AVAILABLE
    host(replicas)
    assert dir_of(replicas).parent == tmp_path / "b"
    assert replicas.alter_replica_log_dir("t", 0, target) == ErrorCode.NONE  # there already
    assert logs.future_log("t", 0) is None
    logs.handle_dir_failure(tmp_path / "a", "test")
    assert replicas.alter_replica_log_dir("t", 0, str(tmp_path / "a")) == (
        ErrorCode.KAFKA_STORAGE_ERROR
    )


def test_a_new_destination_or_the_current_dir_ends_the_move_in_flight(replicas, tmp_path):
    logs = replicas.log_manager
    host(replicas)
    produce(replicas, 5)
    here, there = (
        dir_of(replicas).parent,
        ({tmp_path / "a", tmp_path / "b"} - {dir_of(replicas).parent}).pop(),
    )
    assert replicas.alter_replica_log_dir("t", 0, str(there)) == ErrorCode.NONE
    future = logs.future_log("t", 0)
    assert future.directory.parent == there
    assert replicas.alter_replica_log_dir("t", 0, str(here)) == ErrorCode.NONE
    assert logs.future_log("t", 0) is None and not future.directory.exists()


def test_a_move_copies_while_producing_then_swaps(replicas, tmp_path):
    logs = replicas.log_manager
    host(replicas)
    produce(replicas, 40)
    source = dir_of(replicas).parent
    target = ({tmp_path / "a", tmp_path / "b"} - {source}).pop()
    assert replicas.alter_replica_log_dir("t", 0, str(target)) == ErrorCode.NONE
    mover = LogDirMover(replicas, max_bytes=1200)
    steps = run_until_idle(mover, between=lambda: produce(replicas, 1))
    assert steps > 5  # it took many steps, with appends in between
    partition = replicas.partitions[("t", 0)]
    assert partition.log.directory == target / "t-0"
    assert logs.get_log("t", 0) is partition.log and logs.future_log("t", 0) is None
    assert partition.log.log_end_offset == 3 * (40 + steps)
    produce(replicas, 2)  # appends go to the new log
    expected = all_bytes(partition.log)
    logs.scheduler.submit(lambda: None)
    logs.shutdown()
    assert not any(p.is_dir() for p in source.iterdir())
    again = LogManager([tmp_path / "a", tmp_path / "b"], LogConfig(), broker_id=1)
    again.startup()
    assert all_bytes(again.get_log("t", 0)) == expected
    again.shutdown()


def test_the_future_log_follows_truncation_and_start_offset(replicas, tmp_path):
    """A follower's current log diverged: cut and written again, and its start moved up;
    the moved replica has exactly the current log's records and epochs."""
    logs = replicas.log_manager
    host(replicas, leader=2)
    current = replicas.partitions[("t", 0)].log
    for epoch in (1, 2, 3):
        for _ in range(4):
            follow(current, epoch)
    target = ({tmp_path / "a", tmp_path / "b"} - {current.directory.parent}).pop()
    replicas.alter_replica_log_dir("t", 0, str(target))
    future = logs.future_log("t", 0)
    mover = LogDirMover(replicas, max_bytes=1)  # one batch a step
    for _ in range(11):
        assert mover.step()
    assert future.log_end_offset == 22 and current.log_end_offset == 24
    replicas.truncate_follower("t", 0, 3, 2, 14)  # the leader never had epoch 3
    assert future.log_end_offset == current.log_end_offset == 14
    follow(current, 4)
    follow(current, 4)
    current.maybe_increment_log_start_offset(4)
    expected, epochs = all_bytes(current), current.leader_epochs.entries
    run_until_idle(mover)
    moved = replicas.partitions[("t", 0)].log
    assert moved is future and moved.directory == target / "t-0"
    assert moved.log_start_offset == 4 and moved.log_end_offset == 18
    assert moved.leader_epochs.entries == epochs
    assert all_bytes(moved) == expected


def test_a_quota_holds_the_copy_back(replicas, tmp_path):
    host(replicas)
    produce(replicas, 10)
    target = ({tmp_path / "a", tmp_path / "b"} - {dir_of(replicas).parent}).pop()
    replicas.alter_replica_log_dir("t", 0, str(target))

    class Quota:
        recorded = 0
        exceeded = True

        def record(self, nbytes: int) -> None:
            self.recorded += nbytes

        def is_exceeded(self) -> bool:
            return self.exceeded

    quota = Quota()
    mover = LogDirMover(replicas, quota=quota, max_bytes=500)
    assert not mover.step()
    assert replicas.log_manager.future_log("t", 0).log_end_offset == 0
    quota.exceeded = False
    run_until_idle(mover)
    mover.step()
    assert dir_of(replicas).parent == target
    assert quota.recorded == replicas.partitions[("t", 0)].log.size


def test_draining_moves_every_replica_off_one_at_a_time(replicas, tmp_path):
    logs = replicas.log_manager
    for index in range(4):
        host(replicas, index)
        produce(replicas, 3, index)
    draining = tmp_path / "a"
    assert any(dir_of(replicas, i).parent == draining for i in range(4))
    logs.set_draining_dirs([draining])
    mover = LogDirMover(replicas, concurrent_drains=1)
    for _ in range(20):
        mover.step()
        assert len(logs.future_logs) <= 1
    assert all(dir_of(replicas, i).parent == tmp_path / "b" for i in range(4))
    wait_until(lambda: not logs.scheduler.pending, "the old dirs' deletion run", interval=0.01)
    assert not any(p.is_dir() for p in draining.iterdir())
    host(replicas, 9)  # and a new partition does not land there
    assert dir_of(replicas, 9).parent == tmp_path / "b"


def test_a_partition_not_hosted_waits_and_a_stopped_one_drops_its_move(replicas, tmp_path):
    logs = replicas.log_manager
    host(replicas)
    produce(replicas, 3)
    target = ({tmp_path / "a", tmp_path / "b"} - {dir_of(replicas).parent}).pop()
    replicas.alter_replica_log_dir("t", 0, str(target))
    future = logs.future_log("t", 0)

    async def stop():
        replicas.stop_replica("t", 0, delete=True)

    asyncio.run(stop())
    assert logs.future_log("t", 0) is None and not future.directory.exists()
    assert not LogDirMover(replicas).step()


def follow(log: Log, epoch: int) -> None:
    """A batch of two records as a follower gets it from a leader of ``epoch``."""
    records = bytearray(build_batch([(b"k", b"v" * 50)] * 2))
    records[0:8] = log.log_end_offset.to_bytes(8, "big")
    records[12:16] = epoch.to_bytes(4, "big")
    log.append_as_follower(bytes(records))
