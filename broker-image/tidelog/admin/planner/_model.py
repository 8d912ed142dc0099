"""What the planner takes (a cluster's state) and gives (a plan), and its error."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

TopicPartition = tuple[str, int]


class PlanError(ValueError):
    """The intent cannot be planned (unknown brokers, too few brokers for a replication
    factor, ...); the message says why in one line."""


@dataclass(frozen=True)
class ClusterState:
    """The input of every plan.

    ``assignment``: each partition's replicas, preferred leader first. ``brokers``: the
    live brokers and their racks (None: no rack); replicas on other brokers (gone ones)
    are moved like those on a leaving broker. ``sizes``: each partition's bytes (the
    leader's, from DescribeLogDirs); missing sizes count as 0."""

    assignment: Mapping[TopicPartition, Sequence[int]]
    brokers: Mapping[int, str | None]
    sizes: Mapping[TopicPartition, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Plan:
    """``target`` is the whole assignment after the plan; ``moves`` only what changes.
    ``replicas_moved`` counts replicas created on a broker that had none of the
    partition, ``bytes_moved`` their sizes, ``leaders_moved`` the partitions whose
    preferred leader changes; ``lower_bound`` is the fewest replica moves that any valid
    balanced plan needs (see the module docstring), ``rack_repairs`` the moves made to
    widen partitions whose replicas spanned too few racks, and ``leader_repairs`` the
    moves made to even preferred leaderships that single-replica partitions pin (with
    mixed replication factors only)."""

    current: dict[TopicPartition, tuple[int, ...]]
    target: dict[TopicPartition, tuple[int, ...]]
    sizes: Mapping[TopicPartition, int]
    lower_bound: int
    rack_repairs: int = 0
    leader_repairs: int = 0

    @property
    def moves(self) -> dict[TopicPartition, tuple[int, ...]]:
        return {tp: r for tp, r in sorted(self.target.items()) if self.current.get(tp) != r}

    @property
    def replicas_moved(self) -> int:
        return replicas_moved(self.current, self.target)

    @property
    def bytes_moved(self) -> int:
        return sum(
            len(set(r) - set(self.current[tp])) * self.sizes.get(tp, 0)
            for tp, r in self.target.items()
        )

    @property
    def leaders_moved(self) -> int:
        return sum(1 for tp, r in self.target.items() if r[0] != self.current[tp][0])

    def replica_counts(self) -> dict[int, int]:
        return _counts(self.target.values(), lambda replicas: replicas)

    def leader_counts(self) -> dict[int, int]:
        return _counts(self.target.values(), lambda replicas: replicas[:1])


def replicas_moved(
    current: Mapping[TopicPartition, Sequence[int]], target: Mapping[TopicPartition, Sequence[int]]
) -> int:
    """Replicas in ``target`` on a broker that had none of their partition in ``current``."""
    return sum(len(set(r) - set(current[tp])) for tp, r in target.items())


def _counts(assignments, pick) -> dict[int, int]:
    counts: dict[int, int] = defaultdict(int)
    for replicas in assignments:
        for broker in pick(replicas):
            counts[broker] += 1
    return dict(counts)


@dataclass(frozen=True)
class LogDirMove:
    """One replica's move between the log dirs of one broker (AlterReplicaLogDirs)."""

    topic_partition: TopicPartition
    source: str
    target: str
