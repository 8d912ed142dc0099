"""The admin APIs against a real broker process, through kafka-python's KafkaAdminClient,
confluent-kafka's AdminClient and (for what those clients cannot send) raw requests:
DeleteTopics, CreatePartitions, DeleteRecords, DescribeConfigs, AlterConfigs,
IncrementalAlterConfigs, DescribeLogDirs, DescribeCluster, and dynamic configs applied
live.

One broker serves the whole module (topics are named per test); the tests that need
another configuration start their own.
"""

from __future__ import annotations

import concurrent.futures
import json
import socket
import struct
import time
import uuid

import pytest
from confluent_kafka import KafkaException
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    NewPartitions,
)
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import ConfigResource as KConfigResource
from kafka.admin import ConfigResourceType, NewTopic
from kafka.errors import (
    InvalidPartitionsError,
    InvalidReplicationAssignmentError,
    UnknownTopicOrPartitionError,
)
from kazoo.client import KazooClient

from integration.broker_process import BrokerProcess, uninformed_broker
from tidelog.admin import AdminClient as TidelogAdmin
from tidelog.admin import AdminError
from tidelog.protocol import ApiKey, decode_response, encode_request
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

SEGMENT_BYTES = 4 * 1024 * 1024  # static log.segment.bytes: a STATIC_BROKER_CONFIG source
HOUR_MS = 60 * 60 * 1000


@pytest.fixture(scope="module")
def broker(tmp_path_factory, module_chroot):
    process = BrokerProcess(
        tmp_path_factory.mktemp("admin") / "broker",
        module_chroot,
        overrides={
            "log.retention.check.interval.ms": "200",
            "log.segment.bytes": str(SEGMENT_BYTES),
            "log.segment.delete.delay.ms": "0",
        },
    ).start()
    wait_until_serving(process)
    yield process
    code = process.stop()
    assert code == 0, f"broker exited with {code}:\n{process.log()[-3000:]}"


@pytest.fixture(scope="module")
def kadmin(broker):
    client = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
    yield client
    client.close()


@pytest.fixture(scope="module")
def cadmin(broker):
    return AdminClient({"bootstrap.servers": broker.bootstrap})


def create(kadmin, name, partitions=1, configs=None):
    kadmin.create_topics([NewTopic(name, partitions, 1, topic_configs=configs or {})])


def produce(broker, topic, count, *, partition=0, timestamp_ms=None, size=100):
    producer = KafkaProducer(bootstrap_servers=broker.bootstrap, linger_ms=0)
    for i in range(count):
        producer.send(
            topic, b"v%05d" % i + b"x" * size, partition=partition, timestamp_ms=timestamp_ms
        ).get(timeout=30)
    producer.close()


def earliest(broker, topic, partition=0) -> int:
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap)
    tp = TopicPartition(topic, partition)
    offset = consumer.beginning_offsets([tp])[tp]
    consumer.close()
    return offset


def wait_until_serving(process) -> None:
    """The port opens before the broker has registered and elected itself; clients that
    bootstrap in between see no brokers (librdkafka then waits minutes to look again)."""

    def registered():
        metadata = raw_call(process.bootstrap, ApiKey.METADATA, 12, {"topics": []})
        return [b.node_id for b in metadata.brokers] == [process.broker_id]

    wait_until(registered, "the broker registered", 15)


def raw_call(bootstrap: str, api_key: ApiKey, version: int, body: dict):
    """One request on a fresh connection, for what the clients cannot send."""
    host, port = bootstrap.rsplit(":", 1)
    header = {
        "request_api_key": int(api_key),
        "request_api_version": version,
        "correlation_id": 42,
        "client_id": "admin-test",
    }
    frame = encode_request(header, body)
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(struct.pack(">i", len(frame)) + frame)

        def read(n: int) -> bytes:
            data = b""
            while len(data) < n:
                chunk = sock.recv(n - len(data))
                assert chunk, "connection closed"
                data += chunk
            return data

        size = struct.unpack(">i", read(4))[0]
        _, response = decode_response(read(size), int(api_key), version)
    return response


def topic_dirs(broker, topic):
    return [
        p
        for d in broker.log_dirs
        if d.exists()
        for p in d.iterdir()
        if p.name.startswith(f"{topic}-")
    ]


def cresult(futures):
    return {key: future.result(timeout=30) for key, future in futures.items()}


# -- DeleteTopics ---------------------------------------------------------------------------


