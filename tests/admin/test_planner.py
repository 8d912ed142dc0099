"""The reassignment planner (``tidelog.admin.planner``): property tests over random
clusters and intents (every plan valid, rack-diverse where racks allow, balanced within
one, and close to the lower bound of moves), and examples: the seed's racks, the issue's
6 → 8 brokers, refusals."""

from __future__ import annotations

import itertools
import math
from collections import Counter

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.admin.planner import (
    ClusterState,
    Plan,
    PlanError,
    plan_add_brokers,
    plan_log_dir_drain,
    plan_rebalance_leaders,
    plan_rebalance_replicas,
    plan_remove_brokers,
    plan_replace_replicas,
    plan_replication_factor,
)
from tidelog.controller.assignment import assign_replicas

# Replica moves a plan may make beyond max(departures, arrivals): a new replica cannot
# go to a broker that holds the partition already, so an arrival may land one above its
# share and need one more move.
SLACK_PER_BROKER = 1


@st.composite
def clusters(draw, *, racked: bool | None = None):
    """A cluster state: 1–8 brokers (racks of equal size or none), 1–3 topics of 1–12
    partitions, each replica set drawn at random from the brokers (not always
    rack-diverse), sizes from 0 to 1 GiB."""
    broker_count = draw(st.integers(1, 8))
    brokers = list(range(1, broker_count + 1))
    if racked is None:
        racked = draw(st.booleans())
    rack_count = draw(st.sampled_from([r for r in (2, 3) if broker_count % r == 0] or [1]))
    racks = {b: f"rack-{b % rack_count}" if racked else None for b in brokers}
    assignment, sizes = {}, {}
    for topic in range(draw(st.integers(1, 3))):
        rf = draw(st.integers(1, min(3, broker_count)))
        for partition in range(draw(st.integers(1, 12))):
            tp = (f"t{topic}", partition)
            assignment[tp] = draw(st.permutations(brokers))[:rf]
            sizes[tp] = draw(st.integers(0, 1 << 30))
    return ClusterState(assignment, racks, sizes)


def spread(counts: dict[int, int], brokers) -> int:
    values = [counts.get(b, 0) for b in brokers]
    return max(values) - min(values)


def racks_to_span(racks, brokers) -> int:
    """The racks a partition should span at most: those of ``brokers``, or 0 when some
    broker has no rack (the planner then ignores racks)."""
    return len({racks[b] for b in brokers}) if all(racks[b] for b in brokers) else 0


def assert_valid(plan: Plan, brokers, racks, replication_factors=None) -> None:
    """RF distinct brokers of ``brokers`` per partition, racks spread when racks allow
    (of the partitions in ``replication_factors`` when given: the others do not move)."""
    spanned = racks_to_span(racks, brokers)
    assert plan.target.keys() == plan.current.keys()
    for tp, replicas in plan.target.items():
        wanted = (replication_factors or {}).get(tp, len(plan.current[tp]))
        assert len(replicas) == wanted, (tp, replicas)
        assert len(set(replicas)) == len(replicas), (tp, replicas)
        assert set(replicas) <= set(brokers), (tp, replicas, brokers)
        if spanned and (replication_factors is None or tp in replication_factors):
            assert len({racks[b] for b in replicas}) == min(len(replicas), spanned), (
                tp,
                replicas,
            )


def assert_balanced(plan: Plan, brokers) -> None:
    """Replicas within one; preferred leaders within one where every partition has the
    same replication factor (with mixed factors a group of brokers can share too few
    partitions to lead their share; the planner then evens leaderships as far as its
    moves allow, see the planner's docstring)."""
    assert spread(plan.replica_counts(), brokers) <= 1, plan.replica_counts()
    if len({len(replicas) for replicas in plan.target.values()}) == 1:
        assert spread(plan.leader_counts(), brokers) <= 1, plan.leader_counts()


def racks_of_equal_sizes(racks, brokers) -> bool:
    """Whether ``brokers`` fill the racks they are in evenly (brokers without racks count
    as one rack)."""
    return len(set(Counter(racks[b] for b in brokers).values())) == 1


def fewest_moves_to_its_counts(plan: Plan, brokers, racks) -> int:
    """The fewest replica moves that any valid plan ending with ``plan``'s replicas per
    broker needs: per rack, every replica its brokers gain arrives by a move, and so
    does a replica of each partition that must span every rack (replication factor at
    least the racks) and has none on the rack's staying brokers (racks as in
    ``assert_valid``; brokers without racks count as one rack)."""
    spanned = racks_to_span(racks, brokers)
    before = Counter(b for replicas in plan.current.values() for b in replicas)
    after = plan.replica_counts()
    fewest = 0
    for rack in {racks[b] for b in brokers}:
        on_rack = {b for b in brokers if racks[b] == rack}
        gained = sum(max(0, after.get(b, 0) - before[b]) for b in on_rack)
        lacking = sum(
            1
            for replicas in plan.current.values()
            if spanned and len(replicas) >= spanned and not on_rack & set(replicas)
        )
        fewest += max(gained, lacking)
    return fewest


