"""The group coordinator: consumer groups and their committed offsets (seed 003, 三.7-10,
四.3).

A broker coordinates the groups whose ``__consumer_offsets`` partition it leads:
partition ``abs(javaHashCode(group)) % offsets.topic.num.partitions``, Kafka's own hash,
so every client and tool finds the same coordinator. Becoming leader of such a partition
replays it (COORDINATOR_LOAD_IN_PROGRESS meanwhile); losing it drops its groups
(NOT_COORDINATOR from then on).

Everything runs on the event loop, so group state needs no lock; but a write to the
offsets topic is awaited, and whatever follows it re-checks that the group is still in
the generation and state it was in. Timers end sessions, rebalances, member-id
reservations and the wait for SyncGroup; they are the event loop's ``call_later``, or a
test's :class:`Scheduler` (the one seam through which a test drives them).

This class holds the ownership of partitions, the admin calls and the writes; the
members and rebalances are ``membership.py``, the committed offsets
``committed_offsets.py``.

Offsets and group metadata are records in Kafka's format, appended as the partition's
leader and acknowledged once the ISR has them (like ``acks=all``), or failed with the
error Kafka answers for that write failure.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from tidelog.coordinator.committed_offsets import OffsetsMixin
from tidelog.coordinator.group import Group, GroupState, JoinResult, Member, SyncResult
from tidelog.coordinator.membership import MembershipMixin
from tidelog.coordinator.offsets_partition import LoadedPartition, load_offsets_partition
from tidelog.coordinator.offsets_records import (
    GroupMetadataKey,
    encode_group_value,
    encode_key,
    encode_offset_key,
)
from tidelog.protocol.errors import ErrorCode
from tidelog.records.builder import build_keyed_batch
from tidelog.replication.replica_manager import ReplicaManager

__all__ = [
    "OFFSETS_TOPIC",
    "CoordinatorConfig",
    "GroupCoordinator",
    "Scheduler",
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


@functools.lru_cache(maxsize=4096)
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


def _now_ms() -> int:
    return int(time.time() * 1000)


class Scheduler(Protocol):
    """Test seam: what the coordinator's timers are scheduled on. Production passes
    nothing and gets the running event loop's ``call_later``; a test passes a scheduler
    it moves forward by hand, so that it can tell "before the timer" from "after it"
    without waiting on the wall clock.

    ``call_later(delay_s, callback, *args)`` calls ``callback(*args)`` once ``delay_s``
    seconds have passed on the scheduler's clock and returns a handle with ``cancel()``
    and ``when()`` (the time it fires), as ``asyncio.TimerHandle`` does. Session
    deadlines are read off the running loop's clock (membership.py): with a scheduler
    other than the loop, a session ends once its timer fired and that clock too has
    passed its deadline."""

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> Any: ...


class GroupCoordinator(MembershipMixin, OffsetsMixin):
    def __init__(
        self,
        replica_manager: ReplicaManager,
        config: CoordinatorConfig,
        *,
        clock_ms: Callable[[], int] = _now_ms,
        scheduler: Scheduler | None = None,
    ):
        self.replica_manager = replica_manager
        self.config = config
        self._clock_ms = clock_ms
        self._scheduler = scheduler  # None: the running event loop
        self.groups: dict[str, Group] = {}
        # Offsets partitions this broker leads, and those of them loaded.
        self._owned: set[int] = set()
        self._loaded: set[int] = set()
        self._loads: dict[int, asyncio.Task] = {}
        # Timers: per member (session), per group (rebalance, wait for SyncGroup).
        self._timers: dict[str | tuple[str, str], asyncio.TimerHandle] = {}
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

    def elected(self, partition: int, log) -> None:
        """This broker leads offsets partition ``partition``: replay it, unless it already
        did (a new leader epoch with the same leader, after an ISR change, keeps the groups
        as they are)."""
        if partition in self._owned:
            return
        self._owned.add(partition)
        self._loads[partition] = asyncio.create_task(
            self._load(partition, log), name=f"load-offsets-{partition}"
        )

    def resigned(self, partition: int) -> None:
        """Another broker coordinates this partition's groups now: forget them."""
        task = self._loads.pop(partition, None)
        if task is not None:
            task.cancel()
        if partition not in self._owned:
            return
        self._owned.discard(partition)
        self._loaded.discard(partition)
        for group in [g for g in self.groups.values() if g.partition == partition]:
            self._drop(group, ErrorCode.NOT_COORDINATOR)
        logger.info("no longer coordinating the groups of %s-%d", OFFSETS_TOPIC, partition)

    async def _load(self, partition: int, log) -> None:
        started = time.monotonic()
        try:
            loaded = await asyncio.to_thread(load_offsets_partition, log, log.log_end_offset)
        except Exception:
            logger.exception("loading %s-%d failed", OFFSETS_TOPIC, partition)
            self.resigned(partition)
            return
        if self._loads.get(partition) is not asyncio.current_task():
            return  # resigned meanwhile
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
        records = [(encode_offset_key(group.group_id, t, p), None) for t, p in group.offsets]
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
        batch = build_keyed_batch(records, self._clock_ms())
        result = self.replica_manager.append(
            OFFSETS_TOPIC, partition, batch, acks=-1, validate=False
        )
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

    def _call_later(self, key, delay_ms: int, callback, *args) -> None:
        """One timer per key: a group id (its rebalance) or (group id, member id). A timer
        that fires leaves ``_timers`` first (it is the key's current one: a newer timer
        would have cancelled it), so member ids handed out and never used leave nothing."""
        self._cancel(key)

        def fire() -> None:
            del self._timers[key]
            callback(*args)

        scheduler = asyncio.get_running_loop() if self._scheduler is None else self._scheduler
        self._timers[key] = scheduler.call_later(delay_ms / 1000, fire)

    def _cancel(self, key) -> None:
        handle = self._timers.pop(key, None)
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

    @property
    def timer_count(self) -> int:
        """Test hook: how many timers are pending."""
        return len(self._timers)

    async def background_done(self) -> None:
        """Test hook: wait for the writes started in the background so far, so that a
        test can tell "nothing was expired" from "not expired yet"."""
        await asyncio.gather(*self._background)