def test_delete_topics_by_name_removes_metadata_and_logs(broker, kadmin):
    create(kadmin, "doomed", partitions=3)
    produce(broker, "doomed", 5)
    assert len(topic_dirs(broker, "doomed")) == 3
    kadmin.delete_topics(["doomed"])
    assert "doomed" not in kadmin.list_topics()
    assert topic_dirs(broker, "doomed") == []
    with pytest.raises(UnknownTopicOrPartitionError):
        kadmin.delete_topics(["doomed"])
    # The name is free again, with fresh (empty) logs.
    create(kadmin, "doomed")
    assert earliest(broker, "doomed") == 0
    kadmin.delete_topics(["doomed"])


def test_delete_topics_by_id_and_errors_on_the_wire(broker, kadmin):
    create(kadmin, "by-id")
    metadata = raw_call(broker.bootstrap, ApiKey.METADATA, 12, {"topics": [{"name": "by-id"}]})
    topic_id = metadata.topics[0].topic_id
    unknown_id = uuid.uuid4()
    response = raw_call(
        broker.bootstrap,
        ApiKey.DELETE_TOPICS,
        6,
        {
            "topics": [
                {"name": None, "topic_id": topic_id},
                {"name": None, "topic_id": unknown_id},
                {"name": "never-was", "topic_id": uuid.UUID(int=0)},
                {"name": "by-id", "topic_id": topic_id},
            ],
            "timeout_ms": 30000,
        },
    )
    results = [(r.name, r.topic_id, r.error_code) for r in response.responses]
    assert results == [
        ("by-id", topic_id, 0),
        (None, unknown_id, 100),  # UNKNOWN_TOPIC_ID
        ("never-was", uuid.UUID(int=0), 3),  # UNKNOWN_TOPIC_OR_PARTITION
        ("by-id", topic_id, 42),  # INVALID_REQUEST: both name and id
    ]
    assert "by-id" not in kadmin.list_topics()
    assert topic_dirs(broker, "by-id") == []


def test_delete_topics_with_confluent_kafka(broker, kadmin, cadmin):
    create(kadmin, "c-doomed", partitions=2)
    cresult(cadmin.delete_topics(["c-doomed"], operation_timeout=30))
    assert "c-doomed" not in cadmin.list_topics(timeout=10).topics
    assert topic_dirs(broker, "c-doomed") == []


def test_deletion_disabled_and_not_controller(tmp_path, zk_chroot):
    first = BrokerProcess(
        tmp_path / "b1", zk_chroot, broker_id=1, overrides={"delete.topic.enable": "false"}
    ).start()
    second = BrokerProcess(tmp_path / "b2", zk_chroot, broker_id=2).start()
    try:
        body = {"topic_names": ["t"], "timeout_ms": 1000}
        response = raw_call(first.bootstrap, ApiKey.DELETE_TOPICS, 5, body)
        assert response.responses[0].error_code == 73  # TOPIC_DELETION_DISABLED
        response = raw_call(first.bootstrap, ApiKey.DELETE_TOPICS, 2, body)
        assert response.responses[0].error_code == 42  # INVALID_REQUEST before v3
        response = raw_call(second.bootstrap, ApiKey.DELETE_TOPICS, 5, body)
        assert response.responses[0].error_code == 41  # NOT_CONTROLLER
        response = raw_call(
            second.bootstrap,
            ApiKey.CREATE_PARTITIONS,
            3,
            {"topics": [{"name": "t", "count": 2}], "timeout_ms": 1000},
        )
        assert response.results[0].error_code == 41
    finally:
        assert second.stop() == 0
        assert first.stop() == 0


# -- CreatePartitions -----------------------------------------------------------------------


def test_create_partitions_with_kafka_python(broker, kadmin):
    create(kadmin, "grow")
    kadmin.create_partitions({"grow": 3}, validate_only=True)
    assert len(kadmin.describe_topics(["grow"])[0]["partitions"]) == 1
    kadmin.create_partitions({"grow": 3})
    partitions = kadmin.describe_topics(["grow"])[0]["partitions"]
    assert sorted(p["partition_index"] for p in partitions) == [0, 1, 2]
    assert all(p["leader_id"] == broker.broker_id for p in partitions)
    produce(broker, "grow", 2, partition=2)  # the new partition takes writes
    assert len(topic_dirs(broker, "grow")) == 3
    with pytest.raises(InvalidPartitionsError):
        kadmin.create_partitions({"grow": 3})  # same count
    with pytest.raises(InvalidPartitionsError):
        kadmin.create_partitions({"grow": 2})  # a decrease
    with pytest.raises(InvalidReplicationAssignmentError):
        kadmin.create_partitions({"grow": {"count": 4, "assignments": [[7]]}})
    with pytest.raises(InvalidReplicationAssignmentError):
        kadmin.create_partitions({"grow": {"count": 5, "assignments": [[1]]}})
    kadmin.create_partitions({"grow": {"count": 4, "assignments": [[broker.broker_id]]}})
    assert len(kadmin.describe_topics(["grow"])[0]["partitions"]) == 4
    with pytest.raises(UnknownTopicOrPartitionError):
        kadmin.create_partitions({"no-such-topic": 2})


