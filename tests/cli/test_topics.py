"""``tidelog-topics`` without a broker: option checks as Kafka's ``kafka-topics.sh``
makes them, replica assignments, configs and topic filters, Kafka's topic id spelling,
the partition filters of ``--describe`` and its lines."""

from __future__ import annotations

import io
import uuid

import pytest

from tidelog.admin.topics import (
    ConfigEntry,
    ConfigSource,
    PartitionInfo,
    Reassignment,
    TopicDescription,
)
from tidelog.cli import topics
from tidelog.cli.topic_tables import (
    PartitionRow,
    format_partition,
    format_topic,
    kafka_uuid,
    parse_kafka_uuid,
    replication_factor,
)
from tidelog.cli.topics import (
    UsageError,
    parse_args,
    parse_configs,
    parse_replica_assignment,
    topic_filter,
)

BS = ["--bootstrap-server", "127.0.0.1:9092"]

# -- options --------------------------------------------------------------------------------


def test_an_action_and_a_bootstrap_server_are_required():
    with pytest.raises(UsageError, match="exactly one action"):
        parse_args([*BS, "--topic", "t"])
    with pytest.raises(UsageError, match="exactly one action"):
        parse_args([*BS, "--list", "--describe"])
    with pytest.raises(UsageError, match="--bootstrap-server must be specified"):
        parse_args(["--list"])
    with pytest.raises(UsageError, match="Invalid --bootstrap-server"):
        parse_args(["--bootstrap-server", "localhost", "--list"])


@pytest.mark.parametrize("action", ["--create", "--alter", "--delete"])
def test_topic_is_required_except_to_list_and_describe(action):
    with pytest.raises(UsageError, match=r'Missing required argument "\[topic\]"'):
        parse_args([*BS, action, "--partitions", "2"])
    assert parse_args([*BS, "--list"]).topic is None
    assert parse_args([*BS, "--describe"]).topic is None


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--describe", "--config", "a=b"], r"\[config\] can't be used with option \[describe\]"),
        (["--create", "--topic", "t", "--delete-config", "a"], r"\[delete-config\].*\[create\]"),
        (["--alter", "--topic", "t", "--replication-factor", "2"], r"\[replication-factor\]"),
        (["--list", "--under-replicated-partitions"], r"\[under-replicated-partitions\]"),
        (["--create", "--topic", "t", "--if-exists"], r"\[if-exists\].*\[create\]"),
        (["--delete", "--topic", "t", "--if-not-exists"], r"\[if-not-exists\].*\[delete\]"),
        (["--create", "--topic", "t", "--exclude-internal"], r"\[exclude-internal\]"),
        (["--list", "--topic-id", "AAAAAAAAAAAAAAAAAAAAAA"], r"\[topic-id\].*\[list\]"),
        (
            ["--describe", "--unavailable-partitions", "--topics-with-overrides"],
            r"\[unavailable-partitions\] can't be used with option \[topics-with-overrides\]",
        ),
        (
            ["--create", "--topic", "t", "--replica-assignment", "1:2", "--partitions", "2"],
            r"\[replica-assignment\] can't be used with option \[partitions\]",
        ),
        (["--alter", "--topic", "t"], r"\[alter\] takes one or more of these options"),
        (["--alter", "--topic", "t", "--replica-assignment", "1"], r"\[partitions\]"),
        (["--describe", "--if-exists"], "--topic or --topic-id is required"),
        (["--create", "--topic", "t", "--replication-factor", "0"], "between 1 and 32767"),
        (["--create", "--topic", "t", "--partitions", "0"], "must be greater than 0"),
        (["--create", "--topic", "t", "--config", "a"], 'format "key=val"'),
        (["--describe", "--topic", "("], "Invalid topic regular expression"),
        (["--describe", "--topic-id", "not-an-id"], "Invalid topic id"),
        (["--list", "--command-config", "nowhere.properties"], r"Cannot read --command-config"),
        (["--describe", "--partition-size-limit-per-response", "5"], "not supported"),
        (["--list", "--bogus"], "unrecognized arguments"),
    ],
)
def test_bad_options_are_refused_with_one_line(args, message):
    with pytest.raises(UsageError, match=message):
        parse_args([*BS, *args])


def test_options_are_read():
    o = parse_args(
        [
            *BS,
            "--create",
            "--topic",
            "t",
            "--partitions",
            "3",
            "--replication-factor",
            "2",
            "--config",
            "retention.ms = 1000",
            "--config",
            "cleanup.policy=compact",
        ]
    )
    assert (o.action, o.topic, o.partitions, o.replication_factor) == ("create", "t", 3, 2)
    assert o.configs == {"retention.ms": "1000", "cleanup.policy": "compact"}
    o = parse_args([*BS, "--alter", "--topic", "t", "--partitions", "4", "--delete-config", "x"])
    assert (o.partitions, o.delete_configs, o.configs) == (4, ["x"], {})
    o = parse_args([*BS, "--describe", "--under-min-isr-partitions", "--at-min-isr-partitions"])
    assert o.reports == ("under_min_isr_partitions", "at_min_isr_partitions")


def test_main_prints_one_error_line_and_exits_1():
    out, err = io.StringIO(), io.StringIO()
    assert topics.main([*BS, "--list", "--create"], out, err) == 1
    assert out.getvalue() == ""
    assert err.getvalue().startswith("Error: Command must include exactly one action")
    assert len(err.getvalue().splitlines()) == 1


# -- values ---------------------------------------------------------------------------------


