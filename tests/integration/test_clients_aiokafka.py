"""aiokafka against a real broker: every codec, its partitioner, idempotent retries,
offsets by timestamp."""

from __future__ import annotations

import asyncio

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
from aiokafka.partitioner import DefaultPartitioner

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
from waiting import WaitTimeout

RECORDS_PER_CODEC = 20_000
PARTITIONS = 3


async def produce(bootstrap: str, topic: str, records, **config) -> list[Sent]:
    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, linger_ms=5, **config)
    await producer.start()
    try:
        futures = [
            await producer.send(topic, key=r.key, value=r.value, headers=list(r.headers))
            for r in records
        ]
        metadata = await asyncio.gather(*futures)
    finally:
        await producer.stop()
    return [Sent(r, m.partition, m.offset) for r, m in zip(records, metadata, strict=True)]


async def _fetched(consumer: AIOKafkaConsumer, timeout_ms: int) -> list[Consumed]:
    batches = await consumer.getmany(timeout_ms=timeout_ms, max_records=10_000)
    return [
        Consumed(tp.partition, m.offset, Record(m.key, m.value, normalize_headers(m.headers)))
        for tp, messages in batches.items()
        for m in messages
    ]


async def consume(bootstrap: str, topic: str, partitions: int, count: int) -> list[Consumed]:
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    await consumer.start()
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(partitions)])
        await consumer.seek_to_beginning()
        consumed: list[Consumed] = []
        try:
            async with asyncio.timeout(60):
                while len(consumed) < count:
                    consumed += await _fetched(consumer, 500)
        except TimeoutError:
            raise WaitTimeout(f"{count} records of {topic} consumed", 60, len(consumed)) from None
        consumed += await _fetched(consumer, 300)  # anything more would be a duplicate
    finally:
        await consumer.stop()
    return consumed


def test_every_codec_round_trips_with_headers_and_null_keys_and_values(broker):
    topics = {codec: f"ak-{codec}" for codec in CODECS}
    create_topics(broker.bootstrap, list(topics.values()), PARTITIONS)

    async def main():
        for codec, topic in topics.items():
            records = make_records(RECORDS_PER_CODEC, topic)
            compression = None if codec == "none" else codec
            sent = await produce(broker.bootstrap, topic, records, compression_type=compression)
            consumed = await consume(broker.bootstrap, topic, PARTITIONS, len(records))
            assert_round_trip(sent, consumed)
            assert_stored_compressed(broker.log_dirs, topic, codec)

    asyncio.run(main())


def test_keyed_records_land_on_the_default_partitioner_partition(broker):
    partitions = 7
    create_topics(broker.bootstrap, ["ak-keys"], partitions)
    records = [Record(b"user-%d" % i, b"v%d" % i, ()) for i in range(500)]

    async def main():
        sent = await produce(broker.bootstrap, "ak-keys", records)
        return sent, await consume(broker.bootstrap, "ak-keys", partitions, len(records))

    sent, consumed = asyncio.run(main())
    every = list(range(partitions))
    expected = [DefaultPartitioner()(r.key, every, every) for r in records]
    assert [s.partition for s in sent] == expected
    assert len(set(expected)) == partitions
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
        create_topics(bootstrap, ["ak-idempotent"], 2)
        records = make_records(3000, "ak-idempotent")

        async def main():
            sent = await produce(
                bootstrap,
                "ak-idempotent",
                records,
                enable_idempotence=True,
                retry_backoff_ms=20,
                max_batch_size=4096,
            )
            return sent, await consume(bootstrap, "ak-idempotent", 2, len(records))

        sent, consumed = asyncio.run(main())
        assert_retries_were_deduplicated(proxy)
        assert_round_trip(sent, consumed)
    finally:
        proxy.close()
        assert broker.stop() == 0


def test_offsets_for_times_and_earliest_and_latest(broker):
    create_topics(broker.bootstrap, ["ak-times"], 1, TIMESTAMP_TOPIC_CONFIGS)
    records = timestamped_records()
    timestamps = [t for _, _, t in records]
    targets = timestamp_targets(timestamps)
    tp = TopicPartition("ak-times", 0)

    async def main():
        producer = AIOKafkaProducer(
            bootstrap_servers=broker.bootstrap, linger_ms=20, compression_type="snappy"
        )
        await producer.start()
        futures = [
            await producer.send("ak-times", key=k, value=v, partition=0, timestamp_ms=t)
            for k, v, t in records
        ]
        await asyncio.gather(*futures)
        await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=broker.bootstrap)
        await consumer.start()
        try:
            answers = {}
            for target in targets:
                found = (await consumer.offsets_for_times({tp: target}))[tp]
                answers[target] = None if found is None else (found.offset, found.timestamp)
            return (
                answers,
                await consumer.beginning_offsets([tp]),
                await consumer.end_offsets([tp]),
            )
        finally:
            await consumer.stop()

    answers, beginning, end = asyncio.run(main())
    assert answers == {t: expected_offset(timestamps, t) for t in targets}
    assert beginning == {tp: 0}
    assert end == {tp: len(records)}