def test_create_partitions_with_confluent_kafka(broker, kadmin, cadmin):
    create(kadmin, "c-grow", partitions=2)
    cresult(cadmin.create_partitions([NewPartitions("c-grow", 5)], operation_timeout=30))
    assert len(cadmin.list_topics("c-grow", timeout=10).topics["c-grow"].partitions) == 5
    future = cadmin.create_partitions([NewPartitions("c-grow", 1)])["c-grow"]
    with pytest.raises(Exception, match="INVALID_PARTITIONS|higher than the requested"):
        future.result(timeout=30)


# -- DeleteRecords --------------------------------------------------------------------------


def test_delete_records_moves_the_start_for_consumers(broker, kadmin):
    create(kadmin, "trim")
    produce(broker, "trim", 10)
    tp = TopicPartition("trim", 0)
    result = kadmin.delete_records({tp: 4})
    assert result[tp]["low_watermark"] == 4
    assert earliest(broker, "trim") == 4
    consumer = KafkaConsumer(
        bootstrap_servers=broker.bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000
    )
    consumer.assign([tp])
    consumer.seek_to_beginning()
    assert [m.offset for m in consumer] == list(range(4, 10))
    consumer.close()
    with pytest.raises(Exception, match="OffsetOutOfRange"):
        kadmin.delete_records({tp: 11})  # above the high watermark
    assert kadmin.delete_records({tp: -1})[tp]["low_watermark"] == 10  # -1: the high watermark
    assert earliest(broker, "trim") == 10


def test_delete_records_errors_on_the_wire(broker, kadmin):
    create(kadmin, "trim-errors", configs={"cleanup.policy": "compact"})
    response = raw_call(
        broker.bootstrap,
        ApiKey.DELETE_RECORDS,
        2,
        {
            "topics": [
                {"name": "trim-errors", "partitions": [{"partition_index": 0, "offset": 0}]},
                {"name": "trim-errors", "partitions": [{"partition_index": 9, "offset": 0}]},
                {"name": "ghost", "partitions": [{"partition_index": 0, "offset": 0}]},
            ],
            "timeout_ms": 1000,
        },
    )
    codes = [
        (t.name, p.partition_index, p.error_code, p.low_watermark)
        for t in response.topics
        for p in t.partitions
    ]
    assert codes == [
        ("trim-errors", 0, 44, -1),  # POLICY_VIOLATION: compact only
        ("trim-errors", 9, 3, -1),
        ("ghost", 0, 3, -1),
    ]


def test_delete_records_with_confluent_kafka(broker, kadmin, cadmin):
    create(kadmin, "c-trim")
    produce(broker, "c-trim", 8)
    futures = cadmin.delete_records([CTopicPartition("c-trim", 0, 5)], operation_timeout=30)
    (deleted,) = cresult(futures).values()
    assert deleted.low_watermark == 5
    assert earliest(broker, "c-trim") == 5


# -- DescribeConfigs ------------------------------------------------------------------------


def test_describe_topic_configs_with_sources_and_synonyms(broker, kadmin):
    create(kadmin, "described", configs={"retention.ms": "3600000", "cleanup.policy": "compact"})
    configs = kadmin.describe_configs(
        [KConfigResource(ConfigResourceType.TOPIC, "described")],
        include_synonyms=True,
        config_filter="all",
    )["topic"]["described"]
    retention = configs["retention.ms"]
    assert retention["value"] == "3600000"
    assert retention["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    assert retention["synonyms"] == [
        {"name": "retention.ms", "value": "3600000", "source": "DYNAMIC_TOPIC_CONFIG"}
    ]
    segment = configs["segment.bytes"]  # inherited from the static log.segment.bytes
    assert segment["value"] == str(SEGMENT_BYTES)
    assert segment["config_source"] == "STATIC_BROKER_CONFIG"
    assert segment["synonyms"] == [
        {
            "name": "log.segment.bytes",
            "value": str(SEGMENT_BYTES),
            "source": "STATIC_BROKER_CONFIG",
        },
        {"name": "log.segment.bytes", "value": "1073741824", "source": "DEFAULT_CONFIG"},
    ]
    assert configs["cleanup.policy"]["value"] == "compact"
    assert configs["cleanup.policy"]["config_type"] == "LIST"
    index = configs["segment.index.bytes"]
    assert (index["value"], index["config_source"]) == ("10485760", "DEFAULT_CONFIG")
    assert index["synonyms"] == [
        {"name": "log.index.size.max.bytes", "value": "10485760", "source": "DEFAULT_CONFIG"}
    ]
    # Kafka reports retention.ms from log.retention.hours as a default without synonyms.
    assert configs["retention.ms"]["synonyms"] == [retention["synonyms"][0]]
    segment_ms = configs["segment.ms"]
    assert (segment_ms["value"], segment_ms["config_source"]) == (
        str(168 * HOUR_MS),
        "DEFAULT_CONFIG",
    )
    assert segment_ms["synonyms"] == []
    modified = kadmin.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "described")])
    assert set(modified["topic"]["described"]) == {"retention.ms", "cleanup.policy"}
    only = kadmin.describe_configs(
        [KConfigResource(ConfigResourceType.TOPIC, "described", ["min.insync.replicas"])],
        config_filter="all",
    )
    assert set(only["topic"]["described"]) == {"min.insync.replicas"}


