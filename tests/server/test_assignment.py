import random
from collections import Counter

import pytest

from tidelog.controller.assignment import AssignmentError, assign_replicas, rack_alternated


def test_seed_example_round_robin_leaders_and_shifted_followers():
    """Seed 000: 6 brokers, start at broker 4: leaders 4, 5, 0, ...; partition 0's
    followers on 5 and 0, partition 1's on 0 and 1."""
    assignment = assign_replicas(10, 3, range(6), start_index=4, replica_shift=0)
    assert [replicas[0] for replicas in assignment.values()] == [4, 5, 0, 1, 2, 3, 4, 5, 0, 1]
    assert assignment[0] == [4, 5, 0] and assignment[1] == [5, 0, 1]
    assert all(len(set(replicas)) == 3 for replicas in assignment.values())
    whole_rounds = assign_replicas(12, 3, range(6), start_index=4, replica_shift=0)
    counts = Counter(b for replicas in whole_rounds.values() for b in replicas)
    assert counts == Counter({b: 6 for b in range(6)})  # replicas spread evenly


def test_followers_shift_after_wrapping_around():
    assignment = assign_replicas(6, 2, range(3), start_index=0, replica_shift=0)
    assert [assignment[p] for p in range(6)] == [[0, 1], [1, 2], [2, 0], [0, 2], [1, 0], [2, 1]]


def test_rack_alternated_order_is_the_seeds():
    racks = {0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "b"}
    assert rack_alternated(racks) == [0, 3, 1, 4, 2, 5]


def test_rack_aware_assignment_spreads_each_partition_over_racks():
    racks = {0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "b"}
    for seed in range(20):
        assignment = assign_replicas(12, 3, range(6), racks, rng=random.Random(seed))
        for replicas in assignment.values():
            assert len(set(replicas)) == 3
            assert {racks[b] for b in replicas} == {"a", "b"}
        leaders = Counter(r[0] for r in assignment.values())
        assert set(leaders.values()) == {2}


def test_invalid_requests_are_refused():
    with pytest.raises(AssignmentError, match="larger than available brokers"):
        assign_replicas(1, 4, [1, 2, 3])
    with pytest.raises(AssignmentError, match="rack information"):
        assign_replicas(1, 2, [1, 2], {1: "a"})
    assert AssignmentError("x").error_code == 38
