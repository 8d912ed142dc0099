"""The planner's intents: each turns a cluster state into a plan (see the package's
docstring for what every plan guarantees)."""

from __future__ import annotations

import math
from collections.abc import Collection, Iterable, Mapping, Sequence

from tidelog.admin.planner._balance import balance_leaders, balance_replicas, unpin_leaderships
from tidelog.admin.planner._layout import (
    Layout,
    least_loaded,
    most_loaded_removable,
    widen_racks,
)
from tidelog.admin.planner._model import (
    ClusterState,
    LogDirMove,
    Plan,
    PlanError,
    TopicPartition,
    replicas_moved,
)


def plan_add_brokers(state: ClusterState, brokers: Iterable[int]) -> Plan:
    """Spread the replicas and preferred leaderships over the brokers in use plus the
    new ``brokers`` (which must be live)."""
    added = set(brokers)
    _require_live(state, added, "added")
    in_use = {b for replicas in state.assignment.values() for b in replicas}
    return _balanced(state, (in_use & set(state.brokers)) | added)


def plan_remove_brokers(state: ClusterState, brokers: Iterable[int]) -> Plan:
    """Move every replica off ``brokers`` and balance the rest over the others."""
    removed = set(brokers)
    unknown = removed - set(state.brokers) - _brokers_in(state)
    if unknown:
        raise PlanError(f"unknown brokers: {_ids(unknown)}")
    return _balanced(state, set(state.brokers) - removed, removed=removed)


def plan_rebalance_replicas(state: ClusterState) -> Plan:
    """Balance replicas and preferred leaderships over every live broker."""
    return _balanced(state, set(state.brokers))


def plan_rebalance_leaders(state: ClusterState) -> Plan:
    """Balance preferred leaderships only: replicas are reordered, none moves."""
    target = {tp: list(r) for tp, r in state.assignment.items()}
    balance_leaders(target, set(state.brokers))
    return _plan(state, target, lower_bound=0)


def plan_replication_factor(state: ClusterState, topic: str, replication_factor: int) -> Plan:
    """Give every partition of ``topic`` ``replication_factor`` replicas: new ones on the
    least loaded brokers that widen its racks, surplus ones off the most loaded brokers
    that keep them, then the topic's partitions that still span too few racks are
    widened; the preferred leader stays where it can. Other topics do not move."""
    partitions = sorted(tp for tp in state.assignment if tp[0] == topic)
    if not partitions:
        raise PlanError(f"topic {topic} has no partitions in the assignment")
    if replication_factor < 1:
        raise PlanError(f"the replication factor must be at least 1, not {replication_factor}")
    brokers = set(state.brokers)
    if replication_factor > len(brokers):
        raise PlanError(
            f"replication factor {replication_factor} is larger than the {len(brokers)} "
            "live brokers"
        )
    target = {tp: list(r) for tp, r in state.assignment.items()}
    layout = Layout(target, brokers, state.brokers)
    arrivals = 0
    for tp in partitions:
        replicas = target[tp]
        for gone in [b for b in replicas if b not in brokers]:
            layout.replace(tp, gone, least_loaded(layout, tp, gone))
            arrivals += 1
        while len(replicas) < replication_factor:
            layout.add(tp, least_loaded(layout, tp, None))
            arrivals += 1
        while len(replicas) > replication_factor:
            layout.remove(tp, most_loaded_removable(layout, tp, replication_factor))
    rack_repairs = widen_racks(layout, partitions)
    return _plan(state, target, lower_bound=arrivals, rack_repairs=rack_repairs)


def plan_replace_replicas(
    state: ClusterState, lost: Mapping[TopicPartition, Collection[int]]
) -> Plan:
    """Replace the replicas ``lost`` (partition → brokers whose replica of it is gone,
    such as one on a failed log dir) with replicas on other live brokers: of a rack the
    partition lacks first, then the least loaded; a replacement takes the lost
    replica's place in the order. No other replica moves."""
    target = {tp: list(r) for tp, r in state.assignment.items()}
    layout = Layout(target, set(state.brokers), state.brokers)
    arrivals = 0
    for tp in sorted(lost):
        gone = [b for b in target.get(tp, ()) if b in lost[tp]]
        for broker in gone:
            layout.replace(tp, broker, least_loaded(layout, tp, broker, excluded=gone))
            arrivals += 1
    return _plan(state, target, lower_bound=arrivals)


