"""Scaling a Cluster's brokers by moving data first (seed 003: 分区重分配): observations in,
one action out, pure; ``scaling_moves.py`` observes and acts.

Brokers are the pods ``0 .. running-1`` of the StatefulSet and the spec wants
``desired`` of them. Which brokers hold replicas is read off the assignment each pass,
never kept as a count: a staying broker that is live and holds no replica is filled
(or, when the planner finds nothing to move onto it, reported), however long after
its start the operator first sees it. Each pass, in this order:

1. a reassignment in progress (ours or anyone's): wait; when ours has finished, ``finish``
   (throttles removed, preferred leaders elected, the outcome on the status);
2. replicas on failed log dirs of live brokers (``lost``, when ``spec.storage.
   drainFailedDirs`` lets the operator see them) that another broker can take:
   ``replace-lost-replicas`` copies them there through the planner, before anything
   else moves;
3. scale-down (``desired < running``): refused while a topic's replication factor exceeds
   ``desired`` (nothing moves); while the leaving brokers (the highest ids) hold replicas,
   ``remove-brokers`` drains them through the planner; once they hold none, ``shrink``
   the StatefulSet to ``desired``;
4. scale-up: staying brokers that hold no replica (``empty``) while others do:
   ``add-brokers`` spreads the replicas onto them through the planner, once every
   staying broker that holds none has registered (until then, ``wait``);
5. balancing (``balance.py``): ``rebalance-replicas`` when asked for, ``elect-leaders``
   when asked for or due;
6. lost replicas of partitions that have a replica on every live broker already
   (``stranded``): ``refuse-drain`` says so (a broker more, or the disk repaired, ends
   it);
7. otherwise ``done``.

One movement at a time: a balancing waits for a scaling, and either for a reassignment
that someone else started. No replica is added, removed or rebalanced while a staying
broker that holds replicas is down (a restart, say): the planner knows only the live
brokers, and its plan would move that broker's replicas away. While a live broker has
a failed log dir (``failed_dirs``), no replica is added, removed or rebalanced but the
lost ones: a reassignment whose target keeps a replica on that dir, or puts one back
there, could not complete until the dir is repaired.

Brokers are added to the StatefulSet at once (the reconciler never shrinks it), so a
scale-up starts as soon as the new pods are in; a scale-down shrinks only here.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field

__all__ = ["ScaleAction", "ScaleDecision", "ScaleObservation", "brokers_to_run", "decide_scale"]

TopicPartition = tuple[str, int]


class ScaleAction(enum.Enum):
    WAIT = "wait"
    FINISH = "finish"
    REPLACE_LOST_REPLICAS = "replace-lost-replicas"
    REFUSE_SCALE_DOWN = "refuse"
    REMOVE_BROKERS = "remove-brokers"
    SHRINK = "shrink"
    ADD_BROKERS = "add-brokers"
    REBALANCE_REPLICAS = "rebalance-replicas"
    ELECT_LEADERS = "elect-leaders"
    REFUSE_DRAIN = "refuse-drain"
    DONE = "done"


@dataclass(frozen=True)
class ScaleObservation:
    desired: int
    running: int
    live: frozenset[int]
    assignment: Mapping[TopicPartition, Sequence[int]]
    reassigning: int  # partitions with a reassignment in progress
    ours_in_progress: bool  # the status records a move the operator started
    requested: str | None = None  # the balancing the annotation asks for
    election_due: bool = False  # a scheduled preferred-leader election
    # partition → live brokers whose replica of it is on a failed log dir
    lost: Mapping[TopicPartition, Set[int]] = field(default_factory=dict)
    # lost replicas' partitions that no other live broker can take a replica of
    stranded: Mapping[TopicPartition, Set[int]] = field(default_factory=dict)
    failed_dirs: tuple[str, ...] = ()  # "broker B: DIR" of each offline log dir

    @property
    def staying(self) -> range:
        return range(min(self.desired, self.running))

    @property
    def empty(self) -> tuple[int, ...]:
        """The staying brokers that hold no replica, when some broker holds one."""
        holding = {b for replicas in self.assignment.values() for b in replicas}
        return tuple(b for b in self.staying if b not in holding) if holding else ()


@dataclass(frozen=True)
class ScaleDecision:
    action: ScaleAction
    brokers: tuple[int, ...] = ()
    reason: str = ""
    progressing: bool = False  # a scaling is under way (the Progressing condition)


def brokers_to_run(desired: int, running: int | None) -> int:
    """The StatefulSet's replicas as the reconciler applies them: the spec's, but never
    fewer than run now (leaving brokers go only once drained)."""
    return desired if running is None else max(desired, running)


def _widest_topic(assignment: Mapping[TopicPartition, Sequence[int]]) -> tuple[str, int]:
    """The topic with the highest replication factor (the first by name among equals)."""
    return max(
        ((tp[0], len(replicas)) for tp, replicas in sorted(assignment.items())),
        key=lambda item: item[1],
        default=("", 0),
    )


_DATA_MOVES = {ScaleAction.REMOVE_BROKERS, ScaleAction.ADD_BROKERS, ScaleAction.REBALANCE_REPLICAS}


def decide_scale(seen: ScaleObservation) -> ScaleDecision:
    decision = _decide(seen)
    if decision.action not in _DATA_MOVES:
        return decision
    if seen.failed_dirs:
        return ScaleDecision(
            ScaleAction.WAIT,
            decision.brokers,
            f"{decision.reason} once the failed log dirs are repaired "
            f"({'; '.join(seen.failed_dirs)}): until then the move could not complete",
            True,
        )
    holding = {b for replicas in seen.assignment.values() for b in replicas}
    down = [b for b in seen.staying if b in holding and b not in seen.live]
    if down:
        return ScaleDecision(
            ScaleAction.WAIT,
            decision.brokers,
            f"{decision.reason} once brokers {_ids(down)} are back: a plan made without "
            "them would move their replicas away",
            True,
        )
    return decision


def _decide(seen: ScaleObservation) -> ScaleDecision:
    if seen.reassigning:
        return ScaleDecision(
            ScaleAction.WAIT,
            reason=f"{seen.reassigning} partitions being reassigned",
            progressing=seen.ours_in_progress,
        )
    if seen.ours_in_progress:
        return ScaleDecision(
            ScaleAction.FINISH, reason="the reassignment has completed", progressing=True
        )
    if seen.lost:
        brokers = tuple(sorted({b for lost in seen.lost.values() for b in lost}))
        replicas = sum(map(len, seen.lost.values()))
        return ScaleDecision(
            ScaleAction.REPLACE_LOST_REPLICAS,
            brokers,
            f"copying {replicas} replicas off the failed log dirs of brokers {_ids(brokers)}",
            True,
        )
    if seen.desired < seen.running:
        leaving = tuple(range(seen.desired, seen.running))
        topic, factor = _widest_topic(seen.assignment)
        if factor > seen.desired:
            return ScaleDecision(
                ScaleAction.REFUSE_SCALE_DOWN,
                leaving,
                f"topic {topic} has replication factor {factor}: {seen.desired} brokers "
                "cannot hold it; scale to at least that many or lower the factor first",
            )
        holding = sorted({b for r in seen.assignment.values() for b in r if b in leaving})
        if holding:
            return ScaleDecision(
                ScaleAction.REMOVE_BROKERS,
                leaving,
                f"draining brokers {_ids(holding)} before removal",
                True,
            )
        return ScaleDecision(
            ScaleAction.SHRINK, leaving, f"brokers {_ids(leaving)} hold no replica", True
        )
    empty = seen.empty
    if empty:
        missing = [b for b in empty if b not in seen.live]
        if missing:
            return ScaleDecision(
                ScaleAction.WAIT, empty, f"waiting for brokers {_ids(missing)} to register", True
            )
        return ScaleDecision(
            ScaleAction.ADD_BROKERS, empty, f"spreading replicas onto brokers {_ids(empty)}", True
        )
    if seen.requested == "replicas":
        return ScaleDecision(
            ScaleAction.REBALANCE_REPLICAS, reason="balancing replicas, as asked", progressing=True
        )
    if seen.requested == "leaders" or seen.election_due:
        why = "as asked" if seen.requested == "leaders" else "on schedule"
        return ScaleDecision(ScaleAction.ELECT_LEADERS, reason=f"electing preferred leaders, {why}")
    if seen.stranded:
        brokers = tuple(sorted({b for lost in seen.stranded.values() for b in lost}))
        return ScaleDecision(
            ScaleAction.REFUSE_DRAIN,
            brokers,
            f"{len(seen.stranded)} partitions with replicas on the failed log dirs of brokers "
            f"{_ids(brokers)} have a replica on every live broker: add a broker, or repair "
            "the disk and delete the broker's pod",
        )
    return ScaleDecision(ScaleAction.DONE)


def _ids(brokers: Sequence[int]) -> str:
    return ", ".join(map(str, brokers))
