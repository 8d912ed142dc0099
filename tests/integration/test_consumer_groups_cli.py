"""``tidelog-consumer-groups`` and Apache Kafka's ``kafka-consumer-groups`` on the same
group: a real consumer (confluent-kafka) commits offsets, then both tools list, describe
(offsets, members, state), refuse to reset, delete or delete offsets while it is active,
and after it left compute the same reset for every scenario; ours then executes them.

Which brokers: the 3-broker tidelog ``cluster`` fixture by default. Setting
``TIDELOG_CG_TEST_BROKERS=kafka`` (or ``tidelog,kafka``) runs the same test against one
Apache Kafka 3.9.1 broker (``bench/kafka_broker.py``), which is how the test itself was
checked.
"""

from __future__ import annotations

import datetime as dt
import importlib.util
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as KafkaTopicPartition

from kafka_reference.tools import run_kafka_tool
from tidelog.admin import AdminClient
from waiting import wait_until

ROOT = Path(__file__).resolve().parents[2]
BROKERS = os.environ.get("TIDELOG_CG_TEST_BROKERS", "tidelog").split(",")

GROUP = "cg-test"
ORDERS, AUDIT = "cg-orders", "cg-audit"
OLD_PER_PARTITION = {ORDERS: 10, AUDIT: 3}  # records three hours old
NEW_PER_PARTITION = {ORDERS: 10, AUDIT: 3}  # then records ten minutes old
PARTITIONS = {ORDERS: 3, AUDIT: 2}
COMMITTED = {(ORDERS, 0): 15, (ORDERS, 1): 20, (ORDERS, 2): 5, (AUDIT, 0): 3}
TIMEOUT = ["--timeout", "20000"]