def test_describe_configs_errors_and_v0(broker, kadmin):
    create(kadmin, "described-v0", configs={"retention.ms": "1000"})
    response = raw_call(
        broker.bootstrap,
        ApiKey.DESCRIBE_CONFIGS,
        0,
        {
            "resources": [
                {"resource_type": 2, "resource_name": "described-v0", "configuration_keys": None},
                {"resource_type": 2, "resource_name": "ghost", "configuration_keys": None},
                {"resource_type": 4, "resource_name": "77", "configuration_keys": None},
                {"resource_type": 4, "resource_name": "one", "configuration_keys": None},
                {"resource_type": 3, "resource_name": "x", "configuration_keys": None},
            ]
        },
    )
    topic, ghost, other_broker, not_an_id, unsupported = response.results
    entries = {c.name: c for c in topic.configs}
    assert entries["retention.ms"].value == "1000" and not entries["retention.ms"].is_default
    assert entries["segment.ms"].is_default and entries["segment.ms"].value == str(168 * HOUR_MS)
    assert ghost.error_code == 3 and ghost.configs == []
    assert other_broker.error_code == 42
    assert other_broker.error_message == (
        f"Unexpected broker id, expected {broker.broker_id} or empty string, but received 77"
    )
    assert not_an_id.error_code == 42
    assert unsupported.error_code == 42


def test_describe_broker_configs_with_confluent_kafka(broker, cadmin):
    resource = ConfigResource("BROKER", str(broker.broker_id))
    (configs,) = cresult(cadmin.describe_configs([resource], request_timeout=30)).values()
    broker_id = configs["broker.id"]
    assert broker_id.value == str(broker.broker_id) and broker_id.is_read_only
    assert broker_id.source == ConfigSource.STATIC_BROKER_CONFIG.value
    hours = configs["log.retention.hours"]
    assert (hours.value, hours.source, hours.is_default) == (
        "168",
        ConfigSource.DEFAULT_CONFIG.value,
        True,
    )
    assert configs["log.retention.ms"].value is None
    password = configs["ssl.keystore.password"]
    assert password.is_sensitive and password.value is None
    segment = configs["log.segment.bytes"]
    assert (segment.value, segment.source) == (
        str(SEGMENT_BYTES),
        ConfigSource.STATIC_BROKER_CONFIG.value,
    )
    assert not segment.is_read_only  # a cluster-wide key
    # The cluster-wide defaults (an empty name, which the clients cannot send): none yet.
    assert describe_cluster_defaults(broker) == {}


def describe_cluster_defaults(broker) -> dict:
    response = raw_call(
        broker.bootstrap,
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {
            "resources": [{"resource_type": 4, "resource_name": "", "configuration_keys": None}],
            "include_synonyms": True,
        },
    )
    (result,) = response.results
    assert result.error_code == 0
    return {
        c.name: (c.value, c.config_source, [(s.name, s.value, s.source) for s in c.synonyms])
        for c in result.configs
    }


def alter_cluster_defaults(broker, operations) -> None:
    """IncrementalAlterConfigs on ``<default>`` (an empty broker name)."""
    response = raw_call(
        broker.bootstrap,
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": 4,
                    "resource_name": "",
                    "configs": [
                        {"name": n, "config_operation": op, "value": v} for n, op, v in operations
                    ],
                }
            ],
            "validate_only": False,
        },
    )
    assert response.responses[0].error_code == 0, response.responses[0].error_message


