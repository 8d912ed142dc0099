"""LeaderAndIsr on a real broker (in this process, on the session's ZooKeeper): the file
work of taking the lead (new partitions, followers, leaders at a new epoch) stays off its
event loop and is done before the request is answered; LeaderAndIsr and StopReplica do
not interleave."""

from __future__ import annotations

import asyncio
import threading
import uuid

import pytest

from tidelog.controller.requests import PartitionLeadership, ReplicaToStop
from tidelog.protocol.errors import ErrorCode
from tidelog.records.builder import build_batch
from tidelog.server.broker import Broker
from tidelog.server.config import BrokerConfig
from tidelog.storage import leader_epoch
from tidelog.storage.leader_epoch import EpochEntry, read_leader_epoch_checkpoint

TOPIC_ID = uuid.uuid4()
PARTITIONS = range(8)


class CheckpointWrites:
    """Records the thread of every real leader-epoch checkpoint write; ``hold()`` makes
    the next writes wait until ``release()``."""

    def __init__(self, monkeypatch):
        self.threads: list[threading.Thread] = []
        self.entered = threading.Event()
        self._go = threading.Event()
        self._go.set()
        write = leader_epoch.write_leader_epoch_checkpoint

        def recorded_write(path, entries):
            self.threads.append(threading.current_thread())
            self.entered.set()
            assert self._go.wait(30)
            write(path, entries)

        monkeypatch.setattr(leader_epoch, "write_leader_epoch_checkpoint", recorded_write)

    def hold(self) -> None:
        self.entered.clear()
        self._go.clear()

    def release(self) -> None:
        self._go.set()


@pytest.fixture
def writes(monkeypatch) -> CheckpointWrites:
    return CheckpointWrites(monkeypatch)


@pytest.fixture
def config(zk_chroot, tmp_path) -> BrokerConfig:
    return BrokerConfig(
        {
            "zookeeper.connect": zk_chroot,
            "broker.id": "1",
            "log.dirs": str(tmp_path / "data"),
            "listeners": "PLAINTEXT://127.0.0.1:0",
        }
    )


def leadership(leader: int, leader_epoch: int) -> list[PartitionLeadership]:
    """Partitions 0-7 of ``orders`` on brokers 1 and 2, led by ``leader``."""
    return [
        PartitionLeadership(
            "orders", TOPIC_ID, index, leader, leader_epoch, (1, 2), (1, 2), controller_epoch=1
        )
        for index in PARTITIONS
    ]


async def leader_and_isr(broker: Broker, states: list[PartitionLeadership]) -> None:
    error, errors = await broker.handle_leader_and_isr(2, broker.controller.epoch, states)
    assert error == ErrorCode.NONE
    assert set(errors.values()) == {ErrorCode.NONE}


async def storage_tasks_done(broker: Broker) -> None:
    """Until the storage scheduler has run every task submitted so far: it runs them one
    at a time, in order, so a task submitted now runs after them."""
    done = threading.Event()
    broker.log_manager.scheduler.submit(done.set)
    assert await asyncio.to_thread(done.wait, 30)


def run_with_broker(config: BrokerConfig, scenario) -> None:
    async def main():
        broker = Broker(config)
        await broker.start()
        try:
            await scenario(broker)
        finally:
            await broker.shutdown()

    asyncio.run(main())


def test_new_partitions_record_their_leader_epoch_off_the_event_loop(writes, config):
    """Each new leader's epoch checkpoint (two fsyncs) is written by a worker thread:
    a broker taking the lead of many new partitions at once keeps answering meanwhile."""

    async def scenario(broker):
        await leader_and_isr(broker, leadership(leader=1, leader_epoch=3))
        assert len(writes.threads) == len(PARTITIONS)
        assert threading.current_thread() not in writes.threads
        for index in PARTITIONS:
            partition = broker.replica_manager.partitions[("orders", index)]
            assert partition.is_leader
            assert partition.log.leader_epochs.entries == (EpochEntry(3, 0),)

    run_with_broker(config, scenario)


