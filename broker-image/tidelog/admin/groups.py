"""Consumer-group and offset calls of :class:`~tidelog.admin.AdminClient` (the part of
Kafka's Admin API that ``tidelog-consumer-groups`` and the operator need).

Group requests go to the group's coordinator, found with FindCoordinator. As Kafka's
admin client does, a call that meets COORDINATOR_LOAD_IN_PROGRESS waits and asks the same
coordinator again, and one that meets COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR or a
dropped connection finds the coordinator again and retries, until the client's timeout.
ListOffsets goes to each partition's leader, with the same kind of retry on leadership
errors (metadata is read again).

Every request is written for the version the broker and tidelog's codec agree on, so the
same calls work against tidelog and against Apache Kafka.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from tidelog.admin.connection import BrokerConnection
from tidelog.admin.errors import AdminError
from tidelog.protocol import OPERATIONS_NOT_REQUESTED, ApiKey
from tidelog.protocol.consumer_protocol import PROTOCOL_TYPE, decode_assignment, decode_subscription
from tidelog.protocol.errors import ErrorCode

__all__ = [
    "EARLIEST",
    "GROUP_STATES",
    "LATEST",
    "ConsumerGroupsMixin",
    "GroupDescription",
    "GroupListing",
    "ListedOffset",
    "MemberDescription",
    "Node",
    "OffsetAndMetadata",
    "TopicPartition",
    "canonical_state",
]

# ListOffsets' special timestamps.
LATEST = -1
EARLIEST = -2
_SPECS = {"latest": LATEST, "earliest": EARLIEST}

# Errors after which the coordinator is looked up again.
_FIND_AGAIN = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
# Errors after which the same coordinator is asked again.
_ASK_AGAIN = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
# Per-partition ListOffsets errors that mean "ask the (new) leader again".
_LEADERSHIP = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.REPLICA_NOT_AVAILABLE,
    }
)
# The protocol types of consumer groups, as Kafka's admin decides: ``consumer``, or empty
# (a group that only ever had offsets committed to it).
_CONSUMER_TYPES = (PROTOCOL_TYPE, "")
_BACKOFF = 0.1
_MAX_BACKOFF = 1.0

# The group states, spelled as Kafka's brokers report them (Assigning and Reconciling
# are states of KIP-848 groups).
GROUP_STATES = (
    "PreparingRebalance",
    "CompletingRebalance",
    "Stable",
    "Dead",
    "Empty",
    "Assigning",
    "Reconciling",
)


def canonical_state(name: str) -> str:
    """A state name in Kafka's spelling, whatever the case; ValueError if unknown."""
    for state in GROUP_STATES:
        if state.lower() == name.strip().lower():
            return state
    raise ValueError(f"unknown group state {name!r}")


