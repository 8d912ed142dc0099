"""The group coordinator: consumer groups and their committed offsets (seed 003, 三.7-10,
四.3).

A broker coordinates the groups whose ``__consumer_offsets`` partition it leads:
partition ``abs(javaHashCode(group)) % offsets.topic.num.partitions``, Kafka's own hash,
so every client and tool finds the same coordinator. Becoming leader of such a partition
replays it (COORDINATOR_LOAD_IN_PROGRESS meanwhile); losing it drops its groups
(NOT_COORDINATOR from then on).

Everything runs on the event loop, so group state needs no lock; but a write to the
offsets topic is awaited, and whatever follows it re-checks that the group is still in
the generation and state it was in. JoinGroup and SyncGroup answers are futures kept on
the member until the rebalance gets there. Timers (``loop.call_later``) end sessions,
rebalances, member-id reservations and the wait for SyncGroup.

Offsets and group metadata are records in Kafka's format, appended as the partition's
leader and acknowledged once the ISR has them (like ``acks=all``), or failed with the
error Kafka answers for that write failure.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.coordinator.group import Group, GroupState, JoinResult, Member, SyncResult
from tidelog.coordinator.offsets_partition import LoadedPartition, load_offsets_partition
from tidelog.coordinator.offsets_records import (
    GroupMetadataKey,
    OffsetKey,
    OffsetValue,
    encode_group_value,
    encode_key,
    encode_offset_value,
)
from tidelog.protocol.errors import ErrorCode
from tidelog.records.builder import build_batch
from tidelog.replication.replica_manager import ReplicaManager

__all__ = [
    "OFFSETS_TOPIC",
    "CoordinatorConfig",
    "GroupCoordinator",
    "OffsetCommit",
    "java_string_hash",
    "partition_for",
]

logger = logging.getLogger(__name__)

OFFSETS_TOPIC = "__consumer_offsets"

TopicPartition = tuple[str, int]
State = GroupState

# What a failed write to the offsets topic becomes for the client (Kafka's mapping).
_WRITE_ERRORS = {
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.REQUEST_TIMED_OUT: ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.NOT_LEADER_OR_FOLLOWER: ErrorCode.NOT_COORDINATOR,
    ErrorCode.KAFKA_STORAGE_ERROR: ErrorCode.NOT_COORDINATOR,
    ErrorCode.FENCED_LEADER_EPOCH: ErrorCode.NOT_COORDINATOR,
    ErrorCode.MESSAGE_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.RECORD_LIST_TOO_LARGE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
    ErrorCode.INVALID_FETCH_SIZE: ErrorCode.INVALID_COMMIT_OFFSET_SIZE,
}


def java_string_hash(text: str) -> int:
    """Java's ``String.hashCode``: over UTF-16 code units, in 32-bit arithmetic."""
    value = 0
    data = text.encode("utf-16-be")
    for index in range(0, len(data), 2):
        value = (31 * value + (data[index] << 8 | data[index + 1])) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value


def partition_for(group_id: str, num_partitions: int) -> int:
    """Kafka's ``Utils.abs(groupId.hashCode) % partitions`` (abs(MIN_VALUE) is 0)."""
    code = java_string_hash(group_id)
    return (0 if code == -(1 << 31) else abs(code)) % num_partitions


@dataclass(frozen=True)
class CoordinatorConfig:
    num_partitions: int = 50
    commit_timeout_ms: int = 5000
    retention_ms: int = 7 * 24 * 3600 * 1000
    initial_rebalance_delay_ms: int = 3000
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1800000
    max_group_size: int = 2**31 - 1
    max_metadata_bytes: int = 4096

    @classmethod
    def from_broker(cls, config) -> CoordinatorConfig:
        return cls(
            num_partitions=config["offsets.topic.num.partitions"],
            commit_timeout_ms=config["offsets.commit.timeout.ms"],
            retention_ms=config["offsets.retention.minutes"] * 60 * 1000,
            initial_rebalance_delay_ms=config["group.initial.rebalance.delay.ms"],
            min_session_timeout_ms=config["group.min.session.timeout.ms"],
            max_session_timeout_ms=config["group.max.session.timeout.ms"],
            max_group_size=config["group.max.size"],
            max_metadata_bytes=config["offset.metadata.max.bytes"],
        )


