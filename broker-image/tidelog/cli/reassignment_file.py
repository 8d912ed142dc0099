"""The JSON files and texts of ``kafka-reassign-partitions.sh`` (3.9), read and written.

A reassignment file::

    {"version": 1, "partitions": [
        {"topic": "t", "partition": 0, "replicas": [1, 2, 3],
         "log_dirs": ["any", "/data/1", "any"]}]}

``log_dirs`` is optional; an entry other than ``any`` moves that broker's replica to
that log dir (AlterReplicaLogDirs). A topics-to-move file is
``{"version": 1, "topics": [{"topic": "t"}, ...]}``. Written JSON is compact, with
Kafka's key order, as Kafka's tool prints it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tidelog.admin.groups import TopicPartition
from tidelog.admin.topics import Reassignment

__all__ = [
    "ANY_LOG_DIR",
    "PartitionTarget",
    "assignment_json",
    "format_ongoing",
    "parse_reassignment_file",
    "parse_topics_file",
    "throttled_replicas",
]

ANY_LOG_DIR = "any"


@dataclass(frozen=True)
class PartitionTarget:
    """A partition's target replicas, and the log dir wanted for each (``any``: none)."""

    replicas: tuple[int, ...]
    log_dirs: tuple[str, ...]

    def log_dir_moves(self) -> dict[int, str]:
        """broker → the log dir its replica must move to."""
        return {b: d for b, d in zip(self.replicas, self.log_dirs, strict=True) if d != ANY_LOG_DIR}


def _load(text: str, what: str) -> dict:
    if not text.strip():
        raise ValueError(f"the {what} file is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"the {what} file is not valid JSON: {error}") from None
    if not isinstance(data, dict):
        raise ValueError(f"the {what} file must hold a JSON object")
    version = data.get("version", 1)
    if version != 1:
        raise ValueError(f"Not supported version field value {version}")
    return data


def parse_reassignment_file(text: str) -> dict[TopicPartition, PartitionTarget]:
    """The partitions of a reassignment file; ValueError naming what is wrong."""
    data = _load(text, "reassignment")
    entries = data.get("partitions")
    if not isinstance(entries, list) or not entries:
        raise ValueError("Partition reassignment list cannot be empty")
    targets: dict[TopicPartition, PartitionTarget] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError(f"{json.dumps(entry)} is not a partition entry")
        topic, partition = entry.get("topic"), entry.get("partition")
        replicas = entry.get("replicas")
        if not isinstance(topic, str) or type(partition) is not int or partition < 0:
            raise ValueError(f"{json.dumps(entry)}: needs a topic and a partition number")
        tp = TopicPartition(topic, partition)
        if not isinstance(replicas, list) or not all(type(b) is int for b in replicas):
            raise ValueError(f"Partition {tp}: replicas must be a list of broker ids")
        if not replicas:
            raise ValueError(f"Partition replica list cannot be empty for {tp}")
        if len(set(replicas)) != len(replicas):
            raise ValueError(
                f"Duplicate replica assignment found: {tp} -> {','.join(map(str, replicas))}"
            )
        log_dirs = entry.get("log_dirs", [ANY_LOG_DIR] * len(replicas))
        if not isinstance(log_dirs, list) or not all(isinstance(d, str) for d in log_dirs):
            raise ValueError(f"Partition {tp}: log_dirs must be a list of paths or 'any'")
        if len(log_dirs) != len(replicas):
            raise ValueError(
                "Size of replicas list "
                f"{replicas} is different from size of log dirs list {log_dirs} for partition {tp}"
            )
        if tp in targets:
            raise ValueError(f"Reassignment contains duplicate topic partitions: {tp}")
        targets[tp] = PartitionTarget(tuple(replicas), tuple(log_dirs))
    return dict(sorted(targets.items()))


def parse_topics_file(text: str) -> list[str]:
    """The topics of a topics-to-move file; ValueError naming what is wrong."""
    data = _load(text, "topics-to-move")
    entries = data.get("topics")
    if not isinstance(entries, list) or not entries:
        raise ValueError("the topics-to-move file lists no topics")
    topics = []
    for entry in entries:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        if not isinstance(topic, str):
            raise ValueError(f'{json.dumps(entry)} is not {{"topic": <name>}}')
        topics.append(topic)
    return list(dict.fromkeys(topics))


def assignment_json(
    assignment: Mapping[tuple[str, int], Sequence[int]],
    log_dirs: Mapping[tuple[str, int], Sequence[str]] | None = None,
) -> str:
    """A reassignment file's JSON for ``assignment``, compact and in partition order."""
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": list(replicas),
            "log_dirs": list(
                (log_dirs or {}).get((topic, partition), [ANY_LOG_DIR] * len(replicas))
            ),
        }
        for (topic, partition), replicas in sorted(assignment.items())
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def format_ongoing(ongoing: Mapping[TopicPartition, Reassignment]) -> str:
    """``--list``'s text."""
    if not ongoing:
        return "No partition reassignments found.\n"
    lines = ["Current partition reassignments:"]
    for tp, moving in sorted(ongoing.items()):
        line = f"{tp}: replicas: {_ids(moving.replicas)}."
        if moving.adding:
            line += f" adding: {_ids(moving.adding)}."
        if moving.removing:
            line += f" removing: {_ids(moving.removing)}."
        lines.append(line)
    return "\n".join(lines) + "\n"


def throttled_replicas(
    current: Mapping[TopicPartition, Sequence[int]],
    targets: Mapping[TopicPartition, Sequence[int]],
) -> dict[str, tuple[str, str]]:
    """What ``--throttle`` writes per topic, as Kafka's tool does: the leader side
    throttles the current replicas of each partition of the file (a partition that
    keeps its replicas too: its followers are in sync, which no throttle holds back),
    the follower side the replicas it adds (``partition:broker,...``)."""
    leader: dict[str, list[str]] = {}
    follower: dict[str, list[str]] = {}
    for tp, replicas in sorted(targets.items()):
        before = list(current[tp])
        leader.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in before)
        adding = [b for b in replicas if b not in before]
        follower.setdefault(tp.topic, []).extend(f"{tp.partition}:{b}" for b in adding)
    return {
        topic: (",".join(leader[topic]), ",".join(follower.get(topic, [])))
        for topic in sorted(leader)
    }


def _ids(brokers: Iterable[int]) -> str:
    return ",".join(map(str, brokers))
