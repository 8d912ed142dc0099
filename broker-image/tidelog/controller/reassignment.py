"""Partition reassignment on the controller (seed 003 控制器 功能 B 分区重分配), as Kafka
2.4+ does it in ZooKeeper mode.

With ORS the original replicas, TRS the target ones, AR = TRS - ORS the adding and
RR = ORS - TRS the removing replicas, the partition's replica set RS is TRS followed by
the rest of ORS while it moves, and ZooKeeper holds RS, AR and RR in the topic znode, so
a new controller resumes an unfinished move:

1. RS, AR, RR are written to the topic znode; replicas of an earlier, replaced target
   that the new one drops are stopped and deleted at once.
2. Unless TRS is already in the ISR: the leader epoch is bumped and every replica of RS
   gets LeaderAndIsr (the leader learns the new followers, AR start copying as
   NewReplica). The leaders' ISR change notifications bring the controller back here.
3. Once TRS is in the ISR: AR go online, the leader moves into TRS when it is not in it
   (first live in-sync replica of TRS), RR leave the ISR (one conditional write, leader
   epoch +1), TRS get LeaderAndIsr, RR get StopReplica with delete (a removed replica on
   a broker that is down is deleted when it comes back), the topic znode holds TRS only,
   the partition leaves ``/admin/reassign_partitions``, every broker gets UpdateMetadata.

A cancellation (a null target) is a reassignment back to ORS: AR are dropped and
deleted. Asked through AlterPartitionReassignments or the ``/admin/reassign_partitions``
znode. Mixed into :class:`~tidelog.controller.controller.Controller`; every step runs as
an event in its queue.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace

from tidelog.controller.requests import ReplicaToStop
from tidelog.controller.state_machines import ReplicaState
from tidelog.controller.zk_data import PartitionState, TopicAssignment
from tidelog.protocol.errors import ErrorCode

__all__ = ["Reassignment", "ReassignmentError", "Reassignments", "reassign_to", "validate_target"]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


@dataclass(frozen=True)
class Reassignment:
    """A partition's replica set while it moves: RS, AR, RR."""

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def original(self) -> list[int]:
        return [b for b in self.replicas if b not in self.adding]

    @property
    def target(self) -> list[int]:
        return [b for b in self.replicas if b not in self.removing]

    @property
    def in_progress(self) -> bool:
        return bool(self.adding or self.removing)


def reassign_to(current: Reassignment, target: Sequence[int]) -> Reassignment:
    """The replica set moving from the current originals to ``target`` (Kafka's
    ``ReplicaAssignment.reassignTo``): a reassignment that replaces one in progress keeps
    its original replicas."""
    original = current.original
    full = list(dict.fromkeys([*target, *original]))
    return Reassignment(
        tuple(full),
        tuple(b for b in full if b not in original),
        tuple(b for b in full if b not in target),
    )


class ReassignmentError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


def validate_target(target: Sequence[int], live: Collection[int]) -> None:
    """Kafka's checks of a target replica list; ReassignmentError when it fails."""
    if not target:
        raise ReassignmentError(ErrorCode.INVALID_REPLICA_ASSIGNMENT, "Empty replica list")
    if len(set(target)) != len(target):
        raise ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Duplicate replica ids in {list(target)}"
        )
    if any(b < 0 for b in target):
        raise ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT, f"Invalid broker id in {list(target)}"
        )
    dead = sorted(set(target) - set(live))
    if dead:
        raise ReassignmentError(
            ErrorCode.INVALID_REPLICA_ASSIGNMENT,
            f"Replica assignment has brokers that are not alive: {dead}",
        )