def test_followers_taking_the_lead_record_their_epoch_off_the_event_loop(writes, config):
    """A follower that becomes leader (failover; a preferred leader handed back after a
    restart) records its new epoch from its log end in a worker thread as well."""

    async def scenario(broker):
        await leader_and_isr(broker, leadership(leader=2, leader_epoch=3))
        for index in PARTITIONS:  # what the follower copied from leader 2
            records = build_batch([(b"k", b"v")] * 5, partition_leader_epoch=3)
            broker.replica_manager.append_as_follower("orders", index, 0, records, 5, 0)
        # The follower checkpoints the epoch its batches carry on the storage scheduler's
        # thread: those writes are done before the count starts, or one falls into it.
        await storage_tasks_done(broker)
        for index in PARTITIONS:
            log = broker.replica_manager.partitions[("orders", index)].log
            assert read_leader_epoch_checkpoint(log.leader_epochs.path) == [EpochEntry(3, 0)]
        writes.threads.clear()
        await leader_and_isr(broker, leadership(leader=1, leader_epoch=4))
        assert len(writes.threads) == len(PARTITIONS)
        assert threading.current_thread() not in writes.threads
        for index in PARTITIONS:
            partition = broker.replica_manager.partitions[("orders", index)]
            assert partition.is_leader and partition.leader_epoch == 4
            entries = partition.log.leader_epochs.entries
            assert entries == (EpochEntry(3, 0), EpochEntry(4, 5))
            # On disk before the LeaderAndIsr is answered.
            assert read_leader_epoch_checkpoint(partition.log.leader_epochs.path) == list(entries)

    run_with_broker(config, scenario)


def test_a_leader_at_a_new_epoch_records_it_off_the_event_loop(writes, config):
    """A leader that stays leader at a new epoch (its ISR shrank as a follower shut
    down) rewrites the checkpoint in a worker thread too."""

    async def scenario(broker):
        await leader_and_isr(broker, leadership(leader=1, leader_epoch=3))
        for index in PARTITIONS:
            records = build_batch([(b"k", b"v")] * 5)
            result = broker.replica_manager.append("orders", index, records, acks=1)
            assert result.error == ErrorCode.NONE
        writes.threads.clear()
        await leader_and_isr(broker, leadership(leader=1, leader_epoch=4))
        assert len(writes.threads) == len(PARTITIONS)
        assert threading.current_thread() not in writes.threads
        for index in PARTITIONS:
            log = broker.replica_manager.partitions[("orders", index)].log
            assert log.leader_epochs.entries == (EpochEntry(3, 0), EpochEntry(4, 5))
            assert read_leader_epoch_checkpoint(log.leader_epochs.path) == [
                EpochEntry(3, 0),
                EpochEntry(4, 5),
            ]

    run_with_broker(config, scenario)


def test_stop_replica_waits_for_a_leader_and_isr_in_progress(writes, config):
    """While a LeaderAndIsr waits for its file work, a StopReplica of the same partition
    waits its turn (Kafka's replicaStateChangeLock): it applies after, not under it."""

    async def scenario(broker):
        await leader_and_isr(broker, leadership(leader=2, leader_epoch=3))
        writes.hold()
        taking_lead = asyncio.create_task(
            leader_and_isr(broker, leadership(leader=1, leader_epoch=4))
        )
        assert await asyncio.to_thread(writes.entered.wait, 30)
        stop = asyncio.create_task(
            broker.handle_stop_replica(
                2, broker.controller.epoch, [ReplicaToStop("orders", 0, delete=False)]
            )
        )
        await asyncio.sleep(0.2)
        assert not stop.done(), "StopReplica ran while a LeaderAndIsr was under way"
        writes.release()
        await taking_lead
        assert await stop == ErrorCode.NONE
        assert not broker.replica_manager.partitions[("orders", 0)].is_leader
        assert broker.replica_manager.partitions[("orders", 1)].is_leader

    run_with_broker(config, scenario)
