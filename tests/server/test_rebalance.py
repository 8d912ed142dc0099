"""Automatic preferred leader election (seed 000 首选首领): the imbalance per broker and
the partitions handed back to their preferred replica."""

from tidelog.controller.rebalance import leader_imbalance, partitions_to_rebalance
from tidelog.controller.zk_data import PartitionState

# Broker 1 is the preferred replica of p0 and p1, broker 2 of p2 and p3, broker 3 of p4.
REPLICAS = {
    ("t", 0): [1, 2, 3],
    ("t", 1): [1, 3, 2],
    ("t", 2): [2, 3, 1],
    ("t", 3): [2, 1, 3],
    ("t", 4): [3, 1, 2],
}
ALL = [1, 2, 3]


def states(leaders: list[int], isr: dict[int, list[int]] | None = None) -> dict:
    isr = isr or {}
    return {
        ("t", p): PartitionState(leader, 1, isr.get(p, ALL), 1) for p, leader in enumerate(leaders)
    }


def test_the_imbalance_is_the_share_of_preferred_partitions_led_elsewhere():
    assert leader_imbalance(REPLICAS, states([1, 1, 2, 2, 3])) == {1: 0.0, 2: 0.0, 3: 0.0}
    assert leader_imbalance(REPLICAS, states([2, 1, 3, 3, 1])) == {1: 0.5, 2: 1.0, 3: 1.0}


def test_an_offline_partition_counts_as_led_elsewhere():
    assert leader_imbalance(REPLICAS, states([-1, 1, 2, 2, 3]))[1] == 0.5


def test_only_brokers_above_the_percentage_get_their_partitions_back():
    led = states([2, 1, 3, 3, 3])  # broker 1: 1 of 2 elsewhere, broker 2: 2 of 2
    assert partitions_to_rebalance(REPLICAS, led, ALL, 50) == [("t", 2), ("t", 3)]
    assert partitions_to_rebalance(REPLICAS, led, ALL, 49) == [("t", 0), ("t", 2), ("t", 3)]
    assert partitions_to_rebalance(REPLICAS, led, ALL, 100) == []


def test_a_balanced_cluster_moves_nothing_even_at_zero_percent():
    assert partitions_to_rebalance(REPLICAS, states([1, 1, 2, 2, 3]), ALL, 0) == []


def test_the_preferred_replica_must_be_live_and_in_the_isr():
    led = states([2, 3, 3, 1, 3], isr={1: [3, 2]})  # p1's preferred broker 1 is out of sync
    assert partitions_to_rebalance(REPLICAS, led, [1, 3], 0) == [("t", 0)]  # broker 2 is down