class Reassignments:
    """Uses the controller's ``is_active``, ``brokers``, ``assignments``, ``states``,
    ``machines``, ``epoch``, ``channel``, ``zk``, ``enqueue``, ``_zk``, ``_move_leader``,
    ``_send_leader_and_isr``, ``_send_update_metadata``, ``_leaderships``,
    ``_record_states`` and ``_watch_zk_reassignments``; ``_zk_reassigning`` holds the
    partitions ``/admin/reassign_partitions`` asked for."""

    _zk_reassigning: dict[TopicPartition, list[int]]

    # -- asked for: AlterPartitionReassignments, ListPartitionReassignments --------------------

    async def alter_reassignments(
        self, asked: Mapping[TopicPartition, Sequence[int] | None]
    ) -> dict[TopicPartition, tuple[ErrorCode, str | None]]:
        """Start (a target) or cancel (None) each partition's reassignment, as an event
        in the queue: each partition's error and message."""
        results: dict[TopicPartition, tuple[ErrorCode, str | None]] = {}

        async def event() -> None:
            for key, target in asked.items():
                results[key] = await self._alter_one(key, target)
            await self._forget_zk_reassignments(
                [k for k, (code, _) in results.items() if code == ErrorCode.NONE]
            )

        event.__name__ = "alter_partition_reassignments"
        await self.enqueue(event)
        return results

    def ongoing_reassignments(
        self, keys: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, Reassignment]:
        """ListPartitionReassignments: the partitions moving now (of ``keys``)."""
        found = {}
        for topic, assignment in sorted(self.assignments.items()):
            for partition in sorted(set(assignment.adding) | set(assignment.removing)):
                key = (topic, partition)
                if keys is None or key in keys:
                    found[key] = self._reassignment(key)
        return found

    async def _alter_one(
        self, key: TopicPartition, target: Sequence[int] | None
    ) -> tuple[ErrorCode, str | None]:
        if not self.is_active:
            return ErrorCode.NOT_CONTROLLER, None
        if key[0] not in self.assignments or key not in self.states:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None
        current = self._reassignment(key)
        if target is None:
            if not current.in_progress:
                return ErrorCode.NO_REASSIGNMENT_IN_PROGRESS, None
            target = current.original
        else:
            try:
                validate_target(target, self.brokers)
            except ReassignmentError as error:
                return error.code, str(error)
        await self._reassign(key, reassign_to(current, target))
        return ErrorCode.NONE, None

    # -- asked for through /admin/reassign_partitions ---------------------------------------

    async def _zk_reassignments_changed(self) -> None:
        if not self.is_active:
            return
        asked = await self._zk(self.zk.zk_reassignments, self._watch_zk_reassignments)
        new = {k: t for k, t in asked.items() if self._zk_reassigning.get(k) != t}
        invalid = []
        for key, target in sorted(new.items()):
            code, message = await self._alter_one(key, target)
            if code == ErrorCode.NONE:
                self._zk_reassigning[key] = target
            else:
                logger.error("%s-%d: reassignment to %s refused: %s", *key, target, message or code)
                invalid.append(key)
        if invalid:
            await self._forget_zk_reassignments(invalid)

    async def _forget_zk_reassignments(self, keys: Iterable[TopicPartition]) -> None:
        """Take partitions out of ``/admin/reassign_partitions`` (done, refused, or taken
        over by AlterPartitionReassignments)."""
        keys = [k for k in keys if k in self._zk_reassigning]
        if not keys:
            return
        asked = await self._zk(self.zk.zk_reassignments, self._watch_zk_reassignments)
        for key in keys:
            self._zk_reassigning.pop(key, None)
            asked.pop(key, None)
        await self._zk(self.zk.set_zk_reassignments, asked)

    # -- the steps ---------------------------------------------------------------------------

    def _reassignment(self, key: TopicPartition) -> Reassignment:
        topic, partition = key
        assignment = self.assignments[topic]
        return Reassignment(
            tuple(assignment.partitions[partition]),
            tuple(assignment.adding.get(partition, ())),
            tuple(assignment.removing.get(partition, ())),
        )

    async def _write_reassignment(self, key: TopicPartition, moving: Reassignment) -> None:
        """The topic znode (and this controller's copy) with the partition's RS, AR, RR."""
        topic, partition = key
        current = self.assignments[topic]

        def with_partition(mapping: dict[int, list[int]], value: Sequence[int]) -> dict:
            updated = {p: r for p, r in mapping.items() if p != partition}
            if value:
                updated[partition] = list(value)
            return updated

        assignment = replace(
            current,
            partitions={**current.partitions, partition: list(moving.replicas)},
            adding=with_partition(current.adding, moving.adding),
            removing=with_partition(current.removing, moving.removing),
        )
        await self._zk(self.zk.set_topic_assignment, assignment)
        self.assignments[topic] = assignment

    async def _reassign(self, key: TopicPartition, moving: Reassignment) -> None:
        previous = self._reassignment(key)
        unneeded = [b for b in previous.replicas if b not in moving.replicas]
        await self._write_reassignment(key, moving)
        logger.info(
            "%s-%d: reassigning %s → %s (adding %s, removing %s)",
            *key,
            moving.original,
            moving.target,
            list(moving.adding),
            list(moving.removing),
        )
        if unneeded:
            await self._delete_replicas([(*key, b) for b in unneeded])
        await self._resume_reassignment(key)

    async def _resume_reassignment(self, key: TopicPartition) -> None:
        """Step 2, or step 3 when the target replicas are in sync already (a new
        controller comes here for every unfinished reassignment)."""
        moving = self._reassignment(key)
        if self._reassignment_caught_up(key):
            await self._complete_reassignment(key)
            return
        new = [
            (*key, b)
            for b in moving.adding
            if self.machines.replica_state((*key, b)) == ReplicaState.NON_EXISTENT
        ]
        self.machines.move_replicas(new, ReplicaState.NEW)
        await self._move_leader(key, lambda s: (s.leader, s.isr), always=True)
        self._record_states([key])
        await self._send_leader_and_isr([key])
        await self._send_update_metadata(self._leaderships([key]))

    def _reassignment_caught_up(self, key: TopicPartition) -> bool:
        moving = self._reassignment(key)
        return moving.in_progress and set(moving.target) <= set(self.states[key].isr)

    async def _check_reassignments(self, keys: Iterable[TopicPartition]) -> None:
        """ISR changes: finish the reassignments whose target replicas are all in sync."""
        for key in keys:
            if key in self.states and self._reassignment_caught_up(key):
                await self._complete_reassignment(key)

    async def _complete_reassignment(self, key: TopicPartition) -> None:
        moving = self._reassignment(key)
        target = moving.target
        live = set(self.brokers) - self.shutting_down_brokers()

        def into_target(state: PartitionState) -> tuple[int, list[int]] | None:
            isr = [b for b in state.isr if b in target]
            leader = state.leader
            if leader not in target or leader not in live:
                eligible = [b for b in target if b in live and b in isr]
                if not eligible:
                    return None
                leader = eligible[0]
            return leader, isr

        state = self.states[key]
        if into_target(state) is None:
            logger.warning("%s-%d: no live in-sync replica of %s to lead yet", *key, target)
            return
        await self._move_leader(key, into_target, always=True)
        if self.states[key].leader not in target:
            return  # the state kept changing; the next ISR change comes back here
        await self._write_reassignment(key, Reassignment(tuple(target)))
        self._record_states([key])
        await self._send_leader_and_isr([key])
        if moving.removing:
            await self._delete_replicas([(*key, b) for b in moving.removing])
        await self._forget_zk_reassignments([key])
        await self._send_update_metadata(self._leaderships([key]))
        logger.info("%s-%d: reassignment to %s complete", *key, target)

    async def _delete_replicas(self, replicas: Sequence[tuple[str, int, int]]) -> None:
        """Removed replicas (topic, partition, broker): offline, then StopReplica with
        delete on the live brokers; those on brokers that are down wait
        (ReplicaDeletionIneligible) until they return."""
        forgotten = [
            r for r in replicas if self.machines.replica_state(r) == ReplicaState.NON_EXISTENT
        ]
        self.machines.move_replicas(forgotten, ReplicaState.NEW)
        self.machines.move_replicas(replicas, ReplicaState.OFFLINE)
        await self._start_deletions(replicas)

    async def _start_deletions(self, replicas: Sequence[tuple[str, int, int]]) -> None:
        """StopReplica with delete to each replica's broker when it is live; the channel
        delivers it in order, retrying until the broker answers."""
        live = [r for r in replicas if r[2] in self.brokers]
        dead = [r for r in replicas if r[2] not in self.brokers]
        self.machines.move_replicas(dead, ReplicaState.DELETION_INELIGIBLE)
        self.machines.move_replicas(live, ReplicaState.DELETION_STARTED)
        by_broker: dict[int, list[ReplicaToStop]] = {}
        for topic, partition, broker in live:
            by_broker.setdefault(broker, []).append(ReplicaToStop(topic, partition, True))
        for broker, stops in sorted(by_broker.items()):
            await self.channel.stop_replica(broker, self.epoch, stops)
        self.machines.move_replicas(live, ReplicaState.DELETION_SUCCESSFUL)
        self.machines.move_replicas(live, ReplicaState.NON_EXISTENT)
        for replica in dead:
            logger.info("%s-%d: replica on broker %d is deleted once it is back", *replica)

    async def _retry_deletions(self, started: Collection[int]) -> None:
        """Brokers back: the removed replicas they still hold are deleted now."""
        waiting = [
            r
            for r in self.machines.replicas_in(ReplicaState.DELETION_INELIGIBLE)
            if r[2] in started and r[2] not in self._replicas_of_partition(r[:2])
        ]
        if waiting:
            self.machines.move_replicas(waiting, ReplicaState.OFFLINE)
            await self._start_deletions(waiting)

    def _replicas_of_partition(self, key: TopicPartition) -> list[int]:
        assignment: TopicAssignment | None = self.assignments.get(key[0])
        return list(assignment.partitions.get(key[1], ())) if assignment else []