def test_deprecated_and_newer_topic_configs_are_accepted_and_listed(broker, kadmin, cadmin):
    """Kafka 3.9 accepts the deprecated message.format.version (and ignores it: every
    log is record batch v2) and lists its newer topic keys: the compression levels and
    tiered storage's, which a broker without a remote tier refuses to turn on."""
    create(kadmin, "versions", configs={"message.format.version": "0.10.2"})
    resource = KConfigResource(ConfigResourceType.TOPIC, "versions")

    def described():
        return kadmin.describe_configs([resource], config_filter="all")["topic"]["versions"]

    configs = described()
    assert configs["message.format.version"]["value"] == "0.10.2"
    assert configs["message.format.version"]["config_source"] == "DYNAMIC_TOPIC_CONFIG"
    defaults = {
        "compression.gzip.level": "-1",
        "compression.lz4.level": "9",
        "compression.zstd.level": "3",
        "local.retention.ms": "-2",
        "local.retention.bytes": "-2",
        "remote.storage.enable": "false",
    }
    assert {key: configs[key]["value"] for key in defaults} == defaults
    kadmin.alter_configs(
        [
            KConfigResource(
                ConfigResourceType.TOPIC,
                "versions",
                {"message.format.version": "2.8", "compression.zstd.level": "12"},
            )
        ]
    )
    configs = described()
    assert configs["message.format.version"]["value"] == "2.8"
    assert configs["compression.zstd.level"]["value"] == "12"
    produce(broker, "versions", 3)  # a v2 log whatever the deprecated key says
    refused = cadmin.incremental_alter_configs(
        [
            ConfigResource(
                "TOPIC",
                "versions",
                incremental_configs=[
                    ConfigEntry(
                        "remote.storage.enable", "true", incremental_operation=AlterConfigOpType.SET
                    )
                ],
            )
        ]
    )
    with pytest.raises(KafkaException, match="tiered storage is not available"):
        cresult(refused)


# -- AlterConfigs / IncrementalAlterConfigs ---------------------------------------------------


def test_incremental_alter_topic_configs(broker, kadmin, cadmin):
    create(kadmin, "altered")
    resource = KConfigResource(ConfigResourceType.TOPIC, "altered")

    def current():
        return {
            k: v["value"]
            for k, v in kadmin.describe_configs([resource])["topic"]["altered"].items()
        }

    kadmin.alter_configs(
        [KConfigResource(ConfigResourceType.TOPIC, "altered", {"retention.ms": "5000"})]
    )
    assert current() == {"retention.ms": "5000"}
    cresult(
        cadmin.incremental_alter_configs(
            [
                ConfigResource(
                    "TOPIC",
                    "altered",
                    incremental_configs=[
                        ConfigEntry(
                            "cleanup.policy",
                            "compact",
                            incremental_operation=AlterConfigOpType.APPEND,
                        ),
                        ConfigEntry(
                            "retention.ms", None, incremental_operation=AlterConfigOpType.DELETE
                        ),
                    ],
                )
            ]
        )
    )
    assert current() == {"cleanup.policy": "delete,compact"}
    cresult(
        cadmin.incremental_alter_configs(
            [
                ConfigResource(
                    "TOPIC",
                    "altered",
                    incremental_configs=[
                        ConfigEntry(
                            "cleanup.policy",
                            "delete",
                            incremental_operation=AlterConfigOpType.SUBTRACT,
                        )
                    ],
                )
            ]
        )
    )
    assert current() == {"cleanup.policy": "compact"}
    # validate_only changes nothing.
    kadmin.alter_configs(
        [KConfigResource(ConfigResourceType.TOPIC, "altered", {"segment.ms": "1000"})],
        validate_only=True,
    )
    assert current() == {"cleanup.policy": "compact"}
    # ZooKeeper holds the set, as Kafka writes it.
    document = json.loads(broker_zk_get(broker, "/config/topics/altered"))
    assert document == {"version": 1, "config": {"cleanup.policy": "compact"}}


def broker_zk_get(broker, path):
    connect = [
        line
        for line in broker.config_path.read_text().splitlines()
        if line.startswith("zookeeper.connect=")
    ]
    client = KazooClient(hosts=connect[0].partition("=")[2])
    client.start(timeout=10)
    try:
        return client.get(path)[0]
    finally:
        client.stop()
        client.close()


