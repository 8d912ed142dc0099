"""Topic, config and leader-election calls of :class:`~tidelog.admin.AdminClient` (the
part of Kafka's Admin API that ``tidelog-topics`` and ``tidelog-leader-election`` need):
list and describe topics (Metadata), their configs (DescribeConfigs), the reassignments
in progress (ListPartitionReassignments), create and delete topics, add partitions,
change configs (IncrementalAlterConfigs) and elect leaders (ElectLeaders).

Requests that only the controller serves (CreateTopics, DeleteTopics, CreatePartitions,
ElectLeaders) go to the broker that Metadata names as controller; as Kafka's admin
client does, one answered with NOT_CONTROLLER, or met with a dropped connection, looks
the controller up again and is retried until the client's timeout. Per-resource errors
are returned, not raised, so that a tool can report each one (seed 003: the controller
owns topic creation, deletion and leader elections; seed 000: the preferred leader is
the first replica of the assignment).

Every request is written for the version the broker and tidelog's codec agree on, so the
same calls work against tidelog and against Apache Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidelog.admin.connection import BrokerConnection
from tidelog.admin.errors import AdminError
from tidelog.admin.groups import TopicPartition, _Deadline
from tidelog.protocol import ApiKey
from tidelog.protocol.admin_enums import ConfigResourceType, ConfigSource, ElectionType, OpType
from tidelog.protocol.errors import ErrorCode

# The wire enums come from tidelog.protocol.admin_enums (shared with the broker) and are
# exported here too, where the admin client's callers look for them.
__all__ = [
    "INTERNAL_TOPICS",
    "AlterConfigOp",
    "ConfigEntry",
    "ConfigResourceType",
    "ConfigSource",
    "ElectionType",
    "NewPartitions",
    "NewTopic",
    "OpType",
    "PartitionInfo",
    "Reassignment",
    "TopicDescription",
    "TopicsMixin",
]

# Kafka's internal topics (Topic.isInternal).
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state"})
_ZERO_UUID = uuid.UUID(int=0)


@dataclass(frozen=True)
class AlterConfigOp:
    name: str
    op: OpType
    value: str | None = None  # None only with DELETE


@dataclass(frozen=True)
class ConfigEntry:
    name: str
    value: str | None  # None for sensitive values
    source: ConfigSource
    read_only: bool = False
    sensitive: bool = False

    @property
    def is_default(self) -> bool:
        return self.source == ConfigSource.DEFAULT_CONFIG


@dataclass(frozen=True)
class PartitionInfo:
    partition: int
    leader: int | None  # None: no leader
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    offline_replicas: tuple[int, ...] = ()


@dataclass(frozen=True)
class TopicDescription:
    name: str
    topic_id: uuid.UUID | None  # None when the broker reports none
    is_internal: bool
    partitions: tuple[PartitionInfo, ...]  # by partition number


@dataclass(frozen=True)
class Reassignment:
    """A partition's reassignment in progress: ``replicas`` is the whole set (target and
    original), ``adding`` and ``removing`` what changes."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...]
    removing: tuple[int, ...]


@dataclass(frozen=True)
class NewTopic:
    """A topic to create: a partition count and replication factor (-1: the broker's
    defaults), or an explicit ``assignment`` (partition → replicas)."""

    name: str
    partitions: int = -1
    replication_factor: int = -1
    assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class NewPartitions:
    """The partition count a topic grows to, and the replicas of each new partition
    (None: chosen by the controller)."""

    total_count: int
    assignments: Sequence[Sequence[int]] | None = None


def _error(code: int, message: str | None, what: str) -> AdminError | None:
    error = ErrorCode(code)
    if error == ErrorCode.NONE:
        return None
    return AdminError(error, message or f"{what}: {error.message or error.name}")


