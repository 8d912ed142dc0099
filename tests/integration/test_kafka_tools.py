"""Apache Kafka's own command-line tools against tidelog: they succeed and print what
they print against Kafka."""

from __future__ import annotations

import re

import pytest

from integration.broker_process import BrokerProcess
from kafka_reference.tools import run_kafka_tool


@pytest.fixture(scope="module")
def tool_broker(tmp_path_factory, zookeeper):
    chroot = f"{zookeeper.connect_string}/kafka-tools"
    process = BrokerProcess(
        tmp_path_factory.mktemp("tools"),
        chroot,
        overrides={"group.initial.rebalance.delay.ms": "0"},
    ).start()
    yield process
    assert process.stop() == 0


def ok(result) -> str:
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_kafka_topics_create_list_describe(tool_broker):
    bootstrap = tool_broker.bootstrap
    out = ok(
        run_kafka_tool(
            "kafka-topics",
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            "tools-a",
            "--partitions",
            "3",
            "--replication-factor",
            "1",
            "--config",
            "retention.ms=60000",
        )
    )
    assert out.strip() == "Created topic tools-a."
    assert (
        "tools-a"
        in ok(run_kafka_tool("kafka-topics", "--bootstrap-server", bootstrap, "--list")).split()
    )
    out = ok(
        run_kafka_tool(
            "kafka-topics", "--bootstrap-server", bootstrap, "--describe", "--topic", "tools-a"
        )
    )
    lines = out.strip().splitlines()
    assert re.match(
        r"Topic: tools-a\s+TopicId: \S+\s+PartitionCount: 3\s+"
        r"ReplicationFactor: 1\s+Configs: .*retention\.ms=60000",
        lines[0],
    ), lines[0]
    for partition, line in enumerate(lines[1:]):
        assert re.match(
            rf"\s*Topic: tools-a\s+Partition: {partition}\s+Leader: 1\s+" r"Replicas: 1\s+Isr: 1",
            line,
        ), line
    duplicate = run_kafka_tool(
        "kafka-topics",
        "--bootstrap-server",
        bootstrap,
        "--create",
        "--topic",
        "tools-a",
        "--partitions",
        "1",
    )
    assert duplicate.returncode != 0 and "already exists" in duplicate.stdout + duplicate.stderr


def test_kafka_topics_alter_partitions(tool_broker):
    bootstrap = tool_broker.bootstrap
    ok(
        run_kafka_tool(
            "kafka-topics",
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            "tools-grow",
            "--partitions",
            "1",
        )
    )
    ok(
        run_kafka_tool(
            "kafka-topics",
            "--bootstrap-server",
            bootstrap,
            "--alter",
            "--topic",
            "tools-grow",
            "--partitions",
            "4",
        )
    )
    out = ok(
        run_kafka_tool(
            "kafka-topics", "--bootstrap-server", bootstrap, "--describe", "--topic", "tools-grow"
        )
    )
    assert "PartitionCount: 4" in out


def test_console_producer_and_consumer(tool_broker):
    bootstrap = tool_broker.bootstrap
    lines = [f"key-{i}:value-{i}" for i in range(50)]
    ok(
        run_kafka_tool(
            "kafka-console-producer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "tools-console",
            "--property",
            "parse.key=true",
            "--property",
            "key.separator=:",
            stdin="\n".join(lines) + "\n",
        )
    )
    # A subscribing consumer, through a consumer group.
    out = ok(
        run_kafka_tool(
            "kafka-console-consumer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "tools-console",
            "--group",
            "tools-console-group",
            "--from-beginning",
            "--max-messages",
            "50",
            "--property",
            "print.key=true",
            "--property",
            "key.separator=:",
            "--timeout-ms",
            "20000",
        )
    )
    assert sorted(out.strip().splitlines()) == sorted(lines)


def test_get_offsets(tool_broker):
    bootstrap = tool_broker.bootstrap
    ok(
        run_kafka_tool(
            "kafka-console-producer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "tools-offsets",
            stdin="a\nb\nc\n",
        )
    )
    out = ok(
        run_kafka_tool(
            "kafka-get-offsets", "--bootstrap-server", bootstrap, "--topic", "tools-offsets"
        )
    )
    assert out.strip() == "tools-offsets:0:3"
    out = ok(
        run_kafka_tool(
            "kafka-get-offsets",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "tools-offsets",
            "--time",
            "-2",
        )
    )
    assert out.strip() == "tools-offsets:0:0"


def test_kafka_configs_describe_and_alter(tool_broker):
    bootstrap = tool_broker.bootstrap
    ok(
        run_kafka_tool(
            "kafka-topics",
            "--bootstrap-server",
            bootstrap,
            "--create",
            "--topic",
            "tools-configs",
            "--partitions",
            "1",
        )
    )
    ok(
        run_kafka_tool(
            "kafka-configs",
            "--bootstrap-server",
            bootstrap,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "tools-configs",
            "--add-config",
            "retention.ms=123456,cleanup.policy=compact",
        )
    )
    out = ok(
        run_kafka_tool(
            "kafka-configs",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--entity-type",
            "topics",
            "--entity-name",
            "tools-configs",
        )
    )
    assert "Dynamic configs for topic tools-configs are:" in out
    assert "retention.ms=123456 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:" in out
    out = ok(
        run_kafka_tool(
            "kafka-configs",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--entity-type",
            "brokers",
            "--entity-name",
            "1",
            "--all",
        )
    )
    assert "log.retention.hours=168" in out


def test_kafka_log_dirs(tool_broker):
    bootstrap = tool_broker.bootstrap
    ok(
        run_kafka_tool(
            "kafka-console-producer",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "tools-dirs",
            stdin="x\n",
        )
    )
    out = ok(
        run_kafka_tool(
            "kafka-log-dirs",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--topic-list",
            "tools-dirs",
        )
    )
    assert "Querying brokers for log directories information" in out
    assert '"partition":"tools-dirs-0"' in out
    assert all(f'"logDir":"{d.resolve()}"' in out for d in tool_broker.log_dirs)


def test_producer_and_consumer_perf_tests(tool_broker):
    bootstrap = tool_broker.bootstrap
    out = ok(
        run_kafka_tool(
            "kafka-producer-perf-test",
            "--topic",
            "tools-perf",
            "--num-records",
            "20000",
            "--record-size",
            "100",
            "--throughput",
            "-1",
            "--producer-props",
            f"bootstrap.servers={bootstrap}",
            "acks=1",
        )
    )
    assert re.search(r"20000 records sent, [\d.]+ records/sec", out), out
    out = ok(
        run_kafka_tool(
            "kafka-consumer-perf-test",
            "--bootstrap-server",
            bootstrap,
            "--topic",
            "tools-perf",
            "--group",
            "tools-perf-group",
            "--messages",
            "20000",
            "--timeout",
            "30000",
        )
    )
    # start.time, end.time, MB, MB/s, records consumed, records/s, rebalance ms, ...
    fields = [f.strip() for f in out.strip().splitlines()[-1].split(",")]
    assert fields[4] == "20000", out