class TopicPartition(NamedTuple):
    topic: str
    partition: int

    def __str__(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int

    @property
    def address(self) -> tuple[str, int]:
        return self.host, self.port


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str
    state: str | None = None  # Kafka's state name
    group_type: str | None = None  # None before ListGroups v5

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type in _CONSUMER_TYPES


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment_bytes: bytes
    # Decoded for consumer groups; empty otherwise or when the member has none yet.
    assignment: tuple[TopicPartition, ...] = ()
    subscription: tuple[str, ...] = ()


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str  # Kafka's names: Empty, Stable, PreparingRebalance, ..., Dead
    protocol_type: str
    protocol: str  # the assignment strategy ("range", ...), empty when none
    members: tuple[MemberDescription, ...]
    coordinator: Node
    authorized_operations: int | None = None

    @property
    def is_consumer_group(self) -> bool:
        return self.protocol_type in _CONSUMER_TYPES


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int | None = None
    metadata: str = ""


@dataclass(frozen=True)
class ListedOffset:
    """One ListOffsets answer; ``offset`` is -1 when no record has a timestamp at or after
    the one asked for."""

    offset: int
    timestamp: int = -1
    leader_epoch: int | None = None


def _topics(
    partitions: Iterable[TopicPartition],
    build: Callable[[TopicPartition], Any],
    key: str = "partitions",
) -> list[dict]:
    """A request's ``topics``: ``{"name": topic, key: [build(tp), ...]}`` for each topic,
    in the order of their first partition."""
    by_topic: dict[str, list] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(build(tp))
    return [{"name": topic, key: built} for topic, built in by_topic.items()]


def _partition_errors(topics: Iterable[Any]) -> list[int]:
    """The error codes of a response's partitions, topic by topic."""
    return [p.error_code for t in topics for p in t.partitions]


class _Deadline:
    def __init__(self, seconds: float):
        self.end = time.monotonic() + seconds
        self.backoff = _BACKOFF

    def wait(self) -> bool:
        """Sleep before the next try; False when no time is left for one."""
        left = self.end - time.monotonic()
        if left <= 0:
            return False
        time.sleep(min(self.backoff, left))
        self.backoff = min(self.backoff * 2, _MAX_BACKOFF)
        return True


class ConsumerGroupsMixin:
    """Consumer-group calls; mixed into :class:`~tidelog.admin.AdminClient`, which
    provides ``_connect``, ``metadata`` and ``timeout``."""

    timeout: float
    _connect: Callable[..., BrokerConnection]
    metadata: Callable[..., Any]

    # -- plumbing -------------------------------------------------------------------------

    def _send(
        self,
        address: tuple[str, int] | None,
        api_key: ApiKey,
        body: Callable[[int], dict],
        *,
        min_version: int = 0,
    ) -> tuple[Any, int]:
        """One request to ``address`` (a bootstrap broker if None), written for the
        version both sides support; returns ``(response, version)``."""
        with self._connect(address) as connection:
            try:
                version = connection.version(api_key)
            except KeyError:
                raise AdminError(
                    ErrorCode.UNSUPPORTED_VERSION, f"the broker does not support {api_key.name}"
                ) from None
            if version < min_version:
                raise AdminError(
                    ErrorCode.UNSUPPORTED_VERSION,
                    f"the broker supports {api_key.name} up to version {version}, "
                    f"this call needs {min_version}",
                )
            return connection.request(api_key, version, body(version)), version

    def _coordinators(self) -> dict[str, Node]:
        """Coordinators found so far, by group (dropped when one moves)."""
        cache = getattr(self, "_coordinator_cache", None)
        if cache is None:
            cache = self._coordinator_cache = {}
        return cache

    def find_coordinator(self, group: str) -> Node:
        """The broker coordinating ``group`` (FindCoordinator, key type 0), retrying while
        the cluster has none yet (for example while ``__consumer_offsets`` is created)."""
        deadline = _Deadline(self.timeout)
        while True:
            try:
                response, version = self._send(
                    None,
                    ApiKey.FIND_COORDINATOR,
                    lambda v: (
                        {"key_type": 0, "coordinator_keys": [group]}
                        if v >= 4
                        else {"key": group, "key_type": 0}
                    ),
                )
            except OSError:
                if deadline.wait():
                    continue
                raise
            found = response.coordinators[0] if version >= 4 else response
            error = ErrorCode(found.error_code)
            if error == ErrorCode.NONE:
                node = Node(found.node_id, found.host, found.port)
                self._coordinators()[group] = node
                return node
            if error.retriable and deadline.wait():
                continue
            raise AdminError(error, getattr(found, "error_message", None) or None)

    def _coordinator_request(
        self,
        group: str,
        api_key: ApiKey,
        body: Callable[[int], dict],
        errors: Callable[[Any, int], Iterable[int]],
        *,
        min_version: int = 0,
    ) -> tuple[Any, int, Node]:
        """Send to the group's coordinator; ``errors(response, version)`` lists the error
        codes in the response, to retry on coordinator errors."""
        deadline = _Deadline(self.timeout)
        cache = self._coordinators()
        while True:
            node = cache.get(group) or self.find_coordinator(group)
            try:
                response, version = self._send(node.address, api_key, body, min_version=min_version)
            except OSError:
                cache.pop(group, None)
                if deadline.wait():
                    continue
                raise
            found = {ErrorCode(e) for e in errors(response, version)}
            if found & _FIND_AGAIN:
                cache.pop(group, None)
            if found & (_FIND_AGAIN | _ASK_AGAIN):
                if deadline.wait():
                    continue
                raise AdminError(min(found & (_FIND_AGAIN | _ASK_AGAIN)))
            return response, version, node

    # -- groups ---------------------------------------------------------------------------

    def list_groups(self, states: Iterable[str] | None = None) -> list[GroupListing]:
        """Every group of the cluster (ListGroups to every broker, as Kafka's admin does),
        optionally only those in ``states`` (Kafka's state names, any case). A broker
        without ListGroups v4 does not report states: they are then read with
        DescribeGroups, so every listing has its state."""
        states = sorted({canonical_state(s) for s in states or ()})
        brokers = self.metadata([]).brokers
        found: dict[str, GroupListing] = {}
        for broker in brokers:
            for listing in self._list_groups_on((broker.host, broker.port), states):
                found.setdefault(listing.group_id, listing)
        listings = list(found.values())
        missing = [g.group_id for g in listings if g.state is None]
        if missing:
            described = self.describe_groups(missing)
            listings = [
                dataclasses.replace(g, state=described[g.group_id].state) if g.state is None else g
                for g in listings
            ]
            listings = [g for g in listings if not states or g.state in states]
        return sorted(listings, key=lambda g: g.group_id)

    def _list_groups_on(self, address: tuple[str, int], states: list[str]) -> list[GroupListing]:
        deadline = _Deadline(self.timeout)
        while True:
            response, version = self._send(
                address,
                ApiKey.LIST_GROUPS,
                lambda v: {"states_filter": states} if v >= 4 else {},
            )
            error = ErrorCode(response.error_code)
            if error == ErrorCode.NONE:
                return [
                    GroupListing(
                        g.group_id,
                        g.protocol_type,
                        g.group_state if version >= 4 else None,
                        g.group_type if version >= 5 else None,
                    )
                    for g in response.groups
                ]
            if error in _FIND_AGAIN | _ASK_AGAIN and deadline.wait():
                continue
            raise AdminError(error, f"ListGroups on {address[0]}:{address[1]}: {error.name}")

    def describe_groups(
        self, groups: Iterable[str], *, include_authorized_operations: bool = False
    ) -> dict[str, GroupDescription]:
        """DescribeGroups for each group at its coordinator. A group the coordinator does
        not know is described as ``Dead`` with no members (whether the broker answers
        that way or with GROUP_ID_NOT_FOUND). Members of consumer groups have their
        assignment and subscription decoded (a malformed one raises
        :class:`~tidelog.protocol.consumer_protocol.ConsumerProtocolError`)."""
        out = {}
        for group in dict.fromkeys(groups):
            response, _, node = self._coordinator_request(
                group,
                ApiKey.DESCRIBE_GROUPS,
                lambda v, g=group: {
                    "groups": [g],
                    "include_authorized_operations": include_authorized_operations and v >= 3,
                },
                lambda r, v: [d.error_code for d in r.groups],
            )
            (described,) = response.groups
            error = ErrorCode(described.error_code)
            if error == ErrorCode.GROUP_ID_NOT_FOUND:
                out[group] = GroupDescription(group, "Dead", "", "", (), node)
                continue
            if error != ErrorCode.NONE:
                raise AdminError(error, f"DescribeGroups {group!r}: {error.name}")
            consumer = described.protocol_type in _CONSUMER_TYPES
            members = []
            for m in described.members:
                assignment: tuple[TopicPartition, ...] = ()
                subscription: tuple[str, ...] = ()
                if consumer and m.member_assignment:
                    decoded = decode_assignment(m.member_assignment)
                    assignment = tuple(TopicPartition(t, p) for t, p in decoded.partitions)
                if consumer and m.member_metadata:
                    subscription = decode_subscription(m.member_metadata).topics
                members.append(
                    MemberDescription(
                        m.member_id,
                        m.group_instance_id,
                        m.client_id,
                        m.client_host,
                        bytes(m.member_metadata),
                        bytes(m.member_assignment),
                        assignment,
                        subscription,
                    )
                )
            operations = described.authorized_operations
            out[group] = GroupDescription(
                group,
                described.group_state,
                described.protocol_type,
                described.protocol_data,
                tuple(members),
                node,
                None if operations == OPERATIONS_NOT_REQUESTED else operations,
            )
        return out

    def delete_groups(self, groups: Iterable[str]) -> dict[str, ErrorCode]:
        """DeleteGroups for each group at its coordinator: the error code of each
        (NONE when deleted; NON_EMPTY_GROUP while it has members; GROUP_ID_NOT_FOUND)."""
        out = {}
        for group in dict.fromkeys(groups):
            response, _, _ = self._coordinator_request(
                group,
                ApiKey.DELETE_GROUPS,
                lambda v, g=group: {"groups_names": [g]},
                lambda r, v: [x.error_code for x in r.results],
            )
            out[group] = ErrorCode(response.results[0].error_code)
        return out

    # -- committed offsets ----------------------------------------------------------------

    def list_group_offsets(
        self,
        group: str,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        require_stable: bool = False,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (OffsetFetch), of every partition it has one for
        when ``partitions`` is None; partitions without a committed offset are left out."""
        wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]
        topics = (
            None
            if wanted is None
            else _topics(wanted, lambda tp: tp.partition, "partition_indexes")
        )

        def body(version: int) -> dict:
            if version >= 8:
                return {
                    "groups": [{"group_id": group, "topics": topics}],
                    "require_stable": require_stable,
                }
            out: dict[str, Any] = {"group_id": group, "topics": topics}
            if version >= 7:
                out["require_stable"] = require_stable
            return out

        def errors(response, version: int) -> list[int]:
            if version >= 8:
                g = response.groups[0]
                return [g.error_code, *_partition_errors(g.topics)]
            codes = _partition_errors(response.topics)
            return [response.error_code, *codes] if version >= 2 else codes

        response, version, _ = self._coordinator_request(
            group,
            ApiKey.OFFSET_FETCH,
            body,
            errors,
            min_version=2 if wanted is None else 1,
        )
        if version >= 8:
            answer = response.groups[0]
            top, topics_out = ErrorCode(answer.error_code), answer.topics
        else:
            top = ErrorCode(response.error_code) if version >= 2 else ErrorCode.NONE
            topics_out = response.topics
        if top != ErrorCode.NONE:
            raise AdminError(top, f"OffsetFetch {group!r}: {top.name}")
        out = {}
        for topic in topics_out:
            for p in topic.partitions:
                error = ErrorCode(p.error_code)
                if error != ErrorCode.NONE:
                    raise AdminError(
                        error,
                        f"OffsetFetch {group!r} {topic.name}-{p.partition_index}: " f"{error.name}",
                    )
                if p.committed_offset < 0:
                    continue
                epoch = p.committed_leader_epoch
                out[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                    p.committed_offset, None if epoch < 0 else epoch, p.metadata or ""
                )
        return dict(sorted(out.items()))

    def alter_group_offsets(
        self, group: str, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata]
    ) -> None:
        """Commit ``offsets`` for the group as Kafka's admin does: OffsetCommit with
        generation -1 and an empty member id, which the coordinator accepts only while the
        group has no members (UNKNOWN_MEMBER_ID otherwise). Raises :class:`AdminError`
        with the first partition error."""
        wanted = {
            TopicPartition(*tp): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()
        }
        if not wanted:
            return

        def body(version: int) -> dict:
            def partition(tp: TopicPartition) -> dict:
                o = wanted[tp]
                out = {
                    "partition_index": tp.partition,
                    "committed_offset": o.offset,
                    "committed_metadata": o.metadata,
                }
                if version >= 6 and o.leader_epoch is not None:
                    out["committed_leader_epoch"] = o.leader_epoch
                return out

            return {
                "group_id": group,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": _topics(sorted(wanted), partition),
            }

        response, _, _ = self._coordinator_request(
            group,
            ApiKey.OFFSET_COMMIT,
            body,
            lambda r, v: _partition_errors(r.topics),
        )
        failed = [
            (ErrorCode(p.error_code), TopicPartition(t.name, p.partition_index))
            for t in response.topics
            for p in t.partitions
            if p.error_code != ErrorCode.NONE
        ]
        if failed:
            error, tp = failed[0]
            raise AdminError(
                error,
                f"OffsetCommit {group!r}: {error.name} for "
                + ", ".join(str(tp) for e, tp in failed if e == error),
            )

    def delete_group_offsets(
        self, group: str, partitions: Iterable[tuple[str, int]]
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetDelete: the error code of each partition (GROUP_SUBSCRIBED_TO_TOPIC while
        a member is subscribed to its topic). A group-level error (GROUP_ID_NOT_FOUND,
        NON_EMPTY_GROUP, ...) raises :class:`AdminError`."""
        wanted = sorted({TopicPartition(*tp) for tp in partitions})
        response, _, _ = self._coordinator_request(
            group,
            ApiKey.OFFSET_DELETE,
            lambda v: {
                "group_id": group,
                "topics": _topics(wanted, lambda tp: {"partition_index": tp.partition}),
            },
            lambda r, v: [r.error_code, *_partition_errors(r.topics)],
        )
        error = ErrorCode(response.error_code)
        if error != ErrorCode.NONE:
            raise AdminError(error, f"OffsetDelete {group!r}: {error.name}")
        return {
            TopicPartition(t.name, p.partition_index): ErrorCode(p.error_code)
            for t in response.topics
            for p in t.partitions
        }

    # -- topics and log offsets -------------------------------------------------------------

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """The partitions of each topic (Metadata); an unknown topic raises
        :class:`AdminError` (UNKNOWN_TOPIC_OR_PARTITION)."""
        topics = list(dict.fromkeys(topics))
        if not topics:
            return {}
        out = {}
        for topic in self.metadata(topics).topics:
            error = ErrorCode(topic.error_code)
            if error != ErrorCode.NONE:
                raise AdminError(error, f"topic {topic.name!r}: {error.message}")
            out[topic.name] = sorted(p.partition_index for p in topic.partitions)
        return {t: out[t] for t in topics}

    def list_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        spec: str | int | Mapping[tuple[str, int], str | int] = "latest",
        *,
        isolation_level: int = 0,
    ) -> dict[TopicPartition, ListedOffset]:
        """ListOffsets at each partition's leader. ``spec`` is ``"earliest"``,
        ``"latest"`` or a timestamp in ms (the first offset whose record timestamp is at
        or after it; -1 when there is none), or such a value per partition.
        ``isolation_level`` 1 (read committed) gives the last stable offset as latest."""
        wanted = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))

        def timestamp(tp: TopicPartition) -> int:
            value = spec.get(tp) if isinstance(spec, Mapping) else spec
            if isinstance(value, str):
                if value not in _SPECS:
                    raise ValueError(f"offset spec {value!r}: earliest, latest or a timestamp")
                return _SPECS[value]
            if value is None or (value < 0 and value not in (EARLIEST, LATEST)):
                raise ValueError(f"offset spec {value!r} for {tp}: earliest, latest or >= 0")
            return value

        timestamps = {tp: timestamp(tp) for tp in wanted}
        out: dict[TopicPartition, ListedOffset] = {}
        deadline = _Deadline(self.timeout)
        while True:
            pending = [tp for tp in wanted if tp not in out]
            if not pending:
                return {tp: out[tp] for tp in wanted}
            retry: ErrorCode | None = None
            for leader, tps in self._leaders(pending).items():
                if leader is None:
                    retry = ErrorCode.LEADER_NOT_AVAILABLE
                    continue
                try:
                    answers = self._list_offsets_at(leader, tps, timestamps, isolation_level)
                except OSError:
                    retry = ErrorCode.NETWORK_EXCEPTION
                    continue
                for tp, (error, listed) in answers.items():
                    if error == ErrorCode.NONE:
                        out[tp] = listed
                    elif error in _LEADERSHIP:
                        retry = error
                    else:
                        raise AdminError(error, f"ListOffsets {tp}: {error.message}")
            if retry is not None and not deadline.wait():
                missing = ", ".join(str(tp) for tp in wanted if tp not in out)
                raise AdminError(retry, f"ListOffsets {missing}: {retry.message}")

    def _leaders(self, partitions: list[TopicPartition]) -> dict[Node | None, list[TopicPartition]]:
        metadata = self.metadata(sorted({tp.topic for tp in partitions}))
        nodes = {b.node_id: Node(b.node_id, b.host, b.port) for b in metadata.brokers}
        leaders: dict[TopicPartition, int] = {}
        for topic in metadata.topics:
            error = ErrorCode(topic.error_code)
            if error not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE):
                raise AdminError(error, f"topic {topic.name!r}: {error.message}")
            for p in topic.partitions:
                leaders[TopicPartition(topic.name, p.partition_index)] = p.leader_id
        out: dict[Node | None, list[TopicPartition]] = {}
        for tp in partitions:
            if tp not in leaders:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                raise AdminError(error, f"{tp}: {error.message}")
            out.setdefault(nodes.get(leaders[tp]), []).append(tp)
        return out

    def _list_offsets_at(
        self,
        leader: Node,
        partitions: list[TopicPartition],
        timestamps: Mapping[TopicPartition, int],
        isolation_level: int,
    ) -> dict[TopicPartition, tuple[ErrorCode, ListedOffset]]:
        def body(version: int) -> dict:
            out: dict[str, Any] = {
                "replica_id": -1,
                "topics": _topics(
                    partitions,
                    lambda tp: {"partition_index": tp.partition, "timestamp": timestamps[tp]},
                ),
            }
            if version >= 2:
                out["isolation_level"] = isolation_level
            return out

        response, _ = self._send(leader.address, ApiKey.LIST_OFFSETS, body, min_version=1)
        return {
            TopicPartition(t.name, p.partition_index): (
                ErrorCode(p.error_code),
                ListedOffset(p.offset, p.timestamp, None if p.leader_epoch < 0 else p.leader_epoch),
            )
            for t in response.topics
            for p in t.partitions
        }
