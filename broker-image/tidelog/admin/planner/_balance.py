"""Balancing a layout: replicas moved from the most loaded brokers to the least loaded
(directly, or along a chain of moves where racks forbid the direct one), preferred
leaderships shifted by reordering replicas along chains of partitions (seed 000: 首选首领),
and, where single-replica partitions pin leaderships, replicas moved to even them."""

from __future__ import annotations

from collections.abc import Collection, Mapping

from tidelog.admin.planner._layout import Layout
from tidelog.admin.planner._model import TopicPartition


def balance_replicas(
    layout: Layout, sizes: Mapping[TopicPartition, int], frozen: Collection = ()
) -> None:
    """Move replicas from the most loaded brokers to the least loaded until counts
    differ by at most one: directly where a replica can go, else along the shortest
    chain of moves (racks may forbid a direct move but allow a → b → c, each hop
    within the rules); ``frozen`` partitions stay."""
    while True:
        by_load = sorted(layout.brokers, key=lambda b: (layout.load(b), b))
        lightest = layout.load(by_load[0])
        if layout.load(by_load[-1]) - lightest <= 1:
            return
        for source in reversed(by_load):
            if layout.load(source) - lightest < 2:
                return  # racks of unequal sizes: as balanced as they allow
            chain = _replica_chain(layout, source, by_load, sizes, frozen)
            if chain and _apply_chain(layout, chain):
                break


def _replica_chain(layout: Layout, source: int, by_load: list[int], sizes, frozen):
    """Breadth-first from ``source`` to a broker at least two replicas lighter: the
    moves (partition, from, to) along the way, or None."""
    goal = layout.load(source) - 2
    came_from: dict[int, tuple[int, TopicPartition] | None] = {source: None}
    frontier = [source]
    while frontier:
        following = []
        for broker in frontier:
            for destination in by_load:
                if destination in came_from:
                    continue
                tp = _movable_replica(layout, broker, destination, sizes, frozen)
                if tp is None:
                    continue
                came_from[destination] = (broker, tp)
                if layout.load(destination) <= goal:
                    return [
                        (tp, previous, broker)
                        for broker, (previous, tp) in search_path(came_from, destination)
                    ]
                following.append(destination)
        frontier = following
    return None


def search_path(came_from, last: int) -> list[tuple[int, tuple]]:
    """The (broker, how it was reached) pairs from the start of a search to ``last``."""
    path = []
    broker = last
    while came_from[broker] is not None:
        path.append((broker, came_from[broker]))
        broker = came_from[broker][0]
    return list(reversed(path))


def _movable_replica(layout: Layout, source: int, destination: int, sizes, frozen):
    """The replica ``source`` gives to ``destination`` (which must not hold the
    partition, racks kept): the one that evens pinned leaderships, then the smallest."""
    movable = [
        tp
        for tp in layout.hosted[source]
        if tp not in frozen
        and destination not in layout.target[tp]
        and layout.keeps_racks(tp, source, destination)
    ]
    if not movable:
        return None
    pinned = _pinned_leadership_gain(layout, source, destination)
    return min(
        movable,
        key=lambda tp: (-pinned if len(layout.target[tp]) == 1 else 0, sizes.get(tp, 0), tp),
    )


def _apply_chain(layout: Layout, chain) -> bool:
    """Make the moves of a chain, each checked again against the moves before it (two
    hops may touch one partition); all or none."""
    saved = layout.snapshot()
    for tp, source, destination in chain:
        replicas = layout.target[tp]
        if source not in replicas or destination in replicas:
            layout.restore(saved)
            return False
        if not layout.keeps_racks(tp, source, destination):
            layout.restore(saved)
            return False
        layout.replace(tp, source, destination)
    return True


def _pinned_leadership_gain(layout: Layout, source: int, destination: int) -> int:
    """What moving a single-replica partition from ``source`` to ``destination`` does to
    the balance of leaderships that no reordering can shift (those partitions lead
    where their one replica is): 1 when it evens them, -1 when it unbalances them."""
    pinned = {
        broker: sum(1 for tp in layout.hosted[broker] if len(layout.target[tp]) == 1)
        for broker in (source, destination)
    }
    difference = pinned[source] - pinned[destination]
    return 1 if difference >= 2 else -1 if difference <= 0 else 0


