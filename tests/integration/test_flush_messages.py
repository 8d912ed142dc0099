"""flush.messages=1 on a real broker: every record acknowledged with acks=1 is below the
recovery point the broker checkpoints, and survives a SIGKILL and a restart. And flush.ms
with the broker's flusher (``log.flush.scheduler.interval.ms``): the recovery point
reaches the end of a topic whose flush.ms has passed, not of one with the defaults.

What proves the fsync: a SIGKILL alone cannot, since the page cache outlives the process
and a record written but never fsynced is read back all the same. The recovery point
can: a broker moves it only by fsyncing the log up to it, and writes it to
``recovery-point-offset-checkpoint``, the file that decides what recovery re-validates
after a crash. So the test waits for a checkpoint that covers every acknowledged record
of the flush.messages=1 topic, kills the broker, and reads that file. A topic with the
defaults, produced to alike and checkpointed in the same file, keeps its recovery point
at 0 (its segment never rolls): without flush.messages at work, both would stay at 0 and
the wait would fail. That the fsync happens before the acknowledgement, not after it,
is what ``tests/storage/test_flush.py`` checks on the log itself."""

from __future__ import annotations

import time

from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from integration.broker_process import BrokerProcess
from integration.clients import create_topics
from integration.test_crash_recovery import wait_until_session_gone
from tidelog.storage.checkpoints import RECOVERY_POINT_CHECKPOINT, read_offset_checkpoint
from waiting import wait_until

DURABLE = "durable"  # flush.messages=1
LAZY = "lazy"  # Kafka's defaults
RECORDS = 20


def recovery_points(broker: BrokerProcess) -> dict[tuple[str, int], int]:
    checkpoint = broker.log_dirs[0] / RECOVERY_POINT_CHECKPOINT
    return read_offset_checkpoint(checkpoint) if checkpoint.exists() else {}


def consume(bootstrap: str, topic: str) -> list[tuple[int, bytes]]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    tp = TopicPartition(topic, 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    end = consumer.end_offsets([tp])[tp]
    records: list[tuple[int, bytes]] = []
    deadline = time.monotonic() + 30
    while consumer.position(tp) < end and time.monotonic() < deadline:
        for messages in consumer.poll(timeout_ms=500).values():
            records += [(m.offset, m.value) for m in messages]
    consumer.close()
    return records


def test_acknowledged_records_are_below_the_checkpointed_recovery_point(tmp_path, zk_chroot):
    broker = BrokerProcess(
        tmp_path / "broker",
        zk_chroot,
        log_dirs=1,
        overrides={
            # ZooKeeper's shortest session (two ticks): the restart waits for its expiry.
            "zookeeper.session.timeout.ms": "4000",
            "log.flush.offset.checkpoint.interval.ms": "100",
        },
    ).start()
    try:
        create_topics(broker.bootstrap, [DURABLE], 1, {"flush.messages": "1"})
        create_topics(broker.bootstrap, [LAZY], 1)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, retries=0)
        acknowledged = {DURABLE: [], LAZY: []}
        for sequence in range(RECORDS):
            for topic in (DURABLE, LAZY):
                value = b"%s-%03d" % (topic.encode(), sequence)
                sent = producer.send(topic, value=value, partition=0).get(timeout=30)
                acknowledged[topic].append((sent.offset, value))
        producer.close()
        assert [o for o, _ in acknowledged[DURABLE]] == list(range(RECORDS))

        wait_until(
            lambda: recovery_points(broker).get((DURABLE, 0)) == RECORDS
            and recovery_points(broker),
            f"a checkpointed recovery point of {RECORDS} for {DURABLE}",
        )
        broker.kill()

        checkpointed = recovery_points(broker)
        assert checkpointed[(DURABLE, 0)] == RECORDS
        assert checkpointed[(LAZY, 0)] == 0
        assert not (broker.log_dirs[0] / ".kafka_cleanshutdown").exists()

        wait_until_session_gone(zk_chroot, broker.broker_id)
        broker.start()
        assert f"{broker.log_dirs[0].resolve()} was not shut down cleanly" in broker.log()
        for topic in (DURABLE, LAZY):
            assert consume(broker.bootstrap, topic) == acknowledged[topic]
    finally:
        assert broker.stop() == 0


def test_the_flusher_moves_the_recovery_point_of_a_topic_whose_flush_ms_passed(tmp_path, zk_chroot):
    broker = BrokerProcess(
        tmp_path / "broker",
        zk_chroot,
        log_dirs=1,
        overrides={
            "log.flush.scheduler.interval.ms": "100",
            # unset, flush.ms would default to the flusher's interval, as in Kafka
            "log.flush.interval.ms": str(2**63 - 1),
            "log.flush.offset.checkpoint.interval.ms": "100",
        },
    ).start()
    try:
        create_topics(broker.bootstrap, ["timed"], 1, {"flush.ms": "200"})
        create_topics(broker.bootstrap, [LAZY], 1)
        producer = KafkaProducer(bootstrap_servers=broker.bootstrap, acks=1, retries=0)
        for sequence in range(RECORDS):
            for topic in ("timed", LAZY):
                producer.send(topic, value=b"%03d" % sequence, partition=0).get(timeout=30)
        producer.close()
        checkpointed = wait_until(
            lambda: recovery_points(broker).get(("timed", 0)) == RECORDS
            and recovery_points(broker),
            "the flusher's recovery point of timed checkpointed",
        )
        assert checkpointed[(LAZY, 0)] == 0
    finally:
        assert broker.stop() == 0
