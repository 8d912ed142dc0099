"""The assignment a plan is building, and where single replicas go: placement of a
new replica, choice of a replica to drop, widening of partitions that span too few
racks (seed 000: 机架感知)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping

from tidelog.admin.planner._model import PlanError, TopicPartition


class Layout:
    """The target assignment being built, with per-broker replica sets and the racks."""

    def __init__(
        self,
        target: dict[TopicPartition, list[int]],
        brokers: set[int],
        racks: Mapping[int, str | None],
    ):
        self.target = target
        self.brokers = sorted(brokers)
        racked = all(racks.get(b) is not None for b in brokers)
        self.rack = {b: racks.get(b) if racked else None for b in brokers}
        self.rack_count = len(set(self.rack.values())) if racked else 0
        self.hosted: dict[int, set[TopicPartition]] = {b: set() for b in brokers}
        for tp, replicas in target.items():
            for broker in replicas:
                if broker in self.hosted:
                    self.hosted[broker].add(tp)

    def load(self, broker: int) -> int:
        return len(self.hosted[broker])

    def replica_counts(self) -> dict[int, int]:
        return {b: len(tps) for b, tps in self.hosted.items()}

    def leader_counts(self) -> dict[int, int]:
        counts = dict.fromkeys(self.brokers, 0)
        for replicas in self.target.values():
            if replicas[0] in counts:
                counts[replicas[0]] += 1
        return counts

    def snapshot(self) -> dict[TopicPartition, list[int]]:
        return {tp: list(replicas) for tp, replicas in self.target.items()}

    def restore(self, saved: dict[TopicPartition, list[int]]) -> None:
        for tp, replicas in saved.items():
            self.target[tp][:] = replicas
        self.hosted = {b: set() for b in self.brokers}
        for tp, replicas in self.target.items():
            for broker in replicas:
                if broker in self.hosted:
                    self.hosted[broker].add(tp)

    def racks_of(self, replicas: Iterable[int]) -> set[str]:
        return {self.rack[b] for b in replicas if self.rack.get(b) is not None}

    def wanted_racks(self, tp: TopicPartition) -> int:
        return min(len(self.target[tp]), self.rack_count)

    def keeps_racks(self, tp: TopicPartition, leaving: int, arriving: int) -> bool:
        """Whether replacing ``leaving`` by ``arriving`` keeps the partition's racks as
        wide: a partition is never wider than it needs, so the move must not lose the
        leaving replica's rack unless it gains the arriving one's."""
        if not self.rack_count or self.rack[leaving] == self.rack[arriving]:
            return True
        others = [self.rack[b] for b in self.target[tp] if b != leaving]
        return self.rack[leaving] in others or self.rack[arriving] not in others

    def replace(self, tp: TopicPartition, leaving: int, arriving: int) -> None:
        replicas = self.target[tp]
        replicas[replicas.index(leaving)] = arriving  # a new replica takes the old's place
        if leaving in self.hosted:
            self.hosted[leaving].discard(tp)
        self.hosted[arriving].add(tp)

    def add(self, tp: TopicPartition, broker: int) -> None:
        self.target[tp].append(broker)
        self.hosted[broker].add(tp)

    def remove(self, tp: TopicPartition, broker: int) -> None:
        self.target[tp].remove(broker)
        self.hosted[broker].discard(tp)


def least_loaded(
    layout: Layout, tp: TopicPartition, leaving: int | None, excluded: Collection[int] = ()
) -> int:
    """Where a replica of ``tp`` goes (replacing ``leaving``, or added): a broker that
    does not hold it and is not ``excluded``, one of a rack it lacks first, then the
    least loaded."""
    replicas = layout.target[tp]
    staying = [b for b in replicas if b != leaving]
    used = layout.racks_of(staying)
    candidates = [b for b in layout.brokers if b not in replicas and b not in excluded]
    if not candidates:
        raise PlanError(f"{tp[0]}-{tp[1]}: no broker left to hold a replica")
    return min(
        candidates,
        key=lambda b: (layout.rack_count > 0 and layout.rack[b] in used, layout.load(b), b),
    )


def most_loaded_removable(layout: Layout, tp: TopicPartition, replication_factor: int) -> int:
    """The replica of ``tp`` to drop: never the preferred leader while another can go,
    one whose rack another replica shares first, then the most loaded broker."""
    replicas = layout.target[tp]
    wanted = min(replication_factor, layout.rack_count)

    def keeps(broker: int) -> bool:
        return len(layout.racks_of(b for b in replicas if b != broker)) >= wanted

    return min(replicas[1:], key=lambda b: (not keeps(b), -layout.load(b), -b))


def widen_racks(layout: Layout, partitions: Iterable[TopicPartition] | None = None) -> int:
    """Move replicas of partitions (all, or ``partitions``) whose racks are too few onto
    racks they lack; returns the number of moves."""
    if not layout.rack_count:
        return 0
    moves = 0
    for tp in sorted(layout.target if partitions is None else partitions):
        replicas = layout.target[tp]
        while len(layout.racks_of(replicas)) < layout.wanted_racks(tp):
            by_rack: dict[str, list[int]] = defaultdict(list)
            for broker in replicas:
                by_rack[layout.rack[broker]].append(broker)
            crowded = [b for r in sorted(by_rack) for b in by_rack[r] if len(by_rack[r]) > 1]
            leaving = max(crowded, key=lambda b: (b != replicas[0], layout.load(b), b))
            used = set(by_rack)
            arriving = min(
                (b for b in layout.brokers if layout.rack[b] not in used),
                key=lambda b: (layout.load(b), b),
            )
            layout.replace(tp, leaving, arriving)
            moves += 1
    return moves