def test_alter_configs_replaces_the_whole_set_and_validates(broker, kadmin):
    create(kadmin, "replaced", configs={"retention.ms": "5000", "segment.ms": "60000"})
    response = raw_call(
        broker.bootstrap,
        ApiKey.ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": "replaced",
                    "configs": [{"name": "max.message.bytes", "value": "2000"}],
                },
                {
                    "resource_type": 2,
                    "resource_name": "replaced",
                    "configs": [{"name": "retention.ms", "value": "soon"}],
                },
                {
                    "resource_type": 2,
                    "resource_name": "replaced",
                    "configs": [{"name": "no.such.key", "value": "1"}],
                },
                {
                    "resource_type": 2,
                    "resource_name": "ghost",
                    "configs": [{"name": "retention.ms", "value": "1"}],
                },
                {
                    "resource_type": 4,
                    "resource_name": str(broker.broker_id),
                    "configs": [{"name": "broker.id", "value": "5"}],
                },
                {
                    "resource_type": 4,
                    "resource_name": "",
                    "configs": [{"name": "advertised.listeners", "value": "PLAINTEXT://x:1"}],
                },
            ],
            "validate_only": False,
        },
    )
    replaced, bad_value, unknown_key, ghost, read_only, per_broker = response.responses
    assert replaced.error_code == 0
    assert (bad_value.error_code, unknown_key.error_code) == (40, 40)  # INVALID_CONFIG
    assert "retention.ms" in bad_value.error_message
    assert "no.such.key" in unknown_key.error_message
    assert ghost.error_code == 3
    assert read_only.error_code == 42
    assert "Cannot update these configs dynamically: Set(broker.id)" in read_only.error_message
    assert per_broker.error_code == 42
    assert "broker id must be specified" in per_broker.error_message
    configs = kadmin.describe_configs([KConfigResource(ConfigResourceType.TOPIC, "replaced")])
    assert {k: v["value"] for k, v in configs["topic"]["replaced"].items()} == {
        "max.message.bytes": "2000"
    }


# -- dynamic configs take effect --------------------------------------------------------------


def old_records(broker, topic, count=30):
    """Records an hour old, in segments small enough to roll many times."""
    produce(broker, topic, count, timestamp_ms=int(time.time() * 1000) - HOUR_MS, size=300)


def retention_passes_over_every_log(broker, kadmin, sentinel: str) -> None:
    """Return once a whole retention pass began after this call and ended: every log
    that existed then was looked at. The broker runs its passes one after another (one
    task, every log.retention.check.interval.ms), each over the logs it has when it
    begins. ``sentinel``, a new topic of hour-old records and a minute's retention, loses
    segments in every pass after records are added: its second loss is in a pass that
    began after the pass of its first loss ended, and that one began after this call."""
    create(kadmin, sentinel, configs={"segment.bytes": "1024", "retention.ms": "60000"})
    start = 0
    for loss in ("first", "second"):
        old_records(broker, sentinel)
        start = wait_until(
            lambda seen=start: (now := earliest(broker, sentinel)) > seen and now,
            f"retention deleted segments of {sentinel} a {loss} time",
            15,
        )


def test_topic_retention_change_applies_live(broker, kadmin, cadmin):
    create(kadmin, "shrinking", configs={"segment.bytes": "1024"})
    old_records(broker, "shrinking")
    # a week's retention keeps everything, after a whole pass as before it
    retention_passes_over_every_log(broker, kadmin, "shrinking-sentinel")
    assert earliest(broker, "shrinking") == 0
    cresult(
        cadmin.incremental_alter_configs(
            [
                ConfigResource(
                    "TOPIC",
                    "shrinking",
                    incremental_configs=[
                        ConfigEntry(
                            "retention.ms", "60000", incremental_operation=AlterConfigOpType.SET
                        )
                    ],
                )
            ]
        )
    )
    wait_until(lambda: earliest(broker, "shrinking") > 0, "retention deleted segments", 15)


