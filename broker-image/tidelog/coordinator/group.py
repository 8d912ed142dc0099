"""A consumer group as its coordinator holds it: members, generation, protocol, offsets.

The state machine (seed 003, 四.3) is the table ``_PREVIOUS_STATES``: a group moves to a
state only from one listed for it, and :meth:`Group.transition_to` is the one place
that changes ``state``::

    Empty ──join──▶ PreparingRebalance ──all joined──▶ CompletingRebalance
      ▲                 ▲        │                          │ leader's SyncGroup
      │                 │        └──no member left──▶ Empty  ▼
      │                 └──join, leave, expiry──────────── Stable
      └── (any) ──delete, expiry of the last offsets, partition moved away──▶ Dead

Nothing here does I/O or keeps time: the coordinator owns the clocks and the writes.
"""

from __future__ import annotations

import asyncio
import enum
from collections import Counter
from dataclasses import dataclass, field

from tidelog.coordinator.offsets_records import GroupMetadataValue, MemberValue, OffsetValue
from tidelog.protocol.consumer_protocol import (
    PROTOCOL_TYPE,
    ConsumerProtocolError,
    decode_subscription,
)

__all__ = ["Group", "GroupState", "JoinResult", "Member", "SyncResult"]

TopicPartition = tuple[str, int]


class GroupState(enum.Enum):
    EMPTY = "Empty"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"


_PREVIOUS_STATES = {
    GroupState.DEAD: set(GroupState),
    GroupState.PREPARING_REBALANCE: {
        GroupState.EMPTY,
        GroupState.STABLE,
        GroupState.COMPLETING_REBALANCE,
    },
    GroupState.COMPLETING_REBALANCE: {GroupState.PREPARING_REBALANCE},
    GroupState.STABLE: {GroupState.COMPLETING_REBALANCE},
    GroupState.EMPTY: {GroupState.PREPARING_REBALANCE},
}


@dataclass
class JoinResult:
    error: int
    member_id: str = ""
    generation: int = -1
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader: str = ""
    skip_assignment: bool = False
    # (member id, group instance id, metadata of the chosen protocol); only the leader's
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass
class SyncResult:
    error: int
    protocol_type: str | None = None
    protocol_name: str | None = None
    assignment: bytes = b""


@dataclass
class Member:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: list[tuple[str, bytes]]  # (name, metadata), the member's preference order
    assignment: bytes = b""
    # The JoinGroup / SyncGroup response this member waits for, if any.
    awaiting_join: asyncio.Future | None = None
    awaiting_sync: asyncio.Future | None = None
    # When the session ends without news from the member (event loop time), and the
    # timer that looks then (see GroupCoordinator's _schedule_session).
    session_deadline: float = field(default=0.0, compare=False)
    session_timer: asyncio.TimerHandle | None = field(default=None, compare=False, repr=False)

    def metadata(self, protocol: str) -> bytes:
        return next((data for name, data in self.protocols if name == protocol), b"")

    def same_protocols(self, protocols: list[tuple[str, bytes]]) -> bool:
        return self.protocols == protocols

    def value(self, protocol: str | None) -> MemberValue:
        return MemberValue(
            member_id=self.member_id,
            group_instance_id=self.group_instance_id,
            client_id=self.client_id,
            client_host=self.client_host,
            rebalance_timeout=self.rebalance_timeout_ms,
            session_timeout=self.session_timeout_ms,
            subscription=self.metadata(protocol) if protocol else b"",
            assignment=self.assignment,
        )


