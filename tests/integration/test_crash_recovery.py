"""kill -9 in the middle of a produce: after the restart every acknowledged record is
there, at the offset it was acknowledged with and in order, and the broker recovered its
logs (no clean-shutdown marker, a torn tail cut off)."""

from __future__ import annotations

import struct
import threading
import time
from pathlib import Path

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kazoo.client import KazooClient

from integration.broker_process import BrokerProcess
from integration.clients import create_topics
from waiting import wait_until

TOPIC = "crash"
PARTITIONS = 2


class ContinuousProducer(threading.Thread):
    """Sends ``r<sequence>`` records round-robin over the partitions until stopped, and
    keeps what the broker acknowledged: (partition, offset, value)."""

    def __init__(self, bootstrap: str, acks):
        super().__init__(daemon=True)
        self.producer = KafkaProducer(
            bootstrap_servers=bootstrap,
            acks=acks,
            enable_idempotence=False,
            retries=0,
            linger_ms=1,
            max_block_ms=1000,
            # Batches still waiting when the broker dies fail soon, so close() returns.
            request_timeout_ms=1000,
            delivery_timeout_ms=1500,
        )
        self.acknowledged: list[tuple[int, int, bytes]] = []
        self.failed = 0
        self._stopping = threading.Event()

    def run(self) -> None:
        sequence = 0
        while not self._stopping.is_set():
            value = b"r%09d" % sequence
            try:
                future = self.producer.send(TOPIC, value=value, partition=sequence % PARTITIONS)
            except Exception:
                self.failed += 1
                continue
            future.add_callback(
                lambda m, v=value: self.acknowledged.append((m.partition, m.offset, v))
            )
            future.add_errback(lambda _: setattr(self, "failed", self.failed + 1))
            sequence += 1
            if sequence % 200 == 0:
                time.sleep(0.001)  # let the sender keep up

    def stop(self) -> None:
        self._stopping.set()
        self.join(10)
        self.producer.close(timeout=10)


def wait_until_session_gone(zk_chroot: str, broker_id: int, timeout: float = 30) -> None:
    """A killed broker's registration lives until ZooKeeper expires its session."""
    zk = KazooClient(hosts=zk_chroot)
    zk.start(timeout=10)
    try:
        wait_until(
            lambda: not (zk.exists(f"/brokers/ids/{broker_id}") or zk.exists("/controller")),
            "the killed broker's session expired (its registration and /controller gone)",
            timeout,
            interval=0.2,
        )
    finally:
        zk.stop()
        zk.close()


def tear_the_tail(log_dirs, partition: int) -> Path:
    """Half a batch at the end of the partition's active segment, as a write cut short."""
    segment = max(
        (s for d in log_dirs for s in Path(d).glob(f"{TOPIC}-{partition}/*.log")),
        key=lambda s: s.name,
    )
    with segment.open("ab") as file:
        # baseOffset, a batchLength of 4 KiB, then only 50 bytes of it.
        file.write(struct.pack(">qi", 1 << 40, 4096) + b"\xab" * 50)
    return segment


def read_partition(bootstrap: str, partition: int) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = TopicPartition(TOPIC, partition)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    records: list[tuple[int, bytes]] = []

    def read_to_end() -> bool:
        for messages in consumer.poll(timeout_ms=500).values():
            records.extend((m.offset, m.value) for m in messages)
        return consumer.position(tp) >= end

    try:
        wait_until(read_to_end, f"{TOPIC}-{partition} read up to {end}", 30, interval=0)
    finally:
        consumer.close()
    return records


@pytest.mark.parametrize("acks", [1, "all"])
def test_acknowledged_records_survive_kill_9(tmp_path, zk_chroot, acks):
    broker = BrokerProcess(
        tmp_path / "broker",
        zk_chroot,
        # ZooKeeper's shortest session (two ticks): the restart waits for its expiry.
        overrides={"zookeeper.session.timeout.ms": "4000"},
    ).start()
    try:
        create_topics(broker.bootstrap, [TOPIC], PARTITIONS)
        producer = ContinuousProducer(broker.bootstrap, acks)
        producer.start()
        wait_until(
            lambda: len(producer.acknowledged) >= 5000, "5000 records acknowledged", interval=0.05
        )
        assert producer.is_alive()  # still sending as the broker dies
        broker.kill()
        producer.stop()
        acknowledged = list(producer.acknowledged)
        assert len(acknowledged) >= 5000
        assert producer.failed > 0, "the kill did not interrupt the produce"
        assert not any((d / ".kafka_cleanshutdown").exists() for d in broker.log_dirs)
        torn = tear_the_tail(broker.log_dirs, 0)
        torn_size = torn.stat().st_size

        wait_until_session_gone(zk_chroot, broker.broker_id)
        broker.start()
        log = broker.log()
        for partition in range(PARTITIONS):
            assert f"/{TOPIC}-{partition}/00000000000000000000.log" in "".join(
                line for line in log.splitlines() if "recovering unflushed segment" in line
            )
        assert f"{torn}: truncating 62 invalid bytes" in log
        assert torn.stat().st_size == torn_size - 62  # the torn batch was cut off

        ends = {}
        for partition in range(PARTITIONS):
            stored = read_partition(broker.bootstrap, partition)
            ends[partition] = len(stored)
            assert [offset for offset, _ in stored] == list(range(len(stored)))
            # The log holds the records in the order they were sent (a record sent but
            # never acknowledged may be there too).
            assert [v for _, v in stored] == sorted(v for _, v in stored)
            acked = sorted((o, v) for p, o, v in acknowledged if p == partition)
            assert acked, partition
            assert set(acked) <= set(stored)

        # The recovered log takes appends at its end again.
        after = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=acks)
        end = after.send(TOPIC, value=b"after", partition=0).get(timeout=30).offset
        after.close()
        assert end == ends[0]
        assert read_partition(broker.bootstrap, 0)[-1] == (end, b"after")
    finally:
        assert broker.stop() == 0
