"""Leader election on a change of live brokers (seed 000 控制器, seed 003 Unclean 领导者选举),
on controlled shutdown, of the preferred replica (seed 000 首选首领), and the recovery of a
partition whose last in-sync replica lost its log."""

import pytest

from tidelog.controller.election import (
    NO_LEADER,
    controlled_shutdown_leadership,
    next_leadership,
    preferred_leadership,
    recovery_leader,
    without_lost_replica,
)

REPLICAS = [1, 2, 3]


def elect(leader, isr, live, unclean=False):
    return next_leadership(REPLICAS, leader, isr, set(live), unclean_allowed=unclean)


def test_a_dead_leader_is_replaced_by_the_first_live_replica_of_the_assignment_in_the_isr():
    assert elect(1, [1, 2, 3], [2, 3]) == (2, [2, 3])
    assert elect(1, [3, 1, 2], [2, 3]) == (2, [3, 2])  # assignment order, not ISR order
    assert elect(1, [1, 3], [2, 3]) == (3, [3])  # 2 is alive but out of sync


def test_a_dead_follower_only_leaves_the_isr():
    assert elect(1, [1, 2, 3], [1, 3]) == (1, [1, 3])


def test_nothing_changes_while_everyone_is_alive():
    assert elect(2, [2, 3], [1, 2, 3]) == (2, [2, 3])


@pytest.mark.parametrize("live", [[], [1], [1, 3]])
def test_without_a_live_in_sync_replica_the_partition_is_offline_and_keeps_its_isr(live):
    assert elect(2, [2], live) == (NO_LEADER, [2])


def test_unclean_election_lets_a_live_out_of_sync_replica_lead_alone():
    assert elect(2, [2], [1, 3], unclean=True) == (1, [1])
    assert elect(2, [2], [], unclean=True) == (NO_LEADER, [2])  # nobody to lead


def test_unclean_election_still_prefers_an_in_sync_replica():
    assert elect(1, [1, 3], [2, 3], unclean=True) == (3, [3])


def test_an_offline_partition_is_led_again_by_an_isr_member_that_returns():
    assert elect(NO_LEADER, [2, 3], [1, 3]) == (3, [3])


def shut_down(leader, isr, live, leaving):
    return controlled_shutdown_leadership(REPLICAS, leader, isr, set(live), set(leaving))


def test_controlled_shutdown_hands_leadership_to_the_first_other_live_in_sync_replica():
    assert shut_down(1, [1, 2, 3], [2, 3], [1]) == (2, [2, 3])
    assert shut_down(1, [3, 1, 2], [2, 3], [1]) == (2, [3, 2])  # assignment order
    assert shut_down(1, [1, 3], [2, 3], [1]) == (3, [3])  # 2 is alive but out of sync
    assert shut_down(1, [1, 2, 3], [3], [1, 2]) == (3, [3])  # 2 is shutting down too


def test_controlled_shutdown_of_a_follower_only_removes_it_from_the_isr():
    assert shut_down(2, [1, 2, 3], [2, 3], [1]) == (2, [2, 3])


def test_controlled_shutdown_leaves_a_leader_without_another_in_sync_replica_in_place():
    assert shut_down(1, [1], [2, 3], [1]) is None
    assert shut_down(1, [1, 2], [3], [1]) is None  # 2 is in sync but not live


def test_the_preferred_replica_may_lead_only_when_live_and_in_sync():
    assert preferred_leadership(REPLICAS, [1, 2, 3], {1, 2, 3}) == 1
    assert preferred_leadership(REPLICAS, [2, 3], {1, 2, 3}) is None
    assert preferred_leadership(REPLICAS, [1, 2, 3], {2, 3}) is None


def test_a_broker_that_lost_its_replica_leaves_the_isr_and_the_leadership():
    assert without_lost_replica(2, [2, 3], 3) == (2, [2])
    assert without_lost_replica(3, [2, 3], 3) == (NO_LEADER, [2])
    assert without_lost_replica(NO_LEADER, [3], 3) == (NO_LEADER, [])  # the ISR empties


def test_recovery_picks_the_latest_epoch_then_the_longest_log():
    ends = {1: (-1, -1), 2: (4, 900), 3: (5, 100)}
    assert recovery_leader(REPLICAS, ends) == 3  # a longer log of an older epoch may diverge
    assert recovery_leader(REPLICAS, {**ends, 3: (4, 100)}) == 2
    assert recovery_leader(REPLICAS, {**ends, 3: (4, 900)}) == 2  # equals: assignment order


def test_recovery_waits_until_every_replica_answered():
    assert recovery_leader(REPLICAS, {1: (-1, -1), 2: (4, 900)}) is None