def assert_close_to_the_bound(plan: Plan, brokers, racks) -> None:
    """At most the slack above the bound and the repairs. A balanced result cannot beat
    the plan's lower bound. Racks of unequal sizes allow no balanced result: the plan
    may move less, or, where every partition needs a replica on a small rack, that
    rack's brokers must hold more than their share and evening the others costs moves
    the balanced bound does not count; there the bound is the fewest moves that reach
    the plan's own counts when that is more (a partition that lacks a rack it must span
    counts there and may count again as a rack repair). Leaderships need repairs only where
    replication factors are mixed."""
    bound = plan.lower_bound
    if not racks_of_equal_sizes(racks, brokers):
        bound = max(bound, fewest_moves_to_its_counts(plan, brokers, racks))
    repairs = plan.rack_repairs + plan.leader_repairs
    assert plan.replicas_moved <= bound + repairs + SLACK_PER_BROKER * len(brokers), (
        plan.replicas_moved,
        plan.lower_bound,
        bound,
        plan.rack_repairs,
        plan.leader_repairs,
    )
    if len({len(replicas) for replicas in plan.current.values()}) == 1:
        assert plan.leader_repairs == 0


@settings(max_examples=300, deadline=None)
@given(clusters(), st.integers(1, 3), st.data())
def test_adding_brokers(state, added, data):
    new = range(max(state.brokers) + 1, max(state.brokers) + 1 + added)
    racked = next(iter(state.brokers.values())) is not None
    rack_count = len(set(state.brokers.values()))
    racks = {**state.brokers, **{b: f"rack-{b % rack_count}" if racked else None for b in new}}
    state = ClusterState(state.assignment, racks, state.sizes)
    # The brokers in use and the new ones: a live broker without replicas stays idle.
    brokers = sorted({b for r in state.assignment.values() for b in r} | set(new))
    plan = plan_add_brokers(state, new)
    assert_valid(plan, brokers, racks)
    if racks_of_equal_sizes(racks, brokers):
        assert_balanced(plan, brokers)
        assert plan.lower_bound <= plan.replicas_moved
    assert_close_to_the_bound(plan, brokers, racks)


@settings(max_examples=300, deadline=None)
@given(clusters(), st.data())
def test_removing_brokers(state, data):
    largest_rf = max(len(r) for r in state.assignment.values())
    removable = len(state.brokers) - largest_rf
    removed = data.draw(st.sets(st.sampled_from(sorted(state.brokers)), max_size=removable))
    staying = [b for b in state.brokers if b not in removed]
    plan = plan_remove_brokers(state, removed)
    assert_valid(plan, staying, state.brokers)
    assert not any(set(r) & removed for r in plan.target.values())
    if not next(iter(state.brokers.values())):
        assert_balanced(plan, staying)
    assert_close_to_the_bound(plan, staying, state.brokers)


@settings(max_examples=300, deadline=None)
@given(clusters(racked=False))
def test_rebalancing_replicas_without_racks_is_balanced_and_near_the_bound(state):
    plan = plan_rebalance_replicas(state)
    assert_valid(plan, list(state.brokers), state.brokers)
    assert_balanced(plan, list(state.brokers))
    assert_close_to_the_bound(plan, list(state.brokers), state.brokers)
    assert plan.rack_repairs == 0


@settings(max_examples=300, deadline=None)
@given(clusters(racked=True))
def test_rebalancing_replicas_with_racks_spreads_every_partition(state):
    plan = plan_rebalance_replicas(state)
    assert_valid(plan, list(state.brokers), state.brokers)
    assert_balanced(plan, list(state.brokers))
    assert_close_to_the_bound(plan, list(state.brokers), state.brokers)


def best_leader_spread(assignment, brokers) -> int:
    """The smallest preferred-leader spread any choice of leaders reaches (brute force)."""
    partitions = list(assignment.values())
    best = math.inf
    for leaders in itertools.product(*partitions):
        counts = {b: 0 for b in brokers}
        for leader in leaders:
            counts[leader] += 1
        best = min(best, max(counts.values()) - min(counts.values()))
    return best


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_rebalancing_leaders_reorders_only_and_reaches_the_best_spread(state):
    small = dict(itertools.islice(sorted(state.assignment.items()), 7))
    state = ClusterState(small, state.brokers, state.sizes)
    plan = plan_rebalance_leaders(state)
    assert plan.replicas_moved == 0
    assert all(set(plan.target[tp]) == set(r) for tp, r in state.assignment.items())
    brokers = list(state.brokers)
    assert spread(plan.leader_counts(), brokers) == best_leader_spread(small, brokers)