def plan_log_dir_drain(
    partitions_by_dir: Mapping[str, Collection[TopicPartition]],
    draining: Collection[str],
    free_bytes: Mapping[str, int],
    sizes: Mapping[TopicPartition, int],
) -> list[LogDirMove]:
    """The moves that empty the ``draining`` dirs of one broker: each replica, largest
    first, goes where the broker itself would place a new partition (seed 000: the dir
    with the fewest partitions, ties to the most free bytes), counting the replicas
    and bytes planned so far."""
    staying = sorted(d for d in partitions_by_dir if d not in draining)
    if not staying:
        raise PlanError("every log dir would be draining: there is nowhere to move to")
    counts = {d: len(partitions_by_dir[d]) for d in staying}
    free = {d: free_bytes.get(d, 0) for d in staying}
    leaving = sorted(
        ((tp, d) for d in draining for tp in partitions_by_dir.get(d, ())),
        key=lambda item: (-sizes.get(item[0], 0), item[0]),
    )
    moves = []
    for tp, source in leaving:
        target = min(staying, key=lambda d: (counts[d], -free[d], d))
        counts[target] += 1
        free[target] -= sizes.get(tp, 0)
        moves.append(LogDirMove(tp, source, target))
    return moves


def _balanced(state: ClusterState, brokers: set[int], removed: set[int] = frozenset()) -> Plan:
    if not brokers:
        raise PlanError("no broker would be left to hold the replicas")
    _require_feasible(state, brokers, removed)
    target = {tp: list(r) for tp, r in state.assignment.items()}
    layout = Layout(target, brokers, state.brokers)
    for tp in sorted(target):
        for gone in [b for b in target[tp] if b not in brokers]:
            layout.replace(tp, gone, least_loaded(layout, tp, gone))
    rack_repairs = widen_racks(layout)
    balance_replicas(layout, state.sizes)
    balance_leaders(target, brokers)
    before_unpinning = replicas_moved(state.assignment, target)
    unpin_leaderships(layout, state.sizes)
    return _plan(
        state,
        target,
        lower_bound=_lower_bound(state.assignment, brokers),
        rack_repairs=rack_repairs,
        leader_repairs=max(0, replicas_moved(state.assignment, target) - before_unpinning),
    )


def _plan(
    state: ClusterState,
    target: dict[TopicPartition, list[int]],
    lower_bound: int,
    rack_repairs: int = 0,
    leader_repairs: int = 0,
) -> Plan:
    return Plan(
        current={tp: tuple(r) for tp, r in state.assignment.items()},
        target={tp: tuple(r) for tp, r in target.items()},
        sizes=state.sizes,
        lower_bound=lower_bound,
        rack_repairs=rack_repairs,
        leader_repairs=leader_repairs,
    )


def _lower_bound(assignment: Mapping[TopicPartition, Sequence[int]], brokers: set[int]) -> int:
    loads = dict.fromkeys(brokers, 0)
    leaving = 0
    for replicas in assignment.values():
        for broker in replicas:
            if broker in loads:
                loads[broker] += 1
            else:
                leaving += 1
    total = leaving + sum(loads.values())
    floor, ceil = total // len(brokers), math.ceil(total / len(brokers))
    departures = leaving + sum(max(0, load - ceil) for load in loads.values())
    arrivals = sum(max(0, floor - load) for load in loads.values())
    return max(departures, arrivals)


def _brokers_in(state: ClusterState) -> set[int]:
    return {b for replicas in state.assignment.values() for b in replicas}


def _require_live(state: ClusterState, brokers: set[int], what: str) -> None:
    missing = brokers - set(state.brokers)
    if missing:
        raise PlanError(f"{what} brokers are not live: {_ids(missing)}")


def _require_feasible(state: ClusterState, brokers: set[int], removed: set[int]) -> None:
    largest = max((len(r) for r in state.assignment.values()), default=0)
    if largest > len(brokers):
        topics = sorted({tp[0] for tp, r in state.assignment.items() if len(r) > len(brokers)})
        cause = f" after removing {_ids(removed)}" if removed else ""
        raise PlanError(
            f"only {len(brokers)} brokers would be left{cause}, fewer than the replication "
            f"factor {largest} of {', '.join(topics)}"
        )


def _ids(brokers: Iterable[int]) -> str:
    return ",".join(str(b) for b in sorted(brokers))
