"""The controller's partition and replica state machines (seed 003 控制器: 分区状态机 and
副本状态机): every state a partition and a replica can be in, the transitions between
them as one table each, and the controller's record of where each one is.

This module owns every transition: the controller asks it to move partitions and
replicas to a target state, and it refuses (``IllegalStateTransition``) a move the table
does not allow, so a wrong order of actions shows at once instead of as a replica that
silently stays. The actions that go with a transition (requests to brokers, writes to
ZooKeeper) are the controller's; this module only decides and records.

Partitions::

    NonExistentPartition → NewPartition        created in ZooKeeper, no leader yet
    New/Online/Offline   → OnlinePartition     a live leader was elected
    New/Online/Offline   → OfflinePartition    its leader died, none eligible
    OfflinePartition     → NonExistentPartition deleted

Replicas (Kafka's table)::

    NonExistentReplica                      → NewReplica       added (new topic, reassignment)
    New/Online/Offline/DeletionIneligible   → OnlineReplica    part of the assignment, live
    New/Online/Offline/DeletionIneligible   → OfflineReplica   its broker or dir failed; removed
    OfflineReplica                          → ReplicaDeletionStarted   StopReplica(delete) sent
    ReplicaDeletionStarted                  → ReplicaDeletionSuccessful the broker deleted it
    OfflineReplica/ReplicaDeletionStarted   → ReplicaDeletionIneligible its broker is down
    ReplicaDeletionSuccessful               → NonExistentReplica        forgotten
"""

from __future__ import annotations

import enum
from collections.abc import Iterable

__all__ = [
    "PARTITION_TRANSITIONS",
    "REPLICA_TRANSITIONS",
    "IllegalStateTransition",
    "PartitionState",
    "ReplicaState",
    "StateMachines",
]

TopicPartition = tuple[str, int]
Replica = tuple[str, int, int]  # topic, partition, broker


class PartitionState(enum.Enum):
    NON_EXISTENT = "NonExistentPartition"
    NEW = "NewPartition"
    ONLINE = "OnlinePartition"
    OFFLINE = "OfflinePartition"


class ReplicaState(enum.Enum):
    NON_EXISTENT = "NonExistentReplica"
    NEW = "NewReplica"
    ONLINE = "OnlineReplica"
    OFFLINE = "OfflineReplica"
    DELETION_STARTED = "ReplicaDeletionStarted"
    DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful"
    DELETION_INELIGIBLE = "ReplicaDeletionIneligible"


_P = PartitionState
_R = ReplicaState

# Target state → the states it may be entered from.
PARTITION_TRANSITIONS: dict[PartitionState, frozenset[PartitionState]] = {
    _P.NEW: frozenset({_P.NON_EXISTENT}),
    _P.ONLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.OFFLINE: frozenset({_P.NEW, _P.ONLINE, _P.OFFLINE}),
    _P.NON_EXISTENT: frozenset({_P.OFFLINE}),
}

REPLICA_TRANSITIONS: dict[ReplicaState, frozenset[ReplicaState]] = {
    _R.NEW: frozenset({_R.NON_EXISTENT}),
    _R.ONLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.OFFLINE: frozenset({_R.NEW, _R.ONLINE, _R.OFFLINE, _R.DELETION_INELIGIBLE}),
    _R.DELETION_STARTED: frozenset({_R.OFFLINE}),
    _R.DELETION_SUCCESSFUL: frozenset({_R.DELETION_STARTED}),
    _R.DELETION_INELIGIBLE: frozenset({_R.OFFLINE, _R.DELETION_STARTED}),
    _R.NON_EXISTENT: frozenset({_R.DELETION_SUCCESSFUL}),
}


class IllegalStateTransition(RuntimeError):
    """The controller asked for a move its table does not allow."""


class StateMachines:
    """Where each partition and replica is. Unknown ones are NonExistent; entering
    NonExistent forgets them."""

    def __init__(self) -> None:
        self._partitions: dict[TopicPartition, PartitionState] = {}
        self._replicas: dict[Replica, ReplicaState] = {}

    def clear(self) -> None:
        """A controller that resigns forgets everything; the next one rebuilds it."""
        self._partitions.clear()
        self._replicas.clear()

    def partition_state(self, key: TopicPartition) -> PartitionState:
        return self._partitions.get(key, _P.NON_EXISTENT)

    def replica_state(self, replica: Replica) -> ReplicaState:
        return self._replicas.get(replica, _R.NON_EXISTENT)

    def partitions_in(self, state: PartitionState) -> list[TopicPartition]:
        return sorted(k for k, s in self._partitions.items() if s == state)

    def replicas_in(self, state: ReplicaState) -> list[Replica]:
        return sorted(r for r, s in self._replicas.items() if s == state)

    def move_partitions(self, keys: Iterable[TopicPartition], target: PartitionState) -> None:
        keys = list(keys)
        for key in keys:
            _check("partition", key, self.partition_state(key), target, PARTITION_TRANSITIONS)
        for key in keys:
            if target == _P.NON_EXISTENT:
                self._partitions.pop(key, None)
            else:
                self._partitions[key] = target

    def move_replicas(self, replicas: Iterable[Replica], target: ReplicaState) -> None:
        replicas = list(replicas)
        for replica in replicas:
            _check("replica", replica, self.replica_state(replica), target, REPLICA_TRANSITIONS)
        for replica in replicas:
            if target == _R.NON_EXISTENT:
                self._replicas.pop(replica, None)
            else:
                self._replicas[replica] = target


def _check(kind: str, what: tuple, current, target, table) -> None:
    if current not in table[target]:
        raise IllegalStateTransition(
            f"{kind} {what}: {current.value} cannot move to {target.value}"
        )