class Group:
    def __init__(self, group_id: str, partition: int, now_ms: int):
        self.group_id = group_id
        self.partition = partition  # of __consumer_offsets, where it is stored
        self.state = GroupState.EMPTY
        self.state_timestamp = now_ms
        self.generation = 0
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.leader: str | None = None
        self.members: dict[str, Member] = {}
        self.static_members: dict[str, str] = {}  # group instance id -> member id
        self.pending_members: set[str] = set()  # told MEMBER_ID_REQUIRED, not yet back
        self.offsets: dict[TopicPartition, OffsetValue] = {}
        # The first rebalance of an Empty group waits group.initial.rebalance.delay.ms
        # for others to join, longer while they keep coming.
        self.in_initial_delay = False
        self.new_member_added = False

    def __repr__(self) -> str:
        return f"Group({self.group_id!r}, {self.state.value}, generation {self.generation})"

    # -- state ------------------------------------------------------------------------------

    def is_in(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, state: GroupState, now_ms: int) -> None:
        if self.state not in _PREVIOUS_STATES[state]:
            raise RuntimeError(f"group {self.group_id}: {self.state.value} -> {state.value}")
        self.state = state
        self.state_timestamp = now_ms

    # -- members ----------------------------------------------------------------------------

    def add(self, member: Member) -> None:
        if not self.members:
            self.protocol_type = member.protocol_type
        if self.leader is None:
            self.leader = member.member_id
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        self.pending_members.discard(member.member_id)

    def remove(self, member_id: str) -> Member | None:
        member = self.members.pop(member_id, None)
        self.pending_members.discard(member_id)
        if member is None:
            return None
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.leader == member_id:
            self.leader = next(iter(self.members), None)
        return member

    def replace_static_member(self, instance_id: str, new_member_id: str) -> Member:
        """A static member came back under a new member id: same place, same assignment."""
        old_id = self.static_members[instance_id]
        member = self.members.pop(old_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[instance_id] = new_member_id
        if self.leader == old_id:
            self.leader = new_member_id
        return member

    def elect_joined_leader(self) -> None:
        """A leader that did not rejoin (a static member keeps its place) cannot compute
        the assignment: a member that did takes over, as in Kafka."""
        leader = self.members.get(self.leader) if self.leader else None
        if leader is not None and leader.awaiting_join is not None:
            return
        joined = next((m for m in self.members.values() if m.awaiting_join is not None), None)
        if joined is not None:
            self.leader = joined.member_id

    def fenced(self, member_id: str, instance_id: str | None) -> bool:
        """A static member id that is no longer the one registered for its instance."""
        if instance_id is None:
            return False
        known = self.static_members.get(instance_id)
        return known is not None and known != member_id

    def all_members_joined(self) -> bool:
        return not self.pending_members and all(
            m.awaiting_join is not None for m in self.members.values()
        )

    def dynamic_not_yet_rejoined(self) -> list[Member]:
        """Members a completing rebalance leaves out; a static member keeps its place
        until its session ends (KIP-345)."""
        return [
            m
            for m in self.members.values()
            if m.awaiting_join is None and m.group_instance_id is None
        ]

    def max_rebalance_timeout_ms(self) -> int:
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    # -- protocols --------------------------------------------------------------------------

    def supports(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Can a member with these protocols join? Kafka's rule: the same protocol type,
        and at least one protocol every member (and it) supports."""
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def candidate_protocols(self) -> set[str]:
        sets = [{name for name, _ in m.protocols} for m in self.members.values()]
        return set.intersection(*sets) if sets else set()

    def select_protocol(self) -> str:
        """Each member votes for its most preferred candidate; the most votes wins (ties
        go to the candidate met first in member order)."""
        candidates = self.candidate_protocols()
        votes: Counter[str] = Counter()
        for member in self.members.values():
            votes[next(name for name, _ in member.protocols if name in candidates)] += 1
        return votes.most_common(1)[0][0]

    def init_next_generation(self, now_ms: int) -> None:
        self.generation += 1
        if self.members:
            self.protocol = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            # The protocol type stays: an Empty consumer group's offsets expire counted
            # from when it became Empty (KIP-211), not from each commit.
            self.protocol = None
            self.transition_to(GroupState.EMPTY, now_ms)

    def join_result(self, member: Member, error: int = 0) -> JoinResult:
        is_leader = member.member_id == self.leader
        return JoinResult(
            error=error,
            member_id=member.member_id,
            generation=self.generation,
            protocol_type=self.protocol_type,
            protocol_name=self.protocol,
            leader=self.leader or "",
            members=[
                (m.member_id, m.group_instance_id, m.metadata(self.protocol or ""))
                for m in self.members.values()
            ]
            if is_leader
            else [],
        )

    def subscribed_topics(self) -> set[str] | None:
        """Topics the members subscribe to (consumer protocol), None when unknown."""
        if self.protocol_type != PROTOCOL_TYPE or self.protocol is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                topics.update(decode_subscription(member.metadata(self.protocol)).topics)
            except ConsumerProtocolError:
                return None
        return topics

    # -- the stored form ----------------------------------------------------------------------

    def metadata_value(self) -> GroupMetadataValue:
        return GroupMetadataValue(
            protocol_type=self.protocol_type or "",
            generation=self.generation,
            protocol=self.protocol,
            leader=self.leader if self.members else None,
            current_state_timestamp=self.state_timestamp,
            members=[m.value(self.protocol) for m in self.members.values()],
        )

    @classmethod
    def from_value(cls, group_id: str, partition: int, value: GroupMetadataValue) -> Group:
        """A group read back from its partition: members as stored, Stable or Empty."""
        group = cls(group_id, partition, value.current_state_timestamp)
        group.generation = value.generation
        group.protocol_type = value.protocol_type or None
        group.protocol = value.protocol
        for stored in value.members:
            group.add(
                Member(
                    member_id=stored.member_id,
                    group_instance_id=stored.group_instance_id,
                    client_id=stored.client_id,
                    client_host=stored.client_host,
                    rebalance_timeout_ms=stored.rebalance_timeout,
                    session_timeout_ms=stored.session_timeout,
                    protocol_type=value.protocol_type,
                    protocols=[(value.protocol or "", stored.subscription)],
                    assignment=stored.assignment,
                )
            )
        group.leader = value.leader if group.members else None
        if group.members:
            group.state = GroupState.STABLE
        return group