def _kafka_broker_class():
    spec = importlib.util.spec_from_file_location("kafka_broker", ROOT / "bench/kafka_broker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.KafkaBroker


@dataclass
class Target:
    name: str
    bootstrap: str
    brokers: int


@pytest.fixture(params=BROKERS)
def target(request, tmp_path, zk_chroot):
    if request.param == "kafka":
        broker = _kafka_broker_class()(tmp_path / "kafka", zk_chroot, log_dirs=1).start()
        try:
            yield Target("kafka", broker.bootstrap, 1)
        finally:
            broker.stop()
    else:
        cluster = request.getfixturevalue("cluster")
        bootstrap = cluster.bootstrap
        yield Target("tidelog", bootstrap, len(cluster.brokers))


# -- running both tools -------------------------------------------------------------------------


def ours(target: Target, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog.cli.consumer_groups",
            "--bootstrap-server",
            target.bootstrap,
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def kafkas(target: Target, *args: str) -> subprocess.CompletedProcess:
    return run_kafka_tool("kafka-consumer-groups", "--bootstrap-server", target.bootstrap, *args)


def ok(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def table(text: str, header: str) -> list[tuple[str, ...]]:
    """The rows under the line starting with ``header``, split on whitespace."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header))
    return [tuple(line.split()) for line in lines[start + 1 :] if line.strip()]


def reset_rows(text: str) -> set[tuple[str, str, int, int]]:
    """GROUP TOPIC PARTITION NEW-OFFSET rows, from our table or from Kafka 3.9's, which
    prints them all on one line."""
    tokens = text.split()
    start = tokens.index("NEW-OFFSET") + 1
    body = tokens[start:]
    assert len(body) % 4 == 0, text
    return {
        (g, t, int(p), int(o)) for g, t, p, o in (body[i : i + 4] for i in range(0, len(body), 4))
    }


# -- the cluster side ---------------------------------------------------------------------------


def create_topics(target: Target, admin: AdminClient) -> None:
    for topic, count in PARTITIONS.items():
        admin.create_topic(topic, count, target.brokers)

    def led() -> bool:
        metadata = admin.metadata(list(PARTITIONS))
        return all(
            t.error_code == 0
            and len(t.partitions) == PARTITIONS[t.name]
            and all(p.leader_id >= 0 for p in t.partitions)
            for t in metadata.topics
        )

    wait_until(led, "every partition has a leader")


def produce(target: Target, now_ms: int) -> None:
    producer = Producer({"bootstrap.servers": target.bootstrap, "linger.ms": 5})
    for topic, count in PARTITIONS.items():
        for partition in range(count):
            batches = (
                (OLD_PER_PARTITION[topic], now_ms - 3 * 3600_000),
                (NEW_PER_PARTITION[topic], now_ms - 600_000),
            )
            for records, timestamp in batches:
                for i in range(records):
                    producer.produce(
                        topic, value=b"v%d" % i, partition=partition, timestamp=timestamp + i
                    )
                # Old before new in each partition.
                assert producer.flush(30) == 0
    producer.flush(30)


def log_end(topic: str) -> int:
    return OLD_PER_PARTITION[topic] + NEW_PER_PARTITION[topic]


def start_consumer(target: Target, admin: AdminClient) -> Consumer:
    consumer = Consumer(
        {
            "bootstrap.servers": target.bootstrap,
            "group.id": GROUP,
            "client.id": "cg-client",
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([ORDERS, AUDIT])

    def assigned() -> bool:
        consumer.poll(0.2)
        return len(consumer.assignment()) == sum(PARTITIONS.values())

    wait_until(assigned, "the consumer has every partition", timeout=60)
    consumer.commit(
        offsets=[KafkaTopicPartition(t, p, o) for (t, p), o in COMMITTED.items()],
        asynchronous=False,
    )
    wait_until(lambda: group_state(admin) == "Stable", "the group is stable")
    return consumer


def group_state(admin: AdminClient) -> str:
    return admin.describe_groups([GROUP])[GROUP].state


def committed(admin: AdminClient, group: str = GROUP) -> dict[tuple[str, int], int]:
    return {(tp.topic, tp.partition): o.offset for tp, o in admin.list_group_offsets(group).items()}


def utc(ms: int) -> str:
    moment = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms % 1000:03d}"


# -- the test ---------------------------------------------------------------------------------


def test_both_tools_agree_on_a_real_group(target):
    admin = AdminClient(target.bootstrap, timeout=20)
    create_topics(target, admin)
    now_ms = int(time.time() * 1000)
    produce(target, now_ms)
    consumer = start_consumer(target, admin)
    try:
        check_active_group(target, admin)
    finally:
        consumer.close()
    wait_until(lambda: group_state(admin) == "Empty", "the group is empty after the close")
    check_inactive_group(target)
    check_resets(target, admin, now_ms)
    check_delete_offsets(target, admin)
    check_delete(target, admin)


def check_active_group(target: Target, admin: AdminClient) -> None:
    # --list, --list --state
    assert GROUP in ok(ours(target, "--list")).split()
    assert GROUP in ok(kafkas(target, "--list")).split()
    our_states = table(ok(ours(target, "--list", "--state")), "GROUP")
    assert (GROUP, "Stable") in our_states
    assert set(our_states) == set(table(ok(kafkas(target, "--list", "--state")), "GROUP"))
    assert [r[0] for r in table(ok(ours(target, "--list", "--state", "empty")), "GROUP")] == [
        g for g, s in our_states if s == "Empty"
    ]

    # --describe: the offsets view
    result = ours(target, "--describe", "--group", GROUP, *TIMEOUT)
    rows = table(ok(result), "GROUP")
    assert result.stderr == ""
    (member,) = admin.describe_groups([GROUP])[GROUP].members
    host, client = member.client_host, member.client_id
    expected = set()
    for topic, count in PARTITIONS.items():
        for p in range(count):
            offset = COMMITTED.get((topic, p))
            lag = "-" if offset is None else str(log_end(topic) - offset)
            current = "-" if offset is None else str(offset)
            end = str(log_end(topic))
            expected.add((GROUP, topic, str(p), current, end, lag, member.member_id, host, client))
    assert set(rows) == expected
    assert len(rows) == len(expected)
    kafka_rows = table(ok(kafkas(target, "--describe", "--group", GROUP, *TIMEOUT)), "GROUP")
    assert set(kafka_rows) == set(rows)
    # --offsets is the same view
    assert set(table(ok(ours(target, "--describe", "--group", GROUP, "--offsets")), "GROUP")) == (
        expected
    )

    # --members, --members --verbose
    members = table(ok(ours(target, "--describe", "--group", GROUP, "--members")), "GROUP")
    assert members == [(GROUP, member.member_id, host, client, "5")]
    assert members == table(
        ok(kafkas(target, "--describe", "--group", GROUP, "--members")), "GROUP"
    )
    verbose = ok(ours(target, "--describe", "--group", GROUP, "--members", "--verbose"))
    assert verbose.splitlines()[-1].endswith(f"{AUDIT}(0,1), {ORDERS}(0,1,2)")
    kafka_verbose = ok(kafkas(target, "--describe", "--group", GROUP, "--members", "--verbose"))
    # Kafka 3.9 leaves the topic names out: "(0,1), (0,1,2)".
    assert kafka_verbose.splitlines()[-1].endswith("(0,1), (0,1,2)")

    # --state
    state = table(ok(ours(target, "--describe", "--group", GROUP, "--state")), "GROUP")
    coordinator = admin.find_coordinator(GROUP)
    address, node = f"{coordinator.host}:{coordinator.port}", f"({coordinator.node_id})"
    assert state == [(GROUP, address, node, "range", "Stable", "1")]
    assert state == table(ok(kafkas(target, "--describe", "--group", GROUP, "--state")), "GROUP")

    # Nothing can be reset, deleted or have its offsets deleted while a member is in it.
    refused = (
        f"Assignments can only be reset if the group '{GROUP}' is inactive, but the current "
        "state is Stable."
    )
    result = ours(target, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest")
    assert (result.returncode, result.stdout) == (1, "")
    assert f"Error: {refused}" in result.stderr.splitlines()
    result = ours(
        target, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--execute"
    )
    assert result.returncode == 1 and refused in result.stderr
    assert refused in ok(
        kafkas(target, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest")
    )
    assert committed(admin) == COMMITTED

    result = ours(target, "--delete", "--group", GROUP)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "Error: Deletion of some consumer groups failed:",
        f"* Group '{GROUP}' could not be deleted due to: NON_EMPTY_GROUP: The group is not "
        "empty.",
    ]
    assert "GroupNotEmptyException" in ok(kafkas(target, "--delete", "--group", GROUP))

    result = ours(target, "--delete-offsets", "--group", GROUP, "--topic", ORDERS)
    assert result.returncode == 1
    assert "Encounter some partition level error" in result.stderr
    statuses = table(result.stdout, "TOPIC")
    assert [s[:2] for s in statuses] == [(ORDERS, "0"), (ORDERS, "1"), (ORDERS, "2")]
    assert all(
        " ".join(s[2:]).startswith("Error: Deleting offsets of a topic is forbidden")
        for s in statuses
    )
    kafka_out = ok(kafkas(target, "--delete-offsets", "--group", GROUP, "--topic", ORDERS))
    assert kafka_out.count("GroupSubscribedToTopicException") == 3
    assert committed(admin) == COMMITTED


def check_inactive_group(target: Target) -> None:
    result = ours(target, "--describe", "--group", GROUP)
    assert result.stderr == f"Consumer group '{GROUP}' has no active members.\n"
    rows = table(ok(result), "GROUP")
    assert set(rows) == {
        (GROUP, t, str(p), str(o), str(log_end(t)), str(log_end(t) - o), "-", "-", "-")
        for (t, p), o in COMMITTED.items()
    }
    assert set(table(ok(kafkas(target, "--describe", "--group", GROUP)), "GROUP")) == set(rows)

    members = ours(target, "--describe", "--group", GROUP, "--members")
    assert members.stdout.split() == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS"]
    assert members.stdout == ok(kafkas(target, "--describe", "--group", GROUP, "--members"))

    state = table(ok(ours(target, "--describe", "--group", GROUP, "--state")), "GROUP")
    assert state[0][-2:] == ("Empty", "0")
    assert state == table(ok(kafkas(target, "--describe", "--group", GROUP, "--state")), "GROUP")

    missing = ours(target, "--describe", "--group", "cg-nobody")
    assert (missing.returncode, missing.stdout) == (1, "")
    assert missing.stderr == "Error: Consumer group 'cg-nobody' does not exist.\n"
    assert "Error: Consumer group 'cg-nobody' does not exist." in ok(
        kafkas(target, "--describe", "--group", "cg-nobody")
    )


def check_resets(target: Target, admin: AdminClient, now_ms: int) -> None:
    def expect(scope: list[str], scenario: list[str], offsets: dict, *, execute: bool) -> None:
        args = ["--reset-offsets", "--group", GROUP, *scope, *scenario]
        before = committed(admin)
        dry = ours(target, *args, "--dry-run")
        rows = reset_rows(ok(dry))
        assert rows == {(GROUP, t, p, o) for (t, p), o in offsets.items()}, args
        assert reset_rows(ok(kafkas(target, *args, "--dry-run"))) == rows, args
        assert committed(admin) == before, "a dry run changed offsets"
        if execute:
            assert reset_rows(ok(ours(target, *args, "--execute"))) == rows
            assert committed(admin) == {**before, **offsets}, args

    orders = [(ORDERS, p) for p in range(PARTITIONS[ORDERS])]
    audit = [(AUDIT, p) for p in range(PARTITIONS[AUDIT])]
    every = orders + audit

    expect(["--all-topics"], ["--to-earliest"], dict.fromkeys(COMMITTED, 0), execute=True)
    # The default is a dry run, with a warning.
    result = ours(target, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-latest")
    assert reset_rows(ok(result)) == {(GROUP, t, p, log_end(t)) for t, p in COMMITTED}
    assert result.stderr.startswith("WARN: No action will be performed")
    assert committed(admin) == dict.fromkeys(COMMITTED, 0)
    # audit-1 has no committed offset: --to-current takes the latest.
    expect(["--topic", AUDIT], ["--to-current"], {(AUDIT, 0): 0, (AUDIT, 1): 6}, execute=False)
    expect(["--topic", ORDERS], ["--to-latest"], dict.fromkeys(orders, 20), execute=True)
    expect(["--topic", ORDERS], ["--shift-by", "-4"], dict.fromkeys(orders, 16), execute=True)
    # Past the end: clamped to the log end offset.
    expect(["--topic", f"{ORDERS}:1"], ["--shift-by", "100"], {(ORDERS, 1): 20}, execute=True)
    expect(
        ["--topic", f"{ORDERS}:0,2", "--topic", AUDIT],
        ["--to-offset", "12"],
        {(ORDERS, 0): 12, (ORDERS, 2): 12, (AUDIT, 0): 6, (AUDIT, 1): 6},
        execute=True,
    )
    expect(["--topic", f"{ORDERS}:2"], ["--to-offset", "-5"], {(ORDERS, 2): 0}, execute=True)
    expect(
        ["--all-topics"],
        ["--to-current"],
        {(ORDERS, 0): 12, (ORDERS, 1): 20, (ORDERS, 2): 0, (AUDIT, 0): 6, (AUDIT, 1): 6},
        execute=True,
    )
    # An hour ago: the first of the ten-minute-old records.
    new_start = {tp: OLD_PER_PARTITION[tp[0]] for tp in every}
    expect(["--all-topics"], ["--to-datetime", utc(now_ms - 3600_000)], new_start, execute=True)
    expect(["--all-topics"], ["--by-duration", "P1D"], dict.fromkeys(every, 0), execute=True)
    expect(["--all-topics"], ["--by-duration", "PT1H"], new_start, execute=True)
    zoned = dt.datetime.fromtimestamp(
        (now_ms - 2 * 3600_000) / 1000, dt.timezone(dt.timedelta(hours=5, minutes=30))
    )
    expect(
        ["--all-topics"],
        ["--to-datetime", zoned.strftime("%Y-%m-%dT%H:%M:%S.000+05:30")],
        new_start,
        execute=False,
    )
    # After every record: the latest offsets, with a warning for each partition.
    future = ours(
        target,
        "--reset-offsets",
        "--group",
        GROUP,
        "--all-topics",
        "--to-datetime",
        "2999-01-01T00:00:00.000",
        "--dry-run",
    )
    assert reset_rows(ok(future)) == {(GROUP, t, p, log_end(t)) for t, p in every}
    assert (
        f"Partition 0 from topic {ORDERS} is empty. Falling back to latest known offset."
        in future.stderr
    )
    # --export: CSV of the same plan.
    export = ours(
        target, "--reset-offsets", "--group", GROUP, "--all-topics", "--to-earliest", "--export"
    )
    assert ok(export).splitlines() == [f"{t},{p},0" for t, p in sorted(every)]
    assert committed(admin) == new_start


def check_delete_offsets(target: Target, admin: AdminClient) -> None:
    result = ours(target, "--delete-offsets", "--group", GROUP, "--topic", AUDIT)
    lines = ok(result).splitlines()
    assert lines[0] == f"Request succeed for deleting offsets with topic {AUDIT} group {GROUP}"
    assert table(result.stdout, "TOPIC") == [(AUDIT, "0", "Successful"), (AUDIT, "1", "Successful")]
    assert set(committed(admin)) == {(ORDERS, p) for p in range(PARTITIONS[ORDERS])}
    # Both tools see what is left.
    rows = table(ok(ours(target, "--describe", "--group", GROUP)), "GROUP")
    assert {r[1] for r in rows} == {ORDERS}
    assert set(rows) == set(table(ok(kafkas(target, "--describe", "--group", GROUP)), "GROUP"))
    unknown = ours(target, "--delete-offsets", "--group", GROUP, "--topic", "cg-no-such-topic")
    assert unknown.returncode == 1
    assert table(unknown.stdout, "TOPIC")[0][:3] == ("cg-no-such-topic", "Not", "Provided")


def check_delete(target: Target, admin: AdminClient) -> None:
    deleted = f"Deletion of requested consumer groups ('{GROUP}') was successful."
    assert ok(ours(target, "--delete", "--group", GROUP)).splitlines() == [deleted]
    assert GROUP not in ok(ours(target, "--list")).split()
    assert "does not exist" in ok(kafkas(target, "--describe", "--group", GROUP))
    # A group made by a reset (offsets only, no member), deleted by Kafka's tool: the same
    # message.
    other = "cg-other"
    ok(
        ours(
            target,
            "--reset-offsets",
            "--group",
            other,
            "--topic",
            ORDERS,
            "--to-earliest",
            "--execute",
        )
    )
    assert committed(admin, other) == dict.fromkeys([(ORDERS, p) for p in range(3)], 0)
    assert other in ok(ours(target, "--list")).split()
    assert ok(kafkas(target, "--delete", "--group", other)).splitlines() == [
        f"Deletion of requested consumer groups ('{other}') was successful."
    ]
    again = ours(target, "--delete", "--group", other)
    assert again.returncode == 1
    assert "GROUP_ID_NOT_FOUND" in again.stderr