@dataclass(frozen=True)
class OffsetCommit:
    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


def _now_ms() -> int:
    return int(time.time() * 1000)


class GroupCoordinator:
    def __init__(
        self,
        replica_manager: ReplicaManager,
        config: CoordinatorConfig,
        *,
        clock_ms: Callable[[], int] = _now_ms,
    ):
        self.replica_manager = replica_manager
        self.config = config
        self._clock_ms = clock_ms
        self.groups: dict[str, Group] = {}
        # Offsets partitions this broker leads: leader epoch, and whether loaded.
        self._owned: dict[int, int] = {}
        self._loaded: set[int] = set()
        self._loads: dict[int, asyncio.Task] = {}
        # Timers: per member (session), per group (rebalance, wait for SyncGroup).
        self._member_timers: dict[tuple[str, str], asyncio.TimerHandle] = {}
        self._group_timers: dict[str, asyncio.TimerHandle] = {}
        self._initial_delays: set[str] = set()  # groups in their initial rebalance delay
        self._background: set[asyncio.Task] = set()

    # -- ownership ----------------------------------------------------------------------------

    def partition_for(self, group_id: str) -> int:
        return partition_for(group_id, self.config.num_partitions)

    def check(self, group_id: str | None, *, allow_empty: bool = False) -> ErrorCode:
        """The error a request for ``group_id`` gets before anything else, or NONE."""
        if group_id is None or (not group_id and not allow_empty):
            return ErrorCode.INVALID_GROUP_ID
        partition = self.partition_for(group_id)
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        if partition not in self._loaded:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        return ErrorCode.NONE

    @property
    def loading(self) -> bool:
        return len(self._loaded) < len(self._owned)

    def elected(self, partition: int, leader_epoch: int, log) -> None:
        """This broker now leads offsets partition ``partition``: replay it."""
        if self._owned.get(partition) == leader_epoch:
            return
        self.resigned(partition)
        self._owned[partition] = leader_epoch
        self._loads[partition] = asyncio.create_task(
            self._load(partition, leader_epoch, log), name=f"load-offsets-{partition}"
        )

    def resigned(self, partition: int) -> None:
        """Another broker coordinates this partition's groups now: forget them."""
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        if self._owned.pop(partition, None) is None:
            return
        self._loaded.discard(partition)
        for group in [g for g in self.groups.values() if g.partition == partition]:
            self._drop(group, ErrorCode.NOT_COORDINATOR)
        logger.info("no longer coordinating the groups of %s-%d", OFFSETS_TOPIC, partition)

    async def _load(self, partition: int, leader_epoch: int, log) -> None:
        started = time.monotonic()
        try:
            loaded = await asyncio.to_thread(load_offsets_partition, log, log.log_end_offset)
        except Exception:
            logger.exception("loading %s-%d failed", OFFSETS_TOPIC, partition)
            self.resigned(partition)
            return
        if self._owned.get(partition) != leader_epoch:
            return
        self._install(partition, loaded)
        self._loaded.add(partition)
        self._loads.pop(partition, None)
        count = sum(1 for g in self.groups.values() if g.partition == partition)
        logger.log(
            logging.INFO if count else logging.DEBUG,
            "loaded %d groups of %s-%d in %.0f ms",
            count,
            OFFSETS_TOPIC,
            partition,
            (time.monotonic() - started) * 1000,
        )

    def _install(self, partition: int, loaded: LoadedPartition) -> None:
        now = self._clock_ms()
        for group_id in set(loaded.groups) | set(loaded.offsets):
            value = loaded.groups.get(group_id)
            if value is None:
                group = Group(group_id, partition, now)
            else:
                group = Group.from_value(group_id, partition, value)
            group.offsets = loaded.offsets.get(group_id, {})
            if not group.offsets and value is None:
                continue
            self.groups[group_id] = group
            for member in group.members.values():
                self._schedule_session(group, member)

    async def shutdown(self) -> None:
        for partition in list(self._owned):
            self.resigned(partition)
        for task in list(self._background):
            task.cancel()

    # -- JoinGroup ------------------------------------------------------------------------------

    async def join(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        *,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> JoinResult:
        error = self.check(group_id)
        if error:
            return JoinResult(error, member_id)
        config = self.config
        if not config.min_session_timeout_ms <= session_timeout_ms <= config.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = self.groups[group_id] = Group(
                group_id, self.partition_for(group_id), self._clock_ms()
            )
        if group.is_in(State.DEAD):
            # Removed meanwhile (deleted, or moved away): the client finds its coordinator.
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports(protocol_type, protocols):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        member = Member(
            member_id=member_id,
            group_instance_id=instance_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
        )
        if not member_id:
            return await self._join_unknown_member(group, member, require_known_member_id)
        return await self._join_known_member(group, member)

    async def _join_unknown_member(
        self, group: Group, joining: Member, require_known_member_id: bool
    ) -> JoinResult:
        joining.member_id = f"{joining.client_id}-{uuid.uuid4()}"
        instance_id = joining.group_instance_id
        if instance_id is not None and instance_id in group.static_members:
            return await self._rejoin_static_member(group, joining)
        if len(group.members) + len(group.pending_members) >= self.config.max_group_size:
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        if require_known_member_id and instance_id is None:
            # The member id round trip (KIP-394): a client that never comes back with it
            # holds no place in the group, only a reservation that ends with its session.
            group.pending_members.add(joining.member_id)
            self._call_later(
                (group.group_id, joining.member_id),
                joining.session_timeout_ms,
                self._pending_member_expired,
                group,
                joining.member_id,
            )
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, joining.member_id)
        return await self._add_member_and_rebalance(group, joining)

    async def _join_known_member(self, group: Group, joining: Member) -> JoinResult:
        member_id = joining.member_id
        if member_id in group.pending_members:
            return await self._add_member_and_rebalance(group, joining)
        if group.fenced(member_id, joining.group_instance_id):
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id)
        member = group.members.get(member_id)
        if member is None or group.is_in(State.EMPTY):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        if group.is_in(State.PREPARING_REBALANCE):
            return await self._update_member_and_rebalance(group, member, joining)
        if group.is_in(State.COMPLETING_REBALANCE):
            if member.same_protocols(joining.protocols):
                # The JoinGroup answer got lost: send it again.
                return group.join_result(member)
            return await self._update_member_and_rebalance(group, member, joining)
        # Stable: only the leader, or a member whose subscription changed, rebalances.
        if member_id == group.leader or not member.same_protocols(joining.protocols):
            return await self._update_member_and_rebalance(group, member, joining)
        self._schedule_session(group, member)
        return group.join_result(member)

    async def _rejoin_static_member(self, group: Group, joining: Member) -> JoinResult:
        """A static member restarted: it takes its old place under a new member id. In a
        Stable group with unchanged protocols, without a rebalance (KIP-345)."""
        instance_id = joining.group_instance_id
        old_id = group.static_members[instance_id]
        old = group.members[old_id]
        self._answer(old, ErrorCode.FENCED_INSTANCE_ID)
        self._cancel((group.group_id, old_id))
        member = group.replace_static_member(instance_id, joining.member_id)
        unchanged = member.metadata(group.protocol or "") == joining.metadata(group.protocol or "")
        if group.is_in(State.STABLE) and unchanged:
            generation = group.generation
            error = await self._store_group(group)
            if error:
                if group.static_members.get(instance_id) == joining.member_id:
                    group.replace_static_member(instance_id, old_id)
                return JoinResult(error, "")
            if group.generation != generation or joining.member_id not in group.members:
                return JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, joining.member_id)
            self._schedule_session(group, member)
            result = group.join_result(member)
            # The leader's assignment stands: it need not compute one (KIP-814).
            result.skip_assignment = member.member_id == group.leader
            return result
        return await self._update_member_and_rebalance(group, member, joining)

    async def _add_member_and_rebalance(self, group: Group, member: Member) -> JoinResult:
        self._cancel((group.group_id, member.member_id))  # the pending reservation
        # Kept here: completing the rebalance (maybe right away) clears it on the member.
        answer = member.awaiting_join = asyncio.get_running_loop().create_future()
        if group.is_in(State.PREPARING_REBALANCE):
            group.new_member_added = True
        group.add(member)
        self._schedule_session(group, member)
        self._maybe_prepare_rebalance(group, f"{member.member_id} joined")
        return await answer

    async def _update_member_and_rebalance(
        self, group: Group, member: Member, joining: Member
    ) -> JoinResult:
        member.protocols = joining.protocols
        member.rebalance_timeout_ms = joining.rebalance_timeout_ms
        member.session_timeout_ms = joining.session_timeout_ms
        member.client_id, member.client_host = joining.client_id, joining.client_host
        if member.awaiting_join is not None and not member.awaiting_join.done():
            member.awaiting_join.set_result(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS))
        answer = member.awaiting_join = asyncio.get_running_loop().create_future()
        self._maybe_prepare_rebalance(group, f"{member.member_id} rejoined")
        return await answer

    # -- rebalancing --------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(State.PREPARING_REBALANCE):
            self._try_complete_join(group)
        elif group.is_in(State.STABLE, State.COMPLETING_REBALANCE, State.EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(State.COMPLETING_REBALANCE):
            for member in group.members.values():
                member.assignment = b""
                self._answer_sync(member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        initial = group.is_in(State.EMPTY)
        group.transition_to(State.PREPARING_REBALANCE, self._clock_ms())
        logger.info(
            "group %s: rebalancing generation %d (%s)", group.group_id, group.generation, reason
        )
        if initial:
            # Wait a little for the others of a group that is starting (Kafka's
            # group.initial.rebalance.delay.ms), longer while members keep coming.
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.max_rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            self._start_rebalance_timer(group, delay, self._initial_delay_over, group, remaining)
        else:
            timeout = group.max_rebalance_timeout_ms()
            self._start_rebalance_timer(group, timeout, self._complete_join, group)
            self._try_complete_join(group)

    def _start_rebalance_timer(self, group: Group, delay_ms: int, callback, *args) -> None:
        self._call_later(group.group_id, delay_ms, callback, *args)

    def _initial_delay_over(self, group: Group, remaining_ms: int) -> None:
        if group.new_member_added and remaining_ms > 0:
            delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            group.new_member_added = False
            self._start_rebalance_timer(
                group, delay, self._initial_delay_over, group, remaining_ms - delay
            )
        else:
            self._complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        waiting_initial = group.group_id in self._initial_delays
        if (
            group.is_in(State.PREPARING_REBALANCE)
            and not waiting_initial
            and group.all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """Everyone who will join has: members that did not are out, the next
        generation starts, the leader gets everyone's metadata to compute an assignment."""
        if not group.is_in(State.PREPARING_REBALANCE):
            return
        self._cancel(group.group_id)
        for member in group.not_yet_rejoined():
            self._remove_member(group, member)
        group.init_next_generation(self._clock_ms())
        if group.is_in(State.EMPTY):
            logger.info("group %s: empty at generation %d", group.group_id, group.generation)
            self._in_background(self._store_group(group))
            return
        logger.info(
            "group %s: generation %d with %d members, protocol %s, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol,
            group.leader,
        )
        for member in group.members.values():
            future, member.awaiting_join = member.awaiting_join, None
            if future is not None and not future.done():
                future.set_result(group.join_result(member))
            self._schedule_session(group, member)
        generation = group.generation
        self._call_later(
            group.group_id,
            group.max_rebalance_timeout_ms(),
            self._sync_timed_out,
            group,
            generation,
        )

    def _sync_timed_out(self, group: Group, generation: int) -> None:
        """Members that sent no SyncGroup within the rebalance timeout are out."""
        if group.generation != generation or not group.is_in(State.COMPLETING_REBALANCE):
            return
        late = [m for m in group.members.values() if m.awaiting_sync is None]
        for member in late:
            self._remove_member(group, member)
        if late:
            self._prepare_rebalance(group, f"{len(late)} members sent no SyncGroup in time")

    # -- SyncGroup -------------------------------------------------------------------------------

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        error = self.check(group_id)
        if error:
            return SyncResult(error)
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(State.DEAD):
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.fenced(member_id, instance_id):
            return SyncResult(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None or group.is_in(State.EMPTY):
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != group.generation:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type and protocol_type != group.protocol_type) or (
            protocol_name and protocol_name != group.protocol
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_in(State.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        self._schedule_session(group, member)
        if group.is_in(State.STABLE):
            return self._sync_result(group, member)
        answer = member.awaiting_sync = asyncio.get_running_loop().create_future()
        if member_id == group.leader:
            self._in_background(self._install_assignment(group, generation, assignments))
        return await answer

    async def _install_assignment(
        self, group: Group, generation: int, assignments: dict[str, bytes]
    ) -> None:
        """The leader's assignment: stored with the group, then sent to every member."""
        assignment = {m: assignments.get(m, b"") for m in group.members}
        error = await self._store_group(group, assignment)
        if group.generation != generation or not group.is_in(State.COMPLETING_REBALANCE):
            return
        if error:
            for member in group.members.values():
                self._answer_sync(member, SyncResult(error))
            self._prepare_rebalance(group, f"storing the assignment failed: {error.name}")
            return
        self._cancel(group.group_id)
        for member_id, member in group.members.items():
            member.assignment = assignment.get(member_id, b"")
            self._answer_sync(member, self._sync_result(group, member))
        group.transition_to(State.STABLE, self._clock_ms())
        logger.info("group %s: generation %d stable", group.group_id, group.generation)

    @staticmethod
    def _sync_result(group: Group, member: Member) -> SyncResult:
        return SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol, member.assignment)

    @staticmethod
    def _answer_sync(member: Member, result: SyncResult) -> None:
        future, member.awaiting_sync = member.awaiting_sync, None
        if future is not None and not future.done():
            future.set_result(result)

    # -- Heartbeat, LeaveGroup -------------------------------------------------------------------

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        error = self.check(group_id)
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(State.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None or group.is_in(State.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        self._schedule_session(group, member)
        if group.is_in(State.PREPARING_REBALANCE):
            # How every member learns that a rebalance started (seed 003, 四.3).
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """LeaveGroup for (member id, group instance id) pairs: the request's error and
        each member's."""
        error = self.check(group_id)
        if error:
            return error, []
        group = self.groups.get(group_id)
        if group is None or group.is_in(State.DEAD):
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in leaving]
        errors = []
        for member_id, instance_id in leaving:
            if instance_id is not None:
                known = group.static_members.get(instance_id)
                if known is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != known:
                    errors.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = known
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._cancel((group_id, member_id))
                self._try_complete_join(group)
            elif member_id in group.members:
                self._remove_member(group, group.members[member_id])
                self._member_left(group, f"{member_id} left")
            else:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            errors.append(ErrorCode.NONE)
        return ErrorCode.NONE, errors

    def _member_left(self, group: Group, reason: str) -> None:
        if group.is_in(State.STABLE, State.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        elif group.is_in(State.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_member(self, group: Group, member: Member) -> None:
        self._cancel((group.group_id, member.member_id))
        self._answer(member, ErrorCode.UNKNOWN_MEMBER_ID)
        group.remove(member.member_id)

    def _session_expired(self, group: Group, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is None or self.groups.get(group.group_id) is not group:
            return
        if member.awaiting_join is not None or member.awaiting_sync is not None:
            # A member whose JoinGroup or SyncGroup is held here is alive.
            self._schedule_session(group, member)
            return
        logger.info(
            "group %s: member %s sent no heartbeat within %d ms; removing it",
            group.group_id,
            member_id,
            member.session_timeout_ms,
        )
        self._remove_member(group, member)
        self._member_left(group, f"session of {member_id} expired")

    def _pending_member_expired(self, group: Group, member_id: str) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._try_complete_join(group)

    # -- offsets ------------------------------------------------------------------------------

    async def commit_offsets(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        offsets: dict[TopicPartition, OffsetCommit],
        *,
        retention_ms: int = -1,
    ) -> dict[TopicPartition, ErrorCode]:
        def everywhere(code: ErrorCode) -> dict[TopicPartition, ErrorCode]:
            return dict.fromkeys(offsets, code)

        error = self.check(group_id, allow_empty=True)
        if error:
            return everywhere(error)
        group = self.groups.get(group_id)
        if group is None:
            if generation >= 0:
                return everywhere(ErrorCode.ILLEGAL_GENERATION)
            # A group that only stores offsets here (manual assignment, admin tools).
            group = self.groups[group_id] = Group(
                group_id, self.partition_for(group_id), self._clock_ms()
            )
        if group.is_in(State.DEAD):
            return everywhere(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.fenced(member_id, instance_id):
            return everywhere(ErrorCode.FENCED_INSTANCE_ID)
        if not (generation < 0 and group.is_in(State.EMPTY)):
            if group.is_in(State.COMPLETING_REBALANCE):
                return everywhere(ErrorCode.REBALANCE_IN_PROGRESS)
            member = group.members.get(member_id)
            if member is None:
                return everywhere(ErrorCode.UNKNOWN_MEMBER_ID)
            if generation != group.generation:
                return everywhere(ErrorCode.ILLEGAL_GENERATION)
            self._schedule_session(group, member)
        return await self._store_offsets(group, offsets, retention_ms)

    async def _store_offsets(
        self, group: Group, offsets: dict[TopicPartition, OffsetCommit], retention_ms: int
    ) -> dict[TopicPartition, ErrorCode]:
        now = self._clock_ms()
        results: dict[TopicPartition, ErrorCode] = {}
        values: dict[TopicPartition, OffsetValue] = {}
        for key, commit in offsets.items():
            metadata = commit.metadata or ""
            if len(metadata.encode()) > self.config.max_metadata_bytes:
                results[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            values[key] = OffsetValue(
                offset=commit.offset,
                leader_epoch=commit.leader_epoch,
                metadata=metadata,
                commit_timestamp=now,
                expire_timestamp=now + retention_ms if retention_ms >= 0 else -1,
            )
        if values:
            records = [
                (encode_key(OffsetKey(group.group_id, t, p)), encode_offset_value(v))
                for (t, p), v in values.items()
            ]
            error = await self._append(group.partition, records)
            if not error and self.groups.get(group.group_id) is group:
                group.offsets.update(values)
            results.update(dict.fromkeys(values, error))
        return {key: results[key] for key in offsets}

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetValue | None]]:
        """Committed offsets of ``partitions`` (None: all the group has)."""
        error = self.check(group_id, allow_empty=True)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        stored = group.offsets if group is not None else {}
        if partitions is None:
            return ErrorCode.NONE, dict(stored)
        return ErrorCode.NONE, {key: stored.get(key) for key in partitions}

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: refused for topics the group's members subscribe to."""
        error = self.check(group_id)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        if group is None or group.is_in(State.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        subscribed: set[str] = set()
        if not group.is_in(State.EMPTY):
            topics = group.subscribed_topics()
            if topics is None:
                return ErrorCode.NON_EMPTY_GROUP, {}
            subscribed = topics
        results = {
            key: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if key[0] in subscribed else ErrorCode.NONE
            for key in partitions
        }
        removable = [k for k, code in results.items() if not code and k in group.offsets]
        if removable:
            error = await self._remove_offsets(group, removable)
            if error:
                return error, {}
        return ErrorCode.NONE, results

    async def _remove_offsets(self, group: Group, partitions: list[TopicPartition]) -> ErrorCode:
        records = [(encode_key(OffsetKey(group.group_id, t, p)), None) for t, p in partitions]
        error = await self._append(group.partition, records)
        if not error:
            for key in partitions:
                group.offsets.pop(key, None)
        return error

    def expire_offsets(self) -> None:
        """Drop offsets past ``offsets.retention.minutes``: an Empty group's counted from
        when it became Empty (Kafka 2.1+), an explicit expiry time as given; a group with
        nothing left is deleted."""
        now = self._clock_ms()
        retention = self.config.retention_ms
        for group in list(self.groups.values()):
            if group.partition not in self._loaded or not group.is_in(State.EMPTY):
                continue
            base = group.state_timestamp if group.protocol_type is not None else None
            expired = [
                key
                for key, value in group.offsets.items()
                if (
                    now >= value.expire_timestamp
                    if value.expire_timestamp >= 0
                    else now - (base if base is not None else value.commit_timestamp) >= retention
                )
            ]
            if expired or not group.offsets:
                self._in_background(self._expire(group, expired))

    async def _expire(self, group: Group, expired: list[TopicPartition]) -> None:
        if expired and await self._remove_offsets(group, expired):
            return
        logger.info("group %s: %d offsets expired", group.group_id, len(expired))
        if group.is_in(State.EMPTY) and not group.offsets:
            await self._delete_group(group)

    # -- admin: ListGroups, DescribeGroups, DeleteGroups ---------------------------------------

    def list_groups(self) -> tuple[ErrorCode, list[Group]]:
        if self.loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, []
        return ErrorCode.NONE, [g for g in self.groups.values() if not g.is_in(State.DEAD)]

    def describe(self, group_id: str) -> tuple[ErrorCode, Group | None]:
        error = self.check(group_id, allow_empty=True)
        if error:
            return error, None
        return ErrorCode.NONE, self.groups.get(group_id)

    async def delete_groups(self, group_ids: list[str]) -> dict[str, ErrorCode]:
        results = {}
        for group_id in group_ids:
            error = self.check(group_id, allow_empty=True)
            group = self.groups.get(group_id)
            if error:
                results[group_id] = error
            elif group is None or group.is_in(State.DEAD):
                results[group_id] = ErrorCode.GROUP_ID_NOT_FOUND
            elif not group.is_in(State.EMPTY):
                results[group_id] = ErrorCode.NON_EMPTY_GROUP
            else:
                results[group_id] = await self._delete_group(group)
        return results

    async def _delete_group(self, group: Group) -> ErrorCode:
        """Tombstones for the group and every offset it has, then it is gone."""
        records = [(encode_key(OffsetKey(group.group_id, t, p)), None) for t, p in group.offsets]
        records.append((encode_key(GroupMetadataKey(group.group_id)), None))
        error = await self._append(group.partition, records)
        if error:
            return error
        if self.groups.get(group.group_id) is group and group.is_in(State.EMPTY):
            self._drop(group, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return ErrorCode.NONE

    def _drop(self, group: Group, answer: ErrorCode) -> None:
        """The group leaves this coordinator: Dead, its waiting requests answered."""
        self._cancel(group.group_id)
        for member in group.members.values():
            self._cancel((group.group_id, member.member_id))
            self._answer(member, answer)
        for member_id in group.pending_members:
            self._cancel((group.group_id, member_id))
        group.transition_to(State.DEAD, self._clock_ms())
        self.groups.pop(group.group_id, None)

    # -- writing to the offsets topic ----------------------------------------------------------

    async def _store_group(
        self, group: Group, assignment: dict[str, bytes] | None = None
    ) -> ErrorCode:
        value = group.metadata_value()
        if assignment is not None:
            for member in value.members:
                member.assignment = assignment.get(member.member_id, b"")
        key = encode_key(GroupMetadataKey(group.group_id))
        return await self._append(group.partition, [(key, encode_group_value(value))])

    async def _append(self, partition: int, records: list[tuple[bytes, bytes | None]]) -> ErrorCode:
        """Append as the partition's leader and wait for its ISR, like acks=all."""
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        batch = build_batch(records, timestamp=self._clock_ms())
        result = self.replica_manager.append(OFFSETS_TOPIC, partition, batch, acks=-1)
        error = result.error
        if not error:
            deadline = asyncio.get_running_loop().time() + self.config.commit_timeout_ms / 1000
            error = await self.replica_manager.wait_for_isr(
                OFFSETS_TOPIC, partition, result.info.last_offset + 1, deadline
            )
        if error:
            logger.warning("writing to %s-%d failed: %s", OFFSETS_TOPIC, partition, error.name)
        return _WRITE_ERRORS.get(error, error)

    # -- timers and answers ---------------------------------------------------------------------

    def _schedule_session(self, group: Group, member: Member) -> None:
        self._call_later(
            (group.group_id, member.member_id),
            member.session_timeout_ms,
            self._session_expired,
            group,
            member.member_id,
        )

    def _call_later(self, key, delay_ms: int, callback, *args) -> None:
        self._cancel(key)
        timers = self._group_timers if isinstance(key, str) else self._member_timers
        timers[key] = asyncio.get_running_loop().call_later(delay_ms / 1000, callback, *args)
        if callback == self._initial_delay_over:
            self._initial_delays.add(key)

    def _cancel(self, key) -> None:
        timers = self._group_timers if isinstance(key, str) else self._member_timers
        self._initial_delays.discard(key)
        handle = timers.pop(key, None)
        if handle is not None:
            handle.cancel()

    @staticmethod
    def _answer(member: Member, error: ErrorCode) -> None:
        """Answer whatever JoinGroup or SyncGroup of ``member`` is held here."""
        join, member.awaiting_join = member.awaiting_join, None
        if join is not None and not join.done():
            join.set_result(JoinResult(error, member.member_id))
        sync, member.awaiting_sync = member.awaiting_sync, None
        if sync is not None and not sync.done():
            sync.set_result(SyncResult(error))

    def _in_background(self, work) -> None:
        task = asyncio.create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)
