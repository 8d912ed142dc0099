"""The controller's partition and replica state machines: every pair of states against
Kafka's transition table, and the record they keep."""

from __future__ import annotations

import itertools

import pytest

from tidelog.controller.state_machines import (
    IllegalStateTransition,
    PartitionState,
    ReplicaState,
    StateMachines,
)

P = PartitionState
R = ReplicaState

# Kafka's tables, written out pair by pair: (from, to) that are allowed.
PARTITION_ALLOWED = {
    (P.NON_EXISTENT, P.NEW),
    *((s, P.ONLINE) for s in (P.NEW, P.ONLINE, P.OFFLINE)),
    *((s, P.OFFLINE) for s in (P.NEW, P.ONLINE, P.OFFLINE)),
    (P.OFFLINE, P.NON_EXISTENT),
}
REPLICA_ALLOWED = {
    (R.NON_EXISTENT, R.NEW),
    *((s, R.ONLINE) for s in (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE)),
    *((s, R.OFFLINE) for s in (R.NEW, R.ONLINE, R.OFFLINE, R.DELETION_INELIGIBLE)),
    (R.OFFLINE, R.DELETION_STARTED),
    (R.DELETION_STARTED, R.DELETION_SUCCESSFUL),
    (R.OFFLINE, R.DELETION_INELIGIBLE),
    (R.DELETION_STARTED, R.DELETION_INELIGIBLE),
    (R.DELETION_SUCCESSFUL, R.NON_EXISTENT),
}

# A path from NonExistent to each state, through allowed moves only.
PARTITION_PATHS = {
    P.NON_EXISTENT: [],
    P.NEW: [P.NEW],
    P.ONLINE: [P.NEW, P.ONLINE],
    P.OFFLINE: [P.NEW, P.OFFLINE],
}
REPLICA_PATHS = {
    R.NON_EXISTENT: [],
    R.NEW: [R.NEW],
    R.ONLINE: [R.NEW, R.ONLINE],
    R.OFFLINE: [R.NEW, R.OFFLINE],
    R.DELETION_STARTED: [R.NEW, R.OFFLINE, R.DELETION_STARTED],
    R.DELETION_SUCCESSFUL: [R.NEW, R.OFFLINE, R.DELETION_STARTED, R.DELETION_SUCCESSFUL],
    R.DELETION_INELIGIBLE: [R.NEW, R.OFFLINE, R.DELETION_INELIGIBLE],
}

KEY = ("t", 0)
REPLICA = ("t", 0, 1)


@pytest.mark.parametrize("start, target", list(itertools.product(P, P)))
def test_partition_transitions_follow_the_table(start, target):
    machines = StateMachines()
    for step in PARTITION_PATHS[start]:
        machines.move_partitions([KEY], step)
    assert machines.partition_state(KEY) == start
    if (start, target) in PARTITION_ALLOWED:
        machines.move_partitions([KEY], target)
        assert machines.partition_state(KEY) == target
    else:
        with pytest.raises(IllegalStateTransition, match=target.value):
            machines.move_partitions([KEY], target)
        assert machines.partition_state(KEY) == start


@pytest.mark.parametrize("start, target", list(itertools.product(R, R)))
def test_replica_transitions_follow_the_table(start, target):
    machines = StateMachines()
    for step in REPLICA_PATHS[start]:
        machines.move_replicas([REPLICA], step)
    assert machines.replica_state(REPLICA) == start
    if (start, target) in REPLICA_ALLOWED:
        machines.move_replicas([REPLICA], target)
        assert machines.replica_state(REPLICA) == target
    else:
        with pytest.raises(IllegalStateTransition, match=target.value):
            machines.move_replicas([REPLICA], target)
        assert machines.replica_state(REPLICA) == start


def test_a_refused_move_changes_none_of_the_batch():
    machines = StateMachines()
    machines.move_replicas([("t", 0, 1)], R.NEW)
    with pytest.raises(IllegalStateTransition):
        machines.move_replicas([("t", 0, 1), ("t", 0, 2)], R.ONLINE)  # ("t",0,2) is unknown
    assert machines.replica_state(("t", 0, 1)) == R.NEW
    assert machines.replica_state(("t", 0, 2)) == R.NON_EXISTENT


def test_deletion_forgets_and_listing_by_state():
    machines = StateMachines()
    replicas = [("t", 0, 1), ("t", 0, 2)]
    for step in (R.NEW, R.OFFLINE):
        machines.move_replicas(replicas, step)
    machines.move_replicas(replicas[:1], R.DELETION_STARTED)
    machines.move_replicas(replicas[1:], R.DELETION_INELIGIBLE)
    assert machines.replicas_in(R.DELETION_INELIGIBLE) == [("t", 0, 2)]
    machines.move_replicas(replicas[:1], R.DELETION_SUCCESSFUL)
    machines.move_replicas(replicas[:1], R.NON_EXISTENT)
    assert machines.replicas_in(R.NON_EXISTENT) == []
    machines.move_partitions([KEY], P.NEW)
    machines.move_partitions([KEY], P.OFFLINE)
    assert machines.partitions_in(P.OFFLINE) == [KEY]
    machines.clear()
    assert machines.replica_state(("t", 0, 2)) == R.NON_EXISTENT
    assert machines.partition_state(KEY) == P.NON_EXISTENT
