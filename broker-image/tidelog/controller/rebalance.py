"""Automatic preferred leader election (seed 000 首选首领): which partitions go back to
their preferred replica, the first of the assignment.

Per broker, the imbalance is the share of the partitions it is the preferred replica of
that it does not lead. Above ``leader.imbalance.per.broker.percentage`` its partitions
move back to it, those where it is live and in the ISR (an out-of-sync replica must not
lead, seed 000).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

from tidelog.controller.election import preferred_leadership
from tidelog.controller.zk_data import PartitionState

__all__ = ["leader_imbalance", "partitions_to_rebalance"]

TopicPartition = tuple[str, int]


def leader_imbalance(
    replicas: Mapping[TopicPartition, Sequence[int]],
    states: Mapping[TopicPartition, PartitionState],
) -> dict[int, float]:
    """Preferred broker → share of its preferred partitions led by another broker (or
    by nobody), over the partitions that have a state."""
    preferred: dict[int, int] = {}
    elsewhere: dict[int, int] = {}
    for key, state in states.items():
        broker = replicas[key][0]
        preferred[broker] = preferred.get(broker, 0) + 1
        if state.leader != broker:
            elsewhere[broker] = elsewhere.get(broker, 0) + 1
    return {broker: elsewhere.get(broker, 0) / count for broker, count in preferred.items()}


def partitions_to_rebalance(
    replicas: Mapping[TopicPartition, Sequence[int]],
    states: Mapping[TopicPartition, PartitionState],
    live: Collection[int],
    percentage: int,
) -> list[TopicPartition]:
    """The partitions to hand back to their preferred replica: those of a broker whose
    imbalance exceeds ``percentage``, where that replica may lead."""
    over = {
        broker
        for broker, ratio in leader_imbalance(replicas, states).items()
        if ratio > percentage / 100
    }
    return sorted(
        key
        for key, state in states.items()
        if replicas[key][0] in over
        and state.leader != replicas[key][0]
        and preferred_leadership(replicas[key], state.isr, live) is not None
    )