@settings(max_examples=300, deadline=None)
@given(clusters(), st.data())
def test_changing_a_replication_factor_touches_that_topic_only(state, data):
    rf = data.draw(st.integers(1, len(state.brokers)))
    plan = plan_replication_factor(state, "t0", rf)
    factors = {tp: rf for tp in state.assignment if tp[0] == "t0"}
    assert_valid(plan, list(state.brokers), state.brokers, factors)
    for tp, replicas in state.assignment.items():
        if tp[0] != "t0":
            assert plan.target[tp] == tuple(replicas)
        elif plan.rack_repairs:
            continue
        elif rf >= len(replicas):
            assert plan.target[tp][: len(replicas)] == tuple(replicas)  # appended only
        else:
            assert set(plan.target[tp]) < set(replicas)
            assert plan.target[tp][0] == replicas[0]  # the preferred leader stays
    assert plan.lower_bound <= plan.replicas_moved <= plan.lower_bound + plan.rack_repairs


@settings(max_examples=300, deadline=None)
@given(clusters(), st.data())
def test_replacing_lost_replicas_moves_exactly_those(state, data):
    lost = {}
    for tp, replicas in sorted(state.assignment.items()):
        spare = len(state.brokers) - len(replicas)
        gone = data.draw(st.sets(st.sampled_from(list(replicas)), max_size=min(spare, 2)))
        if gone:
            lost[tp] = gone
    plan = plan_replace_replicas(state, lost)
    assert_valid(plan, list(state.brokers), {b: None for b in state.brokers})
    for tp, replicas in state.assignment.items():
        gone = lost.get(tp, set())
        target = plan.target[tp]
        assert not gone & set(target), (tp, gone, target)
        # every other replica keeps its place; a replacement takes the lost one's
        assert [b for b in target if b in replicas] == [b for b in replicas if b not in gone]
        assert [i for i, b in enumerate(replicas) if b in gone] == [
            i for i, b in enumerate(target) if b not in replicas
        ]
    assert plan.replicas_moved == plan.lower_bound == sum(map(len, lost.values()))


def test_a_lost_replica_is_replaced_on_the_rack_it_leaves_short():
    racks = {1: "a", 2: "b", 3: "c", 4: "a", 5: "b", 6: "c"}
    assignment = {("t", 0): [1, 2, 3], ("t", 1): [4, 5, 6], ("t", 2): [5, 2, 1]}
    plan = plan_replace_replicas(ClusterState(assignment, racks, {}), {("t", 0): {2}})
    # broker 5 is the most loaded of 4, 5 and 6, but the only other broker of rack b
    assert plan.target == {("t", 0): (1, 5, 3), ("t", 1): (4, 5, 6), ("t", 2): (5, 2, 1)}


@settings(max_examples=300, deadline=None)
@given(clusters())
def test_plans_are_deterministic(state):
    assert plan_rebalance_replicas(state).target == plan_rebalance_replicas(state).target


def test_the_issue_example_moves_the_lower_bound_and_no_more():
    """6 → 8 brokers, 1,000 partitions at RF 3: each new broker takes its 375 replicas,
    750 moves in all, and every broker leads 125 partitions."""
    created = assign_replicas(1000, 3, list(range(1, 7)), start_index=0)
    state = ClusterState({("t", p): r for p, r in created.items()}, dict.fromkeys(range(1, 9)))
    plan = plan_add_brokers(state, [7, 8])
    assert plan.replicas_moved == plan.lower_bound == 750
    assert set(plan.replica_counts().values()) == {375}
    assert set(plan.leader_counts().values()) == {125}


def test_the_seeds_racks_every_partition_survives_a_rack_going_down():
    """Seed 000 (机架感知): brokers 0, 1, 2 in one rack and 3, 4, 5 in another. A topic
    whose replicas all sit in the first rack gets a replica in each, so either rack
    can go down; removing broker 3 keeps it so."""
    racks = {0: "a", 1: "a", 2: "a", 3: "b", 4: "b", 5: "b"}
    narrow = {("t", p): [p % 3, (p + 1) % 3] for p in range(6)}
    plan = plan_rebalance_replicas(ClusterState(narrow, racks))
    for replicas in plan.target.values():
        assert {racks[b] for b in replicas} == {"a", "b"}
    assert plan.rack_repairs == 6
    assert_balanced(plan, list(racks))
    after = plan_remove_brokers(ClusterState(plan.target, racks), [3])
    for replicas in after.target.values():
        assert {racks[b] for b in replicas} == {"a", "b"}
        assert 3 not in replicas


