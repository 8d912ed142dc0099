"""Asynchronous commits that a consumer (confluent-kafka) pipelines on its coordinator
connection: every one is answered, in order, without error, the last one is what the
group has, and the broker appended bursts of them as single batches to
``__consumer_offsets`` (fewer batches than commits)."""

from __future__ import annotations

import time

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from integration.test_admin_apis import wait_until_serving
from integration.test_commit_unknown_partitions import committed
from tidelog.coordinator.group_coordinator import OFFSETS_TOPIC, partition_for
from tidelog.records.batch import iter_batch_headers

COMMITS = 400
PARTITIONS = 6
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, Kafka's default


def offsets_batches(broker, group: str) -> int:
    """Batches in the log of ``group``'s offsets partition, on whichever log dir has it."""
    name = f"{OFFSETS_TOPIC}-{partition_for(group, OFFSETS_PARTITIONS)}"
    (directory,) = [d / name for d in broker.log_dirs if (d / name).is_dir()]
    return sum(
        len(list(iter_batch_headers(path.read_bytes()))) for path in sorted(directory.glob("*.log"))
    )


def test_pipelined_async_commits_are_all_answered_and_appended_in_bursts(broker):
    wait_until_serving(broker)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("work", PARTITIONS, 1)])["work"].result(30)
    answered: list[tuple[object, list[int]]] = []
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "pipelining",
            "enable.auto.commit": False,
            "on_commit": lambda error, done: answered.append((error, [p.offset for p in done])),
        }
    )
    try:
        consumer.assign([CTopicPartition("work", p) for p in range(PARTITIONS)])
        # The first commit finds the coordinator; the rest go out back to back.
        consumer.commit(offsets=[CTopicPartition("work", 0, 0)], asynchronous=False)
        before = offsets_batches(broker, "pipelining")
        for i in range(1, COMMITS + 1):
            offsets = [CTopicPartition("work", p, i * PARTITIONS + p) for p in range(PARTITIONS)]
            consumer.commit(offsets=offsets, asynchronous=True)
        deadline = time.monotonic() + 30
        while len(answered) < COMMITS and time.monotonic() < deadline:
            consumer.poll(0.1)
    finally:
        consumer.close()
    assert len(answered) == COMMITS
    assert [error for error, _ in answered] == [None] * COMMITS
    assert [offsets[0] for _, offsets in answered] == [
        i * PARTITIONS for i in range(1, COMMITS + 1)
    ]
    assert committed(admin, "pipelining") == {
        ("work", p): COMMITS * PARTITIONS + p for p in range(PARTITIONS)
    }
    appended = offsets_batches(broker, "pipelining") - before
    assert 1 <= appended < COMMITS, f"{appended} batches for {COMMITS} commits"