def test_dynamic_broker_config_changes_topic_defaults(broker, kadmin, cadmin):
    create(kadmin, "follows-default", configs={"segment.bytes": "1024"})
    create(
        kadmin,
        "keeps-override",
        configs={"segment.bytes": "1024", "retention.ms": str(7 * 24 * HOUR_MS)},
    )
    old_records(broker, "follows-default")
    old_records(broker, "keeps-override")
    mine = ConfigResource("BROKER", str(broker.broker_id))
    try:
        alter_cluster_defaults(broker, [("log.retention.ms", 0, "60000")])  # SET
        wait_until(lambda: earliest(broker, "follows-default") > 0, "the new default applied", 15)
        # a whole pass under the new default: its own retention.ms wins
        retention_passes_over_every_log(broker, kadmin, "keeps-override-sentinel")
        assert earliest(broker, "keeps-override") == 0
        # Sources and synonyms follow the precedence.
        configs = kadmin.describe_configs(
            [KConfigResource(ConfigResourceType.TOPIC, "follows-default", ["retention.ms"])],
            include_synonyms=True,
            config_filter="all",
        )["topic"]["follows-default"]["retention.ms"]
        assert configs["value"] == "60000"
        assert configs["config_source"] == "DYNAMIC_DEFAULT_BROKER_CONFIG"
        assert configs["synonyms"] == [
            {
                "name": "log.retention.ms",
                "value": "60000",
                "source": "DYNAMIC_DEFAULT_BROKER_CONFIG",
            },
            {"name": "log.retention.hours", "value": "168", "source": "DEFAULT_CONFIG"},
        ]
        assert describe_cluster_defaults(broker) == {
            "log.retention.ms": ("60000", 3, [("log.retention.ms", "60000", 3)])
        }
        # A per-broker value beats the cluster-wide one.
        entry = ConfigEntry(
            "log.retention.ms", "90000", incremental_operation=AlterConfigOpType.SET
        )
        mine.incremental_configs = [entry]
        cresult(cadmin.incremental_alter_configs([mine]))
        described = kadmin.describe_configs(
            [
                KConfigResource(
                    ConfigResourceType.BROKER, str(broker.broker_id), ["log.retention.ms"]
                )
            ],
            include_synonyms=True,
        )["broker"][str(broker.broker_id)]["log.retention.ms"]
        assert (described["value"], described["config_source"]) == (
            "90000",
            "DYNAMIC_BROKER_CONFIG",
        )
        assert [(s["value"], s["source"]) for s in described["synonyms"]] == [
            ("90000", "DYNAMIC_BROKER_CONFIG"),
            ("60000", "DYNAMIC_DEFAULT_BROKER_CONFIG"),
            ("168", "DEFAULT_CONFIG"),
        ]
    finally:
        alter_cluster_defaults(broker, [("log.retention.ms", 1, None)])  # DELETE
        entry = ConfigEntry(
            "log.retention.ms", None, incremental_operation=AlterConfigOpType.DELETE
        )
        mine.incremental_configs = [entry]
        cresult(cadmin.incremental_alter_configs([mine]))
    assert describe_cluster_defaults(broker) == {}


def test_dynamic_configs_are_loaded_at_start_up(tmp_path, zk_chroot):
    process = BrokerProcess(
        tmp_path / "b", zk_chroot, overrides={"log.retention.check.interval.ms": "200"}
    ).start()
    try:
        admin = KafkaAdminClient(bootstrap_servers=process.bootstrap)
        create(admin, "at-start", configs={"segment.bytes": "1024"})
        admin.close()
        old_records(process, "at-start")
        assert process.stop() == 0
        # Written while the broker is down, as ZooKeeper-based tooling would.
        zk = KazooClient(hosts=zk_chroot)
        zk.start(timeout=10)
        zk.ensure_path("/config/brokers")
        zk.create(
            "/config/brokers/<default>",
            json.dumps({"version": 1, "config": {"log.retention.ms": "60000"}}).encode(),
        )
        zk.stop()
        zk.close()
        process.start()
        wait_until(lambda: earliest(process, "at-start") > 0, "the stored default applied", 15)
    finally:
        assert process.stop() == 0


# -- DescribeLogDirs and DescribeCluster ------------------------------------------------------


def test_describe_log_dirs(broker, kadmin):
    create(kadmin, "sized", partitions=2)
    produce(broker, "sized", 10)
    (described,) = kadmin.describe_log_dirs()
    assert described["broker"] == broker.broker_id
    dirs = {d["log_dir"]: d for d in described["log_dirs"]}
    assert set(dirs) == {str(d.resolve()) for d in broker.log_dirs}
    found = {}
    for log_dir in dirs.values():
        assert log_dir["error_code"] == 0
        assert log_dir["total_bytes"] > 0 and 0 < log_dir["usable_bytes"] <= log_dir["total_bytes"]
        for topic in log_dir["topics"]:
            for partition in topic["partitions"]:
                found[(topic["name"], partition["partition_index"])] = partition
    assert found[("sized", 0)]["partition_size"] > 10 * 100
    assert found[("sized", 1)]["partition_size"] == 0
    assert found[("sized", 0)]["offset_lag"] == 0 and not found[("sized", 0)]["is_future_key"]
    only = kadmin.describe_log_dirs({"sized": [1]})[0]["log_dirs"]
    listed = [
        (t["name"], p["partition_index"])
        for d in only
        for t in d["topics"]
        for p in t["partitions"]
    ]
    assert listed == [("sized", 1)]


def test_describe_cluster(broker, cadmin):
    cluster_id = cadmin.list_topics(timeout=10).cluster_id
    for version in (0, 1):
        response = raw_call(
            broker.bootstrap,
            ApiKey.DESCRIBE_CLUSTER,
            version,
            {"include_cluster_authorized_operations": True},
        )
        assert (response.error_code, response.cluster_id) == (0, cluster_id)
        assert response.controller_id == broker.broker_id
        assert [(b.broker_id, b.host, b.port) for b in response.brokers] == [
            (broker.broker_id, "127.0.0.1", broker.port)
        ]
        # CREATE, ALTER, DESCRIBE, CLUSTER_ACTION, DESCRIBE_CONFIGS, ALTER_CONFIGS,
        # IDEMPOTENT_WRITE: everything, as without an authorizer.
        assert response.cluster_authorized_operations == sum(
            1 << code for code in (5, 7, 8, 9, 10, 11, 12)
        )
    response = raw_call(broker.bootstrap, ApiKey.DESCRIBE_CLUSTER, 1, {})
    assert response.cluster_authorized_operations == -(2**31)  # not asked for
    response = raw_call(broker.bootstrap, ApiKey.DESCRIBE_CLUSTER, 1, {"endpoint_type": 2})
    assert response.error_code == 114  # MISMATCHED_ENDPOINT_TYPE: this is a broker