def test_replica_assignments_as_kafka_reads_them():
    assert parse_replica_assignment("1:2, 2 : 3,3:1") == {0: [1, 2], 1: [2, 3], 2: [3, 1]}
    assert parse_replica_assignment("4") == {0: [4]}
    with pytest.raises(ValueError, match="may not contain duplicate entries: 2"):
        parse_replica_assignment("1:2,2:2")
    with pytest.raises(ValueError, match=r"Partition 1 has different replication factor: \[3\]"):
        parse_replica_assignment("1:2,3")
    with pytest.raises(ValueError, match="expected broker ids"):
        parse_replica_assignment("1:x")


def test_configs_are_key_value_pairs():
    assert parse_configs(["a=b", " c = d "]) == {"a": "b", "c": "d"}
    with pytest.raises(ValueError, match='"key=val"'):
        parse_configs(["a=b=c"])


def test_topic_filters_match_whole_names_and_commas_separate_alternatives():
    names = ["orders", "orders-dlq", "audit", "__consumer_offsets"]
    assert [n for n in names if topic_filter("orders").fullmatch(n)] == ["orders"]
    assert [n for n in names if topic_filter("orders.*").fullmatch(n)] == ["orders", "orders-dlq"]
    assert [n for n in names if topic_filter('"audit, orders"').fullmatch(n)] == [
        "orders",
        "audit",
    ]


def test_topic_ids_are_spelled_as_kafka_spells_them():
    value = uuid.UUID("0f9b6e2c-5c1a-4c3e-9e4f-2b7d8a6c1e00")
    text = kafka_uuid(value)
    assert len(text) == 22 and "=" not in text and "+" not in text and "/" not in text
    assert parse_kafka_uuid(text) == value
    assert kafka_uuid(uuid.UUID(int=0)) == "AAAAAAAAAAAAAAAAAAAAAA"
    with pytest.raises(ValueError):
        parse_kafka_uuid("AAAA")


# -- describe -------------------------------------------------------------------------------


def info(leader, replicas, isr, partition=0):
    return PartitionInfo(partition, leader, 0, tuple(replicas), tuple(isr))


def test_partition_filters():
    healthy = PartitionRow("t", info(1, [1, 2, 3], [1, 2, 3]), min_isr=2)
    assert not healthy.under_replicated
    assert not healthy.unavailable([1, 2, 3])
    assert not healthy.under_min_isr and not healthy.at_min_isr
    lagging = PartitionRow("t", info(1, [1, 2, 3], [1]), min_isr=2)
    assert lagging.under_replicated and lagging.under_min_isr and not lagging.at_min_isr
    at_min = PartitionRow("t", info(1, [1, 2, 3], [1, 2]), min_isr=2)
    assert at_min.at_min_isr and not at_min.under_min_isr
    leaderless = PartitionRow("t", info(None, [3], [3]))
    assert leaderless.unavailable([1, 2]) and leaderless.under_min_isr
    assert not leaderless.under_replicated
    led_by_a_dead_broker = PartitionRow("t", info(3, [3, 1], [3, 1]))
    assert led_by_a_dead_broker.unavailable([1, 2])


def test_replication_factor_leaves_out_replicas_being_added():
    moving = Reassignment(replicas=(1, 2, 3, 4), adding=(3, 4), removing=(1, 2))
    partition = info(1, [1, 2, 3, 4], [1, 2])
    assert replication_factor(partition, moving) == 2
    assert not PartitionRow("t", partition, moving).under_replicated
    assert replication_factor(partition, None) == 4
    done = info(3, [3, 4], [3, 4])  # finished between the two reads
    assert replication_factor(done, Reassignment((1, 2), (), (5,))) == 2


def test_describe_lines_as_kafka_prints_them():
    topic_id = uuid.UUID(int=1)
    description = TopicDescription(
        "orders", topic_id, False, (info(1, [1, 2], [2, 1]), info(None, [2, 3], [], 1))
    )
    configs = {
        "cleanup.policy": ConfigEntry("cleanup.policy", "delete", ConfigSource.DEFAULT_CONFIG),
        "min.insync.replicas": ConfigEntry(
            "min.insync.replicas", "2", ConfigSource.DYNAMIC_TOPIC_CONFIG
        ),
        "segment.bytes": ConfigEntry("segment.bytes", "1024", ConfigSource.STATIC_BROKER_CONFIG),
    }
    assert format_topic(description, 2, configs) == (
        f"Topic: orders\tTopicId: {kafka_uuid(topic_id)}\tPartitionCount: 2\t"
        "ReplicationFactor: 2\tConfigs: min.insync.replicas=2,segment.bytes=1024\n"
    )
    no_id = TopicDescription("t", None, False, ())
    assert format_topic(no_id, 1, {}) == (
        "Topic: t\tPartitionCount: 0\tReplicationFactor: 1\tConfigs: \n"
    )
    assert format_partition(PartitionRow("orders", description.partitions[0])) == (
        "\tTopic: orders\tPartition: 0\tLeader: 1\tReplicas: 1,2\tIsr: 2,1"
        "\tElr: N/A\tLastKnownElr: N/A\n"
    )
    moving = Reassignment((2, 3, 4), (4,), (3,))
    assert format_partition(PartitionRow("orders", description.partitions[1], moving)) == (
        "\tTopic: orders\tPartition: 1\tLeader: none\tReplicas: 2,3\tIsr: "
        "\tAdding Replicas: 4\tRemoving Replicas: 3\tElr: N/A\tLastKnownElr: N/A\n"
    )
