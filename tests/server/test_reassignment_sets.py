"""The replica sets of a partition reassignment (Kafka's ReplicaAssignment.reassignTo)
and the checks of a target."""

from __future__ import annotations

import pytest

from tidelog.controller.reassignment import (
    Reassignment,
    ReassignmentError,
    reassign_to,
    validate_target,
)
from tidelog.protocol.errors import ErrorCode


def test_a_move_lists_the_target_first_then_the_originals_it_drops():
    moving = reassign_to(Reassignment((1, 2, 3)), [4, 2, 3])
    assert moving == Reassignment((4, 2, 3, 1), adding=(4,), removing=(1,))
    assert moving.original == [2, 3, 1] and moving.target == [4, 2, 3]
    assert moving.in_progress


def test_a_new_target_during_a_move_keeps_the_original_replicas():
    first = reassign_to(Reassignment((1, 2)), [3, 4])
    second = reassign_to(first, [5, 2])
    assert second == Reassignment((5, 2, 1), adding=(5,), removing=(1,))
    # 3 and 4 were being added and are in neither set: the controller deletes them.


def test_cancelling_is_moving_back_to_the_originals():
    moving = reassign_to(Reassignment((1, 2)), [3, 4])
    back = reassign_to(moving, moving.original)
    assert back == Reassignment((1, 2))
    assert not back.in_progress


def test_a_replication_factor_change_is_a_move():
    assert reassign_to(Reassignment((1,)), [1, 2, 3]) == Reassignment((1, 2, 3), adding=(2, 3))
    assert reassign_to(Reassignment((1, 2, 3)), [2, 3]) == Reassignment((2, 3, 1), removing=(1,))


@pytest.mark.parametrize(
    "target, message",
    [
        ([], "Empty replica list"),
        ([1, 1], "Duplicate replica ids"),
        ([-1, 2], "Invalid broker id"),
        ([1, 9], "brokers that are not alive: \\[9\\]"),
    ],
)
def test_invalid_targets(target, message):
    with pytest.raises(ReassignmentError, match=message) as raised:
        validate_target(target, live={1, 2, 3})
    assert raised.value.code == ErrorCode.INVALID_REPLICA_ASSIGNMENT


def test_a_valid_target():
    validate_target([3, 1], live={1, 2, 3})
