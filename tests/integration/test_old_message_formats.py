"""Producers and consumers of the message formats before Kafka 0.11 (magic 0 and 1), as
Apache Kafka 3.9 serves them: a producer's message set is converted to record batch v2
on append, and a consumer fetching below v4 gets messages of its own magic.

* kafka-python with ``api_version=(0, 10)`` (Produce and Fetch v2, magic 1) and
  ``(0, 9)`` (v1, magic 0), uncompressed and compressed, read back by a modern consumer
  and by an old one of the same version;
* librdkafka with ``api.version.request=false`` and ``broker.version.fallback=0.9.0.0``;
* the batches on disk equal those Kafka's own LogValidator makes of the same message set
  (``KafkaLogWriter.java``: ``UnifiedLog#appendAsLeader``): byte for byte uncompressed,
  record for record compressed (the codecs' bytes differ between Java and Python);
* a Produce v3 carrying such a message set is refused, and a topic with
  ``message.downconversion.enable=false`` answers an old fetch UNSUPPORTED_VERSION.
"""

from __future__ import annotations

import pytest
from confluent_kafka import Producer
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic

from integration.clients import RawClient
from integration.test_admin_apis import wait_until_serving
from kafka_reference import RawBatch, kafka_write_partition
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.records import iter_decoded_batches
from tidelog.records.compression import compress
from tidelog.records.legacy import encode_entry, encode_message, read_message_set
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log

T0 = 1_700_000_000_000
VALUES = [b"v%03d" % i for i in range(20)]


@pytest.fixture
def served(broker):
    wait_until_serving(broker)
    return broker


def create(broker, name: str, configs: dict | None = None) -> None:
    admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    try:
        admin.create_topics([NewTopic(name, 1, 1, topic_configs=configs or {})])
    finally:
        admin.close()


def read_all(broker, topic: str, count: int, **options) -> list[tuple]:
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, consumer_timeout_ms=10000, **options
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        consumer.seek_to_beginning()
        found = []
        for message in consumer:
            found.append((message.offset, message.key, message.value, message.timestamp))
            if len(found) == count:
                break
        return found
    finally:
        consumer.close()


def stored_batches(broker, topic: str):
    (directory,) = [d for d in broker.log_dirs if (d / f"{topic}-0").exists()]
    data = b"".join(p.read_bytes() for p in sorted((directory / f"{topic}-0").glob("*.log")))
    return list(iter_decoded_batches(data))


@pytest.mark.parametrize(("api_version", "magic"), [((0, 10), 1), ((0, 9), 0)])
@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4"])
def test_kafka_python_of_an_old_version_produces_and_consumes(served, api_version, magic, codec):
    topic = f"old-{magic}-{codec or 'none'}"
    create(served, topic)
    producer = KafkaProducer(
        bootstrap_servers=served.bootstrap,
        api_version=api_version,
        compression_type=codec,
        linger_ms=50,
    )
    try:
        futures = [
            producer.send(topic, value, key=b"k%d" % i, timestamp_ms=T0 + i)
            for i, value in enumerate(VALUES)
        ]
        offsets = [f.get(timeout=30).offset for f in futures]
    finally:
        producer.close()
    assert offsets == list(range(len(VALUES)))

    # On disk: record batch v2, the v1 timestamps kept, none for v0.
    batches = stored_batches(served, topic)
    assert all(batch.header.magic == 2 for batch in batches)
    records = [record for batch in batches for record in batch.records]
    assert [(r.offset, r.key, r.value) for r in records] == [
        (i, b"k%d" % i, value) for i, value in enumerate(VALUES)
    ]
    assert [r.timestamp for r in records] == [T0 + i if magic else -1 for i in range(20)]

    expected = [(i, b"k%d" % i, v, T0 + i if magic else -1) for i, v in enumerate(VALUES)]
    assert read_all(served, topic, 20) == expected
    # An old consumer gets messages of its own magic: v0 has no timestamp at all.
    old = [(i, b"k%d" % i, v, T0 + i if magic else None) for i, v in enumerate(VALUES)]
    assert read_all(served, topic, 20, api_version=api_version) == old


