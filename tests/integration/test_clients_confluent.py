"""confluent-kafka (librdkafka) against a real broker: every codec, its partitioner,
idempotent retries, offsets by timestamp and watermarks."""

from __future__ import annotations

import zlib

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

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
from waiting import wait_until

RECORDS_PER_CODEC = 20_000
PARTITIONS = 3


def produce(bootstrap: str, topic: str, records, **config) -> list[Sent]:
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5, **config})
    reports: dict[int, tuple[int, int]] = {}

    def delivered(index, error, message):
        if error is not None:
            raise KafkaException(error)
        reports[index] = (message.partition(), message.offset())

    for index, r in enumerate(records):
        while True:
            try:
                producer.produce(
                    topic,
                    key=r.key,
                    value=r.value,
                    headers=list(r.headers) or None,
                    on_delivery=lambda e, m, i=index: delivered(i, e, m),
                )
                break
            except BufferError:
                producer.poll(0.05)
        producer.poll(0)
    assert producer.flush(60) == 0
    return [Sent(r, *reports[i]) for i, r in enumerate(records)]


def new_consumer(bootstrap: str) -> Consumer:
    # librdkafka wants a group id even when partitions are assigned by hand.
    return Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )


def _consumed(messages) -> list[Consumed]:
    out = []
    for m in messages:
        if m.error() is not None:
            raise KafkaException(m.error())
        record = Record(m.key(), m.value(), normalize_headers(m.headers()))
        out.append(Consumed(m.partition(), m.offset(), record))
    return out


def consume(bootstrap: str, topic: str, partitions: int, count: int) -> list[Consumed]:
    consumer = new_consumer(bootstrap)
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    consumed: list[Consumed] = []

    def consumed_enough() -> bool:
        consumed.extend(_consumed(consumer.consume(10_000, timeout=0.5)))
        return len(consumed) >= count

    wait_until(consumed_enough, f"{count} records of {topic} consumed", 60, interval=0)
    consumed += _consumed(consumer.consume(10_000, timeout=0.3))  # duplicates, if any
    consumer.close()
    return consumed


def test_every_codec_round_trips_with_headers_and_null_keys_and_values(broker):
    topics = {codec: f"ck-{codec}" for codec in CODECS}
    create_topics(broker.bootstrap, list(topics.values()), PARTITIONS)
    for codec, topic in topics.items():
        records = make_records(RECORDS_PER_CODEC, topic)
        sent = produce(broker.bootstrap, topic, records, **{"compression.type": codec})
        assert_round_trip(sent, consume(broker.bootstrap, topic, PARTITIONS, len(records)))
        assert_stored_compressed(broker.log_dirs, topic, codec)


def test_keyed_records_land_on_the_consistent_random_partition(broker):
    """librdkafka's default partitioner: CRC-32 of the key modulo the partition count."""
    partitions = 7
    create_topics(broker.bootstrap, ["ck-keys"], partitions)
    records = [Record(b"user-%d" % i, b"v%d" % i, ()) for i in range(500)]
    sent = produce(broker.bootstrap, "ck-keys", records)
    expected = [zlib.crc32(r.key) % partitions for r in records]
    assert [s.partition for s in sent] == expected
    assert len(set(expected)) == partitions
    consumed = consume(broker.bootstrap, "ck-keys", partitions, len(records))
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
        create_topics(bootstrap, ["ck-idempotent"], 2)
        records = make_records(3000, "ck-idempotent")
        sent = produce(
            bootstrap,
            "ck-idempotent",
            records,
            **{"enable.idempotence": True, "retry.backoff.ms": 20, "batch.num.messages": 200},
        )
        assert_retries_were_deduplicated(proxy)
        assert_round_trip(sent, consume(bootstrap, "ck-idempotent", 2, len(records)))
    finally:
        proxy.close()
        assert broker.stop() == 0


def test_offsets_for_times_and_watermarks(broker):
    create_topics(broker.bootstrap, ["ck-times"], 1, TIMESTAMP_TOPIC_CONFIGS)
    records = timestamped_records()
    producer = Producer(
        {"bootstrap.servers": broker.bootstrap, "linger.ms": 20, "compression.type": "zstd"}
    )
    for key, value, timestamp in records:
        producer.produce("ck-times", key=key, value=value, partition=0, timestamp=timestamp)
    assert producer.flush(30) == 0
    consumer = new_consumer(broker.bootstrap)
    timestamps = [t for _, _, t in records]
    targets = timestamp_targets(timestamps)
    found = [
        consumer.offsets_for_times([TopicPartition("ck-times", 0, t)], 10)[0].offset
        for t in targets
    ]
    # librdkafka reports "no such record" as offset -1 (OFFSET_END).
    assert found == [(expected_offset(timestamps, t) or (-1,))[0] for t in targets]
    assert consumer.get_watermark_offsets(TopicPartition("ck-times", 0), 10) == (
        0,
        len(records),
    )
    consumer.close()
