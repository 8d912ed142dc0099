"""kafka-python against a real broker: every codec, its partitioner, idempotent retries,
offsets by timestamp."""

from __future__ import annotations

import os
import signal

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.partitioner.default import murmur2

from integration.broker_process import BrokerProcess
from integration.clients import (
    CODECS,
    TIMESTAMP_TOPIC_CONFIGS,
    Consumed,
    ProduceResponseDropper,
    Record,
    Sent,
    assert_retries_were_deduplicated,
    assert_round_trip,
    assert_stored_compressed,
    create_topics,
    expected_offset,
    make_records,
    normalize_headers,
    timestamp_targets,
    timestamped_records,
)
from tidelog.zookeeper import ZooKeeperServer
from waiting import wait_until

RECORDS_PER_CODEC = 20_000
PARTITIONS = 3


def produce(bootstrap: str, topic: str, records, **config) -> list[Sent]:
    producer = KafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    futures = [
        producer.send(topic, key=r.key, value=r.value, headers=list(r.headers)) for r in records
    ]
    producer.flush(timeout=60)
    producer.close()
    metadata = [f.get(timeout=0) for f in futures]
    return [Sent(r, m.partition, m.offset) for r, m in zip(records, metadata, strict=True)]


def _polled(consumer: KafkaConsumer, timeout_ms: int) -> list[Consumed]:
    return [
        Consumed(tp.partition, m.offset, Record(m.key, m.value, normalize_headers(m.headers)))
        for tp, messages in consumer.poll(timeout_ms=timeout_ms).items()
        for m in messages
    ]


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> list[Consumed]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
    consumer.seek_to_beginning()
    consumed: list[Consumed] = []

    def polled_enough() -> bool:
        consumed.extend(_polled(consumer, 500))
        return len(consumed) >= count

    wait_until(polled_enough, f"{count} records of {topic} consumed", 60, interval=0)
    consumed += _polled(consumer, 300)  # anything more would be a duplicate
    consumer.close()
    return consumed


def test_every_codec_round_trips_with_headers_and_null_keys_and_values(broker):
    topics = {codec: f"kp-{codec}" for codec in CODECS}
    create_topics(broker.bootstrap, list(topics.values()), PARTITIONS)
    for codec, topic in topics.items():
        records = make_records(RECORDS_PER_CODEC, topic, null_header_values=False)
        sent = produce(
            broker.bootstrap, topic, records, compression_type=None if codec == "none" else codec
        )
        assert_round_trip(sent, consume(broker.bootstrap, topic, PARTITIONS, len(records)))
        assert_stored_compressed(broker.log_dirs, topic, codec)


def test_keyed_records_land_on_the_murmur2_partition(broker):
    partitions = 7
    create_topics(broker.bootstrap, ["kp-keys"], partitions)
    records = [Record(b"user-%d" % i, b"v%d" % i, ()) for i in range(500)]
    sent = produce(broker.bootstrap, "kp-keys", records)
    expected = [(murmur2(r.key) & 0x7FFFFFFF) % partitions for r in records]
    assert [s.partition for s in sent] == expected
    assert len(set(expected)) == partitions
    consumed = consume(broker.bootstrap, "kp-keys", partitions, len(records))
    assert {(c.record.key, c.partition) for c in consumed} == {
        (r.key, p) for r, p in zip(records, expected, strict=True)
    }


def test_idempotent_retries_after_lost_responses_leave_no_duplicates(tmp_path, zk_chroot):
    proxy = ProduceResponseDropper(drop=3)
    broker = BrokerProcess(
        tmp_path / "broker",
        zk_chroot,
        overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"},
    ).start()
    try:
        proxy.start(broker.port)
        bootstrap = f"127.0.0.1:{proxy.port}"
        create_topics(bootstrap, ["kp-idempotent"], 2)
        records = make_records(3000, "kp-idempotent", null_header_values=False)
        sent = produce(
            bootstrap, "kp-idempotent", records, enable_idempotence=True, retry_backoff_ms=20
        )
        assert_retries_were_deduplicated(proxy)
        assert_round_trip(sent, consume(bootstrap, "kp-idempotent", 2, len(records)))
    finally:
        proxy.close()
        assert broker.stop() == 0


def test_an_idempotent_producer_rides_out_a_zookeeper_that_does_not_answer(tmp_path):
    """The broker reserves producer ids in ZooKeeper. While its ZooKeeper does not answer
    (frozen, as a starved ZooKeeper pod was in an e2e run), an idempotent producer's
    InitProducerId fails retriably and the producer delivers once ZooKeeper is back.
    Answered COORDINATOR_NOT_AVAILABLE, kafka-python looked a transaction coordinator up
    by a null key instead, which no broker can parse, and never produced."""
    topic = "kp-frozen-zookeeper"
    records = make_records(50, topic, null_header_values=False)
    with ZooKeeperServer(tmp_path / "zookeeper") as zookeeper:
        broker = BrokerProcess(tmp_path / "broker", zookeeper.connect_string).start()
        try:
            create_topics(broker.bootstrap, [topic], 1)
            os.kill(zookeeper.pid, signal.SIGSTOP)
            try:
                producer = KafkaProducer(
                    bootstrap_servers=broker.bootstrap, enable_idempotence=True
                )
                futures = [producer.send(topic, key=r.key, value=r.value) for r in records]
                wait_until(
                    lambda: "could not reserve a block of producer ids" in broker.log(),
                    "the broker's reservation of producer ids failed",
                )
            finally:
                os.kill(zookeeper.pid, signal.SIGCONT)
            producer.flush(timeout=60)
            producer.close()
            offsets = [f.get(timeout=0).offset for f in futures]
        finally:
            assert broker.stop() == 0
    assert offsets == list(range(len(records)))


def test_offsets_for_times_and_earliest_and_latest(broker):
    create_topics(broker.bootstrap, ["kp-times"], 1, TIMESTAMP_TOPIC_CONFIGS)
    records = timestamped_records()
    producer = KafkaProducer(
        bootstrap_servers=broker.bootstrap, linger_ms=20, compression_type="lz4"
    )
    for key, value, timestamp in records:
        producer.send("kp-times", key=key, value=value, partition=0, timestamp_ms=timestamp)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = TopicPartition("kp-times", 0)
    timestamps = [t for _, _, t in records]
    targets = timestamp_targets(timestamps)
    answers = {}
    for target in targets:
        found = consumer.offsets_for_times({tp: target})[tp]
        answers[target] = None if found is None else (found.offset, found.timestamp)
    assert answers == {t: expected_offset(timestamps, t) for t in targets}
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: len(records)}
    consumer.close()