def unpin_leaderships(layout: Layout, sizes: Mapping[TopicPartition, int]) -> None:
    """Even out the preferred leaderships that reordering cannot: a single-replica
    partition pins its leadership where its replica is, and a group of brokers may
    share too few partitions to lead their share. A replica then moves to a broker
    leading at least two fewer than another, the replicas are balanced again without
    moving it back, and the leaderships reordered; a try that leaves replicas less
    balanced, or leaderships no more even, is undone. Single-replica partitions are
    tried first (their leadership moves with them), then the smallest."""
    moved: set[TopicPartition] = set()
    while True:
        before = (_spread(layout.replica_counts()), _squares(layout.leader_counts()))
        for tp, source, destination in _moves_to_the_fewest_leaders(layout, sizes, moved):
            saved = layout.snapshot()
            layout.replace(tp, source, destination)
            balance_replicas(layout, sizes, frozen=moved | {tp})
            balance_leaders(layout.target, set(layout.brokers))
            evened = _squares(layout.leader_counts()) < before[1]
            if evened and _spread(layout.replica_counts()) <= max(1, before[0]):
                moved.add(tp)
                break
            layout.restore(saved)
        else:
            return


def _moves_to_the_fewest_leaders(layout: Layout, sizes, moved: set[TopicPartition]):
    """Candidate replica moves onto each broker that leads at least two fewer than the
    most leading one (fewest first): from every other broker, its best replica to give."""
    leaders = layout.leader_counts()
    most = max(leaders.values())
    for destination in sorted(layout.brokers, key=lambda b: (leaders[b], b)):
        if most - leaders[destination] < 2:
            return
        offers = []
        for source in layout.brokers:
            movable = [
                tp
                for tp in layout.hosted[source]
                if tp not in moved
                and destination not in layout.target[tp]
                and layout.keeps_racks(tp, source, destination)
            ]
            if movable:
                tp = min(
                    movable, key=lambda tp: (len(layout.target[tp]) != 1, sizes.get(tp, 0), tp)
                )
                rank = (len(layout.target[tp]) != 1, -leaders[source], sizes.get(tp, 0), tp)
                offers.append((rank, tp, source))
        for _, tp, source in sorted(offers):
            yield tp, source, destination


def _spread(counts: Mapping[int, int]) -> int:
    return max(counts.values()) - min(counts.values())


def _squares(counts: Mapping[int, int]) -> int:
    return sum(count * count for count in counts.values())


def balance_leaders(target: dict[TopicPartition, list[int]], brokers: set[int]) -> None:
    """Reorder replicas so that preferred-leader counts differ by at most one where the
    replica sets allow: shift one leadership at a time along the shortest chain of
    partitions (led by a, holding b → led by b, ...) from a broker above the others to
    one at least two below it."""
    led: dict[int, set[TopicPartition]] = {b: set() for b in brokers}
    for tp, replicas in target.items():
        if replicas and replicas[0] in led:
            led[replicas[0]].add(tp)
    while True:
        chain = None
        for source in sorted(brokers, key=lambda b: (-len(led[b]), b)):
            chain = _leadership_chain(target, led, source)
            if chain is not None:
                break
        if chain is None:
            return
        for tp, new_leader in chain:
            replicas = target[tp]
            led[replicas[0]].discard(tp)
            replicas.remove(new_leader)
            replicas.insert(0, new_leader)
            led[new_leader].add(tp)


def _leadership_chain(target, led, source: int):
    """Breadth-first from ``source`` to a broker with at least two fewer leaderships:
    the partitions and their new leaders along the way, or None."""
    goal = len(led[source]) - 2
    if goal < 0:
        return None
    came_from: dict[int, tuple[int, TopicPartition] | None] = {source: None}
    frontier = [source]
    while frontier:
        following = []
        for broker in frontier:
            for tp in sorted(led[broker]):
                for other in target[tp][1:]:
                    if other in came_from or other not in led:
                        continue
                    came_from[other] = (broker, tp)
                    if len(led[other]) <= goal:
                        return [(tp, b) for b, (_, tp) in search_path(came_from, other)]
                    following.append(other)
        frontier = following
    return None