class TopicsMixin:
    """Topic, config and election calls; mixed into :class:`~tidelog.admin.AdminClient`,
    which provides ``_connect``, ``_send``, ``_controller``, ``metadata`` and
    ``timeout``."""

    timeout: float
    _connect: Callable[..., BrokerConnection]
    _send: Callable[..., tuple[Any, int]]
    _controller: Callable[[], tuple[str, int]]
    metadata: Callable[..., Any]

    # -- plumbing -------------------------------------------------------------------------

    def _controller_request(
        self,
        api_key: ApiKey,
        body: Callable[[int], dict],
        errors: Callable[[Any, int], Iterable[int]],
    ) -> tuple[Any, int]:
        """``body`` sent to the controller, found again and asked again while there is
        none, it answers NOT_CONTROLLER (``errors`` lists a response's error codes) or it
        cannot be reached, until the timeout. No bootstrap broker answering fails at
        once."""
        deadline = _Deadline(self.timeout)
        while True:
            address = self._controller_address(deadline)
            try:
                response, version = self._send(address, api_key, body)
            except OSError:
                if deadline.wait():
                    continue
                raise
            if ErrorCode.NOT_CONTROLLER in errors(response, version):
                if deadline.wait():
                    continue
                raise AdminError(ErrorCode.NOT_CONTROLLER, f"{api_key.name}: no controller")
            return response, version

    def _controller_address(self, deadline: _Deadline) -> tuple[str, int]:
        """The controller's address, waiting while the cluster has none."""
        while True:
            try:
                return self._controller()
            except AdminError as error:
                if error.code != ErrorCode.NOT_CONTROLLER or not deadline.wait():
                    raise

    # -- topics -----------------------------------------------------------------------------

    def list_topics(self, *, internal: bool = True) -> list[str]:
        """Every topic's name, sorted; Kafka's internal topics only if ``internal``."""
        names = [t.name for t in self.metadata(None).topics if t.error_code == ErrorCode.NONE]
        return sorted(n for n in names if internal or n not in INTERNAL_TOPICS)

    def describe_topics(self, topics: Iterable[str] | None = None) -> dict[str, TopicDescription]:
        """Each topic's partitions (Metadata), by name in the order asked (every topic,
        sorted, when ``topics`` is None). An unknown topic raises :class:`AdminError`
        (UNKNOWN_TOPIC_OR_PARTITION)."""
        wanted = None if topics is None else list(dict.fromkeys(topics))
        if wanted == []:
            return {}
        out = {}
        for topic in self.metadata(wanted).topics:
            error = ErrorCode(topic.error_code)
            if error != ErrorCode.NONE:
                raise AdminError(error, f"topic {topic.name!r}: {error.message or error.name}")
            topic_id = getattr(topic, "topic_id", None)
            out[topic.name] = TopicDescription(
                topic.name,
                None if topic_id in (None, _ZERO_UUID) else topic_id,
                bool(topic.is_internal),
                tuple(
                    PartitionInfo(
                        p.partition_index,
                        p.leader_id if p.leader_id >= 0 else None,
                        p.leader_epoch,
                        tuple(p.replica_nodes),
                        tuple(p.isr_nodes),
                        tuple(p.offline_replicas or ()),
                    )
                    for p in sorted(topic.partitions, key=lambda p: p.partition_index)
                ),
            )
        return {t: out[t] for t in (sorted(out) if wanted is None else wanted)}

    def live_brokers(self) -> list[int]:
        """The ids of the brokers the cluster's metadata lists (the live ones)."""
        return sorted(b.node_id for b in self.metadata([]).brokers)

    def list_reassignments(
        self, partitions: Iterable[tuple[str, int]] | None = None
    ) -> dict[TopicPartition, Reassignment]:
        """The reassignments in progress (ListPartitionReassignments, at the controller),
        of ``partitions`` or of every partition."""
        wanted = None if partitions is None else sorted({TopicPartition(*tp) for tp in partitions})
        if wanted == []:
            return {}
        topics = None
        if wanted is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in wanted:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]
        response, _ = self._controller_request(
            ApiKey.LIST_PARTITION_REASSIGNMENTS,
            lambda v: {"timeout_ms": int(self.timeout * 1000), "topics": topics},
            lambda r, v: [r.error_code],
        )
        error = _error(response.error_code, response.error_message, "ListPartitionReassignments")
        if error is not None:
            raise error
        return {
            TopicPartition(t.name, p.partition_index): Reassignment(
                tuple(p.replicas), tuple(p.adding_replicas), tuple(p.removing_replicas)
            )
            for t in response.topics
            for p in t.partitions
        }

    def create_topics(
        self, topics: Iterable[NewTopic], *, validate_only: bool = False
    ) -> dict[str, AdminError | None]:
        """CreateTopics: each topic's error, None when created (or valid)."""
        topics = list(topics)

        def body(version: int) -> dict:
            return {
                "topics": [
                    {
                        "name": t.name,
                        "num_partitions": -1 if t.assignment else t.partitions,
                        "replication_factor": -1 if t.assignment else t.replication_factor,
                        "assignments": [
                            {"partition_index": p, "broker_ids": list(r)}
                            for p, r in sorted((t.assignment or {}).items())
                        ],
                        "configs": [{"name": k, "value": v} for k, v in t.configs.items()],
                    }
                    for t in topics
                ],
                "timeout_ms": int(self.timeout * 1000),
                "validate_only": validate_only,
            }

        response, _ = self._controller_request(
            ApiKey.CREATE_TOPICS, body, lambda r, v: [t.error_code for t in r.topics]
        )
        return {
            t.name: _error(t.error_code, t.error_message, f"topic {t.name!r}")
            for t in response.topics
        }

    def delete_topics(self, topics: Iterable[str]) -> dict[str, AdminError | None]:
        """DeleteTopics (by name): each topic's error, None when deleted."""
        names = list(dict.fromkeys(topics))
        if not names:
            return {}

        def body(version: int) -> dict:
            timeout_ms = int(self.timeout * 1000)
            if version >= 6:
                return {"topics": [{"name": n} for n in names], "timeout_ms": timeout_ms}
            return {"topic_names": names, "timeout_ms": timeout_ms}

        response, _ = self._controller_request(
            ApiKey.DELETE_TOPICS, body, lambda r, v: [t.error_code for t in r.responses]
        )
        return {
            t.name: _error(t.error_code, t.error_message, f"topic {t.name!r}")
            for t in response.responses
        }

    def create_partitions(
        self, topics: Mapping[str, NewPartitions], *, validate_only: bool = False
    ) -> dict[str, AdminError | None]:
        """CreatePartitions: each topic's error, None when its partitions were added."""
        if not topics:
            return {}
        body = {
            "topics": [
                {
                    "name": name,
                    "count": new.total_count,
                    "assignments": None
                    if new.assignments is None
                    else [{"broker_ids": list(r)} for r in new.assignments],
                }
                for name, new in topics.items()
            ],
            "timeout_ms": int(self.timeout * 1000),
            "validate_only": validate_only,
        }
        response, _ = self._controller_request(
            ApiKey.CREATE_PARTITIONS, lambda v: body, lambda r, v: [t.error_code for t in r.results]
        )
        return {
            t.name: _error(t.error_code, t.error_message, f"topic {t.name!r}")
            for t in response.results
        }

    # -- configs ----------------------------------------------------------------------------

    def describe_configs(
        self, resource_type: ConfigResourceType, names: Iterable[str]
    ) -> dict[str, dict[str, ConfigEntry]]:
        """DescribeConfigs of topics or brokers (a broker resource at that broker): every
        config of each, by name. A resource's error raises :class:`AdminError`."""
        out: dict[str, dict[str, ConfigEntry]] = {}
        names = list(dict.fromkeys(names))
        targets: dict[tuple[str, int] | None, list[str]] = {}
        if resource_type == ConfigResourceType.TOPIC:
            targets[None] = names
        else:
            nodes = {str(b.node_id): (b.host, b.port) for b in self.metadata([]).brokers}
            for name in names:
                targets.setdefault(nodes.get(name), []).append(name)
        for address, batch in targets.items():
            if not batch:
                continue
            response, version = self._send(
                address,
                ApiKey.DESCRIBE_CONFIGS,
                lambda v, batch=batch: {
                    "resources": [
                        {
                            "resource_type": int(resource_type),
                            "resource_name": n,
                            "configuration_keys": None,
                        }
                        for n in batch
                    ]
                },
            )
            for result in response.results:
                error = _error(result.error_code, result.error_message, result.resource_name)
                if error is not None:
                    raise error
                out[result.resource_name] = {
                    c.name: ConfigEntry(
                        c.name,
                        c.value,
                        _source(c, version),
                        bool(c.read_only),
                        bool(c.is_sensitive),
                    )
                    for c in result.configs
                }
        return {n: out[n] for n in names}

    def incremental_alter_configs(
        self,
        resource_type: ConfigResourceType,
        changes: Mapping[str, Sequence[AlterConfigOp]],
        *,
        validate_only: bool = False,
    ) -> dict[str, AdminError | None]:
        """IncrementalAlterConfigs of topics or brokers (a broker resource at that
        broker, the cluster-wide ``""`` at any): each resource's error, None when done."""
        out: dict[str, AdminError | None] = {}
        targets: dict[tuple[str, int] | None, list[str]] = {}
        if resource_type == ConfigResourceType.TOPIC:
            targets[None] = list(changes)
        else:
            nodes = {str(b.node_id): (b.host, b.port) for b in self.metadata([]).brokers}
            for name in changes:
                targets.setdefault(nodes.get(name), []).append(name)
        for address, batch in targets.items():
            if not batch:
                continue
            response, _ = self._send(
                address,
                ApiKey.INCREMENTAL_ALTER_CONFIGS,
                lambda v, batch=batch: {
                    "resources": [
                        {
                            "resource_type": int(resource_type),
                            "resource_name": n,
                            "configs": [
                                {"name": o.name, "config_operation": int(o.op), "value": o.value}
                                for o in changes[n]
                            ],
                        }
                        for n in batch
                    ],
                    "validate_only": validate_only,
                },
            )
            for r in response.responses:
                out[r.resource_name] = _error(r.error_code, r.error_message, r.resource_name)
        return out

    # -- leader elections -----------------------------------------------------------------------

    def elect_leaders(
        self,
        election_type: ElectionType,
        partitions: Iterable[tuple[str, int]] | None = None,
    ) -> dict[TopicPartition, AdminError | None]:
        """ElectLeaders at the controller: each partition's error, None when elected
        (ELECTION_NOT_NEEDED when its leader is already the one asked for). ``None`` asks
        for every partition; the controller then leaves out those that need no election.
        A request-level error raises :class:`AdminError`."""
        wanted = None if partitions is None else sorted({TopicPartition(*tp) for tp in partitions})
        topics = None
        if wanted is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in wanted:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"topic": t, "partitions": ps} for t, ps in by_topic.items()]

        def body(version: int) -> dict:
            if version == 0 and election_type != ElectionType.PREFERRED:
                raise AdminError(
                    ErrorCode.UNSUPPORTED_VERSION,
                    "the broker supports only preferred leader elections (ElectLeaders v0)",
                )
            out: dict[str, Any] = {
                "topic_partitions": topics,
                "timeout_ms": int(self.timeout * 1000),
            }
            if version >= 1:
                out["election_type"] = int(election_type)
            return out

        def errors(response, version: int) -> list[int]:
            top = [response.error_code] if version >= 1 else []
            return top + [
                p.error_code for r in response.replica_election_results for p in r.partition_result
            ]

        response, version = self._controller_request(ApiKey.ELECT_LEADERS, body, errors)
        if version >= 1:
            error = _error(response.error_code, None, "ElectLeaders")
            if error is not None:
                raise error
        return {
            TopicPartition(r.topic, p.partition_id): None
            if p.error_code == ErrorCode.NONE
            else AdminError(p.error_code, p.error_message)
            for r in sorted(response.replica_election_results, key=lambda r: r.topic)
            for p in sorted(r.partition_result, key=lambda p: p.partition_id)
        }


def _source(config: Any, version: int) -> ConfigSource:
    if version == 0:
        return ConfigSource.DEFAULT_CONFIG if config.is_default else ConfigSource.UNKNOWN
    try:
        return ConfigSource(config.config_source)
    except ValueError:
        return ConfigSource.UNKNOWN