def test_the_smallest_partitions_move_first():
    """Broker 3 joins two brokers holding a big and a small partition: the small one
    moves."""
    state = ClusterState(
        {("t", 0): [1, 2], ("t", 1): [2, 1]},
        dict.fromkeys([1, 2, 3]),
        {("t", 0): 10 << 30, ("t", 1): 1 << 20},
    )
    plan = plan_add_brokers(state, [3])
    assert plan.moves.keys() == {("t", 1)}
    assert plan.bytes_moved == 1 << 20


def test_leaderships_pinned_by_single_replica_partitions_are_evened_and_counted():
    """Found by ``test_removing_brokers``: broker 1 leaves, holding the only replica of 16
    partitions and a rack-bound replica of 10 more (RF 3 on brokers 1, 2, 3). Balancing
    replicas alone leaves 8 leaderships each on brokers 5 and 6; the plan trades
    single-replica partitions for replicas of the others to even them, and counts those
    moves as leader repairs."""
    racks = {1: "rack-1", 2: "rack-2", 3: "rack-0", 4: "rack-1", 5: "rack-2", 6: "rack-0"}
    assignment = {("t0", p): [1, 2, 3] for p in range(10)}
    assignment |= {("t1", p): [1] for p in range(16)}
    plan = plan_remove_brokers(ClusterState(assignment, racks), {1})
    staying = [2, 3, 4, 5, 6]
    assert_valid(plan, staying, racks)
    assert spread(plan.replica_counts(), staying) <= 1
    assert spread(plan.leader_counts(), staying) <= 1, plan.leader_counts()
    assert plan.leader_repairs > 0
    assert_close_to_the_bound(plan, staying, racks)


def test_a_rack_left_with_one_broker_takes_every_partition_and_the_rest_are_evened():
    """Found by ``test_removing_brokers``: broker 2, the only other broker of rack-0,
    leaves 15 partitions of RF 2 that must each keep a replica on rack-0, now broker 4
    alone. The plan puts all 15 there, moves the single-replica partition off broker 4
    and evens brokers 1 and 3 of rack-1: 23 moves, the fewest that reach those counts,
    where a balanced result is out of reach and its bound (19) does not hold."""
    racks = {1: "rack-1", 2: "rack-0", 3: "rack-1", 4: "rack-0"}
    assignment = {("t0", p): [1, 2] for p in range(8)} | {("t1", p): [1, 2] for p in range(7)}
    assignment[("t2", 0)] = [4]
    plan = plan_remove_brokers(ClusterState(assignment, racks), {2})
    staying = [1, 3, 4]
    assert_valid(plan, staying, racks)
    assert plan.replica_counts() == {1: 8, 3: 8, 4: 15}
    assert plan.target[("t2", 0)] == (3,)
    assert plan.replicas_moved == fewest_moves_to_its_counts(plan, staying, racks) == 23
    assert plan.lower_bound == 19
    assert_close_to_the_bound(plan, staying, racks)


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        (
            lambda s: plan_remove_brokers(s, [2, 3]),
            "only 1 brokers would be left after removing 2,3, fewer than the replication "
            "factor 2 of t",
        ),
        (lambda s: plan_remove_brokers(s, [9]), "unknown brokers: 9"),
        (lambda s: plan_add_brokers(s, [4]), "added brokers are not live: 4"),
        (
            lambda s: plan_replication_factor(s, "t", 4),
            "replication factor 4 is larger than the 3 live brokers",
        ),
        (lambda s: plan_replication_factor(s, "u", 2), "topic u has no partitions"),
    ],
)
def test_impossible_intents_are_refused_with_one_line(plan, message):
    state = ClusterState({("t", 0): [1, 2], ("t", 1): [2, 3]}, dict.fromkeys([1, 2, 3]))
    with pytest.raises(PlanError, match=message):
        plan(state)


def test_a_log_dir_drain_goes_where_the_broker_would_place_partitions():
    """The largest replicas go first, each to the dir with the fewest partitions, ties
    to the most free bytes."""
    by_dir = {
        "/d0": [("t", 0), ("t", 1), ("t", 2)],
        "/d1": [("t", 3)],
        "/d2": [("t", 4)],
    }
    sizes = {("t", 0): 300, ("t", 1): 100, ("t", 2): 200}
    moves = plan_log_dir_drain(by_dir, {"/d0"}, {"/d1": 1000, "/d2": 5000}, sizes)
    assert [(m.topic_partition, m.target) for m in moves] == [
        (("t", 0), "/d2"),
        (("t", 2), "/d1"),
        (("t", 1), "/d2"),
    ]
    with pytest.raises(PlanError, match="nowhere to move"):
        plan_log_dir_drain(by_dir, {"/d0", "/d1", "/d2"}, {}, sizes)