def test_librdkafka_with_the_0_9_fallback_produces(served):
    create(served, "fallback")
    producer = Producer(
        {
            "bootstrap.servers": served.bootstrap,
            "api.version.request": False,
            "broker.version.fallback": "0.9.0.0",
        }
    )
    delivered = []
    for i, value in enumerate(VALUES):
        producer.produce(
            "fallback", value, key=b"k%d" % i, on_delivery=lambda e, _: delivered.append(e)
        )
    assert producer.flush(30) == 0
    assert delivered == [None] * 20
    found = read_all(served, "fallback", 20)
    expected = [(i, b"k%d" % i, v) for i, v in enumerate(VALUES)]
    assert [(o, k, v) for o, k, v, _ in found] == expected


def legacy_set(magic: int, codec: int = 0) -> bytes:
    """A producer's message set: uncompressed messages, or one wrapper of ``codec`` (its
    inner offsets 0..n-1: relative for magic 1, as a producer writes them for magic 0)."""
    messages = b"".join(
        encode_entry(i, encode_message(magic, 0, T0 + i, b"k%d" % i, value))
        for i, value in enumerate(VALUES)
    )
    if not codec:
        return messages
    wrapped = compress(codec, messages)
    return encode_entry(
        len(VALUES) - 1, encode_message(magic, codec, T0 + len(VALUES) - 1, None, wrapped)
    )


@pytest.mark.parametrize(("magic", "codec"), [(0, 0), (1, 0), (0, 1), (1, 1), (1, 3)])
def test_converted_batches_equal_what_kafkas_validator_makes(tmp_path, magic, codec):
    raw = legacy_set(magic, codec)
    kafka = kafka_write_partition(
        tmp_path / "kafka", [RawBatch(raw)], segment_bytes=1 << 20, index_interval_bytes=4096
    )
    theirs_bytes = b"".join(p.read_bytes() for p in sorted(kafka.path.glob("*.log")))
    log = Log.open(tmp_path / "tidelog" / "t-0", LogConfig())
    log.append_as_leader(raw)
    ours_bytes = log.segments[0].log.read(0, log.segments[0].size)
    log.close()
    if not codec:
        assert ours_bytes == theirs_bytes
        return
    (mine,) = iter_decoded_batches(ours_bytes)
    (theirs,) = iter_decoded_batches(theirs_bytes)
    assert mine.records == theirs.records
    fields = (
        "base_offset",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "compression",
        "producer_id",
        "records_count",
    )
    assert [getattr(mine.header, f) for f in fields] == [getattr(theirs.header, f) for f in fields]


def test_produce_v3_takes_no_old_message_set_and_downconversion_can_be_off(served):
    create(served, "no-down", {"message.downconversion.enable": "false"})
    client = RawClient(int(served.bootstrap.rsplit(":", 1)[1]))
    try:
        body = {
            "transactional_id": None,
            "acks": 1,
            "timeout_ms": 5000,
            "topic_data": [
                {"name": "no-down", "partition_data": [{"index": 0, "records": legacy_set(1)}]}
            ],
        }
        refused = client.request(ApiKey.PRODUCE, 3, body)
        assert refused.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_RECORD
        accepted = client.request(ApiKey.PRODUCE, 2, body)
        assert accepted.responses[0].partition_responses[0].error_code == ErrorCode.NONE
        fetch = {
            "replica_id": -1,
            "max_wait_ms": 0,
            "min_bytes": 0,
            "topics": [
                {
                    "topic": "no-down",
                    "partitions": [
                        {"partition": 0, "fetch_offset": 0, "partition_max_bytes": 1 << 20}
                    ],
                }
            ],
        }
        old = client.request(ApiKey.FETCH, 2, fetch)
        assert old.responses[0].partitions[0].error_code == ErrorCode.UNSUPPORTED_VERSION
        modern = client.request(ApiKey.FETCH, 4, fetch | {"max_bytes": 1 << 20})
        assert modern.responses[0].partitions[0].error_code == ErrorCode.NONE
    finally:
        client.close()
    assert read_message_set(legacy_set(1)).magic == 1
