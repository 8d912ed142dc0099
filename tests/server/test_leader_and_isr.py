"""LeaderAndIsr on a real broker (in this process, on the session's ZooKeeper): the file
work of partitions new to the broker stays off its event loop."""

from __future__ import annotations

import asyncio
import threading
import uuid

from tidelog.controller.requests import PartitionLeadership
from tidelog.protocol.errors import ErrorCode
from tidelog.server.broker import Broker
from tidelog.server.config import BrokerConfig
from tidelog.storage import leader_epoch
from tidelog.storage.leader_epoch import EpochEntry


def test_new_partitions_record_their_leader_epoch_off_the_event_loop(
    zk_chroot, tmp_path, monkeypatch
):
    """Each new leader's epoch checkpoint (two fsyncs) is written by a worker thread:
    a broker taking the lead of many new partitions at once keeps answering meanwhile."""
    writers: list[threading.Thread] = []
    write = leader_epoch.write_leader_epoch_checkpoint

    def recorded_write(path, entries):
        writers.append(threading.current_thread())
        write(path, entries)

    monkeypatch.setattr(leader_epoch, "write_leader_epoch_checkpoint", recorded_write)
    config = BrokerConfig(
        {
            "zookeeper.connect": zk_chroot,
            "broker.id": "1",
            "log.dirs": str(tmp_path / "data"),
            "listeners": "PLAINTEXT://127.0.0.1:0",
        }
    )
    topic_id = uuid.uuid4()
    states = [
        PartitionLeadership("orders", topic_id, index, 1, 3, (1,), (1,), controller_epoch=1)
        for index in range(8)
    ]

    async def scenario():
        broker = Broker(config)
        await broker.start()
        try:
            loop_thread = threading.current_thread()
            error, errors = await broker.handle_leader_and_isr(1, broker.controller.epoch, states)
            assert error == ErrorCode.NONE
            assert set(errors.values()) == {ErrorCode.NONE}
            assert len(writers) == len(states)
            assert loop_thread not in writers
            for index in range(len(states)):
                partition = broker.replica_manager.partitions[("orders", index)]
                assert partition.is_leader
                assert partition.log.leader_epochs.entries == (EpochEntry(3, 0),)
        finally:
            await broker.shutdown()

    asyncio.run(scenario())
