"""Data-movement calls of :class:`~tidelog.admin.AdminClient`: partition reassignments
(AlterPartitionReassignments, at the controller), moves between the log dirs of a broker
(AlterReplicaLogDirs and DescribeLogDirs, at that broker), the brokers with their racks,
the cluster's state as the planner takes it, and the replication throttles that
``kafka-reassign-partitions.sh --throttle`` sets (seed 003: 分区重分配, 修改主题限速).

Per-partition errors are returned, not raised, so that a tool can report each one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tidelog.admin.connection import BrokerConnection
from tidelog.admin.errors import AdminError
from tidelog.admin.groups import TopicPartition
from tidelog.admin.planner import ClusterState
from tidelog.admin.topics import AlterConfigOp, ConfigResourceType, OpType
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode

__all__ = [
    "BROKER_THROTTLE_RATES",
    "LOG_DIR_THROTTLE_RATE",
    "TOPIC_THROTTLED_REPLICAS",
    "LogDirDescription",
    "MovesMixin",
    "ReplicaInfo",
]

LEADER_RATE = "leader.replication.throttled.rate"
FOLLOWER_RATE = "follower.replication.throttled.rate"
BROKER_THROTTLE_RATES = (LEADER_RATE, FOLLOWER_RATE)
LOG_DIR_THROTTLE_RATE = "replica.alter.log.dirs.io.max.bytes.per.second"
LEADER_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_REPLICAS = "follower.replication.throttled.replicas"
TOPIC_THROTTLED_REPLICAS = (LEADER_REPLICAS, FOLLOWER_REPLICAS)
DRAINING_DIRS = "log.dirs.draining"


@dataclass(frozen=True)
class ReplicaInfo:
    """One replica in a log dir: its bytes, how far it lags (behind the high watermark,
    or a future replica behind its current one) and whether it is a future replica."""

    size: int
    offset_lag: int
    is_future: bool


@dataclass(frozen=True)
class LogDirDescription:
    """A log dir of a broker; ``error`` is None when it is online."""

    path: str
    error: ErrorCode | None
    replicas: dict[TopicPartition, ReplicaInfo]
    total_bytes: int
    usable_bytes: int

    def current(self) -> dict[TopicPartition, ReplicaInfo]:
        return {tp: r for tp, r in self.replicas.items() if not r.is_future}

    def future(self) -> dict[TopicPartition, ReplicaInfo]:
        return {tp: r for tp, r in self.replicas.items() if r.is_future}


class MovesMixin:
    """Reassignment, log-dir and throttle calls; mixed into
    :class:`~tidelog.admin.AdminClient`."""

    timeout: float
    _connect: Callable[..., BrokerConnection]
    _send: Callable[..., tuple[Any, int]]
    _controller_request: Callable[..., tuple[Any, int]]
    metadata: Callable[..., Any]
    describe_topics: Callable[..., Any]
    incremental_alter_configs: Callable[..., dict]

    # -- brokers and the cluster's state -----------------------------------------------------

    def broker_racks(self) -> dict[int, str | None]:
        """The live brokers and their racks (None: no rack)."""
        return {b.node_id: b.rack for b in sorted(self.metadata([]).brokers, key=_node_id)}

    def _addresses(self) -> dict[int, tuple[str, int]]:
        return {b.node_id: (b.host, b.port) for b in self.metadata([]).brokers}

    def cluster_state(self, topics: Iterable[str] | None = None) -> ClusterState:
        """The assignment of ``topics`` (every topic when None), the live brokers with
        their racks and each partition's size on its leader, as the planner takes it."""
        described = self.describe_topics(topics)
        assignment = {
            TopicPartition(name, p.partition): list(p.replicas)
            for name, topic in described.items()
            for p in topic.partitions
        }
        leaders = {
            TopicPartition(name, p.partition): p.leader
            for name, topic in described.items()
            for p in topic.partitions
        }
        sizes: dict[TopicPartition, int] = {}
        for broker, dirs in self.describe_log_dirs(topics=list(described)).items():
            for log_dir in dirs:
                for tp, replica in log_dir.current().items():
                    if leaders.get(tp) == broker:
                        sizes[tp] = replica.size
        return ClusterState(assignment, self.broker_racks(), sizes)

    # -- reassignments -----------------------------------------------------------------------

    def alter_partition_reassignments(
        self, targets: Mapping[tuple[str, int], Iterable[int] | None]
    ) -> dict[TopicPartition, AdminError | None]:
        """Start (a replica list) or cancel (None) each partition's reassignment at the
        controller: each partition's error, None when accepted. A request-level error
        raises :class:`AdminError`."""
        by_topic: dict[str, list[dict]] = {}
        for (topic, partition), replicas in sorted(targets.items()):
            by_topic.setdefault(topic, []).append(
                {
                    "partition_index": partition,
                    "replicas": None if replicas is None else list(replicas),
                }
            )
        if not by_topic:
            return {}
        response, _ = self._controller_request(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            lambda v: {
                "timeout_ms": int(self.timeout * 1000),
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            },
            lambda r, v: [r.error_code],
        )
        if response.error_code != ErrorCode.NONE:
            code = ErrorCode(response.error_code)
            raise AdminError(code, response.error_message or code.name)
        return {
            TopicPartition(t.name, p.partition_index): None
            if p.error_code == ErrorCode.NONE
            else AdminError(p.error_code, p.error_message or ErrorCode(p.error_code).name)
            for t in response.responses
            for p in t.partitions
        }

    # -- log dirs ----------------------------------------------------------------------------

    def describe_log_dirs(
        self, brokers: Iterable[int] | None = None, topics: Iterable[str] | None = None
    ) -> dict[int, list[LogDirDescription]]:
        """DescribeLogDirs at each of ``brokers`` (every live one when None), of the
        partitions of ``topics`` (all when None): broker → its log dirs. A broker that
        is not live raises :class:`AdminError` (BROKER_NOT_AVAILABLE)."""
        addresses = self._addresses()
        wanted = sorted(addresses) if brokers is None else sorted(set(brokers))
        missing = [b for b in wanted if b not in addresses]
        if missing:
            raise AdminError(
                ErrorCode.BROKER_NOT_AVAILABLE,
                "brokers not live: " + ",".join(map(str, missing)),
            )
        body_topics = None
        if topics is not None:
            described = self.describe_topics(topics)
            body_topics = [
                {"topic": name, "partitions": [p.partition for p in topic.partitions]}
                for name, topic in described.items()
            ]
        out = {}
        for broker in wanted:
            response, version = self._send(
                addresses[broker], ApiKey.DESCRIBE_LOG_DIRS, lambda v: {"topics": body_topics}
            )
            out[broker] = [_log_dir(result, version) for result in response.results]
        return out

    def alter_replica_log_dirs(
        self, broker: int, moves: Mapping[tuple[str, int], str]
    ) -> dict[TopicPartition, ErrorCode]:
        """AlterReplicaLogDirs at ``broker``: move each of its replicas to a log dir
        (its current one cancels a move in flight); each partition's error code
        (REPLICA_NOT_AVAILABLE: not hosted yet, the broker remembers the dir)."""
        addresses = self._addresses()
        if broker not in addresses:
            raise AdminError(ErrorCode.BROKER_NOT_AVAILABLE, f"broker {broker} is not live")
        by_dir: dict[str, dict[str, list[int]]] = {}
        for (topic, partition), path in sorted(moves.items()):
            by_dir.setdefault(path, {}).setdefault(topic, []).append(partition)
        response, _ = self._send(
            addresses[broker],
            ApiKey.ALTER_REPLICA_LOG_DIRS,
            lambda v: {
                "dirs": [
                    {
                        "path": path,
                        "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                    }
                    for path, topics in by_dir.items()
                ]
            },
        )
        return {
            TopicPartition(t.topic_name, p.partition_index): ErrorCode(p.error_code)
            for t in response.results
            for p in t.partitions
        }

    def draining_dirs(self, broker: int) -> set[str]:
        """Broker ``broker``'s ``log.dirs.draining`` (DescribeConfigs at that broker)."""
        configs = self.describe_configs(ConfigResourceType.BROKER, [str(broker)])
        entry = configs[str(broker)].get(DRAINING_DIRS)
        return {d for d in (entry.value or "").split(",") if d} if entry else set()

    def set_draining_dirs(self, broker: int, directories: Iterable[str]) -> None:
        """Set broker ``broker``'s ``log.dirs.draining`` (deleted when empty)."""
        value = ",".join(directories)
        change = AlterConfigOp(DRAINING_DIRS, OpType.SET, value)
        if not value:
            change = AlterConfigOp(DRAINING_DIRS, OpType.DELETE)
        _raise_first(
            self.incremental_alter_configs(ConfigResourceType.BROKER, {str(broker): [change]})
        )

    # -- throttles ---------------------------------------------------------------------------

    def set_throttles(
        self,
        broker_rates: Mapping[int, Mapping[str, int]],
        topic_replicas: Mapping[str, Mapping[str, str]],
    ) -> None:
        """Set broker throttle rates (broker → config → bytes/s) and topics' throttled
        replicas (topic → config → ``partition:broker,...``)."""
        _raise_first(
            self.incremental_alter_configs(
                ConfigResourceType.BROKER,
                {
                    str(b): [AlterConfigOp(k, OpType.SET, str(v)) for k, v in rates.items()]
                    for b, rates in broker_rates.items()
                },
            )
        )
        _raise_first(
            self.incremental_alter_configs(
                ConfigResourceType.TOPIC,
                {
                    t: [AlterConfigOp(k, OpType.SET, v) for k, v in replicas.items()]
                    for t, replicas in topic_replicas.items()
                },
            )
        )

    def clear_throttles(self, brokers: Iterable[int], topics: Iterable[str]) -> None:
        """Delete the throttle rates of ``brokers`` and the throttled replicas of
        ``topics``, as ``kafka-reassign-partitions.sh --verify`` does once done."""
        rates = (*BROKER_THROTTLE_RATES, LOG_DIR_THROTTLE_RATE)
        _raise_first(
            self.incremental_alter_configs(
                ConfigResourceType.BROKER,
                {str(b): [AlterConfigOp(k, OpType.DELETE) for k in rates] for b in brokers},
            )
        )
        _raise_first(
            self.incremental_alter_configs(
                ConfigResourceType.TOPIC,
                {
                    t: [AlterConfigOp(k, OpType.DELETE) for k in TOPIC_THROTTLED_REPLICAS]
                    for t in topics
                },
            )
        )


def _node_id(broker) -> int:
    return broker.node_id


def _log_dir(result, version: int) -> LogDirDescription:
    error = ErrorCode(result.error_code)
    return LogDirDescription(
        path=result.log_dir,
        error=None if error == ErrorCode.NONE else error,
        replicas={
            TopicPartition(t.name, p.partition_index): ReplicaInfo(
                p.partition_size, p.offset_lag, bool(p.is_future_key)
            )
            for t in result.topics
            for p in t.partitions
        },
        total_bytes=getattr(result, "total_bytes", -1) if version >= 4 else -1,
        usable_bytes=getattr(result, "usable_bytes", -1) if version >= 4 else -1,
    )


def _raise_first(errors: Mapping[str, AdminError | None]) -> None:
    for error in errors.values():
        if error is not None:
            raise error
