"""Consumer-group calls of :class:`~tidelog.admin.AdminClient` (the part of
Kafka's Admin API that ``tidelog-consumer-groups`` and the operator need).

Group requests go to the group's coordinator, found with FindCoordinator. As Kafka's
admin client does, a call that meets COORDINATOR_LOAD_IN_PROGRESS waits and asks the same
coordinator again, and one that meets COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR or a
dropped connection finds the coordinator again and retries, until the client's timeout.
Committed offsets are in :mod:`tidelog.admin.group_offsets`, log offsets in
:mod:`tidelog.admin.log_offsets`.

Every request is written for the version the broker and tidelog's codec agree on, so the
same calls work against tidelog and against Apache Kafka.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, NamedTuple

from tidelog.admin.connection import BrokerConnection
from tidelog.admin.errors import AdminError
from tidelog.protocol import OPERATIONS_NOT_REQUESTED, ApiKey
from tidelog.protocol.consumer_protocol import PROTOCOL_TYPE, decode_assignment, decode_subscription
from tidelog.protocol.errors import ErrorCode

__all__ = [
    "GROUP_STATES",
    "ConsumerGroupsMixin",
    "GroupDescription",
    "GroupListing",
    "MemberDescription",
    "Node",
    "TopicPartition",
    "canonical_state",
]


# Errors after which the coordinator is looked up again.
_FIND_AGAIN = frozenset({ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.NOT_COORDINATOR})
# Errors after which the same coordinator is asked again.
_ASK_AGAIN = frozenset({ErrorCode.COORDINATOR_LOAD_IN_PROGRESS})
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