def test_broker_loggers_are_described_and_set(broker):
    name = str(broker.broker_id)

    def levels():
        response = raw_call(
            broker.bootstrap,
            ApiKey.DESCRIBE_CONFIGS,
            4,
            {"resources": [{"resource_type": 8, "resource_name": name}]},
        )
        (result,) = response.results
        assert result.error_code == 0
        assert {c.config_source for c in result.configs} == {6}  # DYNAMIC_BROKER_LOGGER_CONFIG
        return {c.name: c.value for c in result.configs}

    def alter(operations):
        response = raw_call(
            broker.bootstrap,
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            1,
            {
                "resources": [
                    {
                        "resource_type": 8,
                        "resource_name": name,
                        "configs": [
                            {"name": n, "config_operation": op, "value": v}
                            for n, op, v in operations
                        ],
                    }
                ]
            },
        )
        return response.responses[0]

    before = levels()
    assert before["root"] == "INFO" and before["tidelog.server.broker"] == "INFO"
    assert alter([("tidelog.server.broker", 0, "DEBUG")]).error_code == 0
    assert levels()["tidelog.server.broker"] == "DEBUG"
    assert alter([("tidelog.server.broker", 1, None)]).error_code == 0  # DELETE: inherit
    assert levels()["tidelog.server.broker"] == "INFO"
    refused = [
        alter([("root", 1, None)]),
        alter([("root", 0, "LOUD")]),
        alter([("no.such.logger", 0, "INFO")]),
        alter([("root", 2, "INFO")]),
    ]
    assert [r.error_code for r in refused] == [42, 42, 42, 42]
    assert "not a supported log level" in refused[1].error_message


# -- a broker that knows no cluster yet -----------------------------------------------------


def test_admin_metadata_passes_over_a_broker_without_the_controllers_metadata(
    tmp_path, zk_chroot, broker
):
    """A broker whose controller never answers (``/controller`` names a broker that is not
    there) has no metadata and answers as if the cluster were empty: tidelog's admin
    client asks the next address instead, and with no other says so, clearly and
    retriably, rather than taking an empty cluster for the truth."""
    with uninformed_broker(tmp_path / "uninformed", zk_chroot) as uninformed:
        raw = raw_call(uninformed.bootstrap, ApiKey.METADATA, 9, {"topics": None})
        assert raw.brokers == [] and raw.topics == []  # what Kafka answers too
        with pytest.raises(AdminError) as caught:
            TidelogAdmin(uninformed.bootstrap, timeout=5).metadata()
        assert caught.value.code == ErrorCode.LEADER_NOT_AVAILABLE
        assert "no metadata from the controller yet" in str(caught.value)

        both = TidelogAdmin(f"{uninformed.bootstrap},{broker.bootstrap}", timeout=5)
        assert [b.node_id for b in both.metadata([]).brokers] == [1]


def test_admin_reaches_a_named_broker_again_until_its_timeout(tmp_path, zk_chroot):
    """A broker the metadata named (here the controller) that does not answer (its pod's
    name not yet in DNS, or the broker restarting) is reached again with Kafka's
    reconnect backoff until the client's timeout, as Kafka's admin client retries a node
    until its API timeout; past the timeout it says which address failed."""
    broker = BrokerProcess(tmp_path / "restarting", zk_chroot).start()
    try:
        controller = TidelogAdmin(broker.bootstrap)._controller()
        assert controller == ("127.0.0.1", broker.port)
        assert broker.stop() == 0
        with pytest.raises(ConnectionError, match=f"no broker answered: 127.0.0.1:{broker.port}"):
            TidelogAdmin(broker.bootstrap, timeout=0.5)._connect(controller)

        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            # Refused at first: the broker's process is only starting.
            reaching = pool.submit(TidelogAdmin(broker.bootstrap, timeout=60)._connect, controller)
            broker.start()
            with reaching.result(timeout=60) as connection:
                assert connection.request(ApiKey.METADATA, None, {"topics": []}).brokers
    finally:
        assert broker.stop() == 0
