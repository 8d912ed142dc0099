"""The roller's decisions (``cluster/rolling.py``), table-driven: observations of the
brokers and partitions in, one action out."""

from __future__ import annotations

import pytest

from tidelog_operator.cluster.rolling import BrokerState, PartitionState, RollDecision, decide_roll


def broker(id_: int, stale: bool = True, ready: bool = True, controller: bool = False, going=False):
    return BrokerState(id_, stale, ready, controller, going=going)


def partition(replicas, isr, min_isr=2, name="t-0"):
    return PartitionState(name, tuple(replicas), tuple(isr), min_isr)


FULL = [partition([0, 1, 2], [0, 1, 2], name=f"t-{i}") for i in range(3)]


@pytest.mark.parametrize(
    ("brokers", "partitions", "expected"),
    [
        # nothing stale: done
        ([broker(0, False), broker(1, False)], FULL, RollDecision("done")),
        # the lowest id first, the controller last
        (
            [broker(0, controller=True), broker(1), broker(2)],
            FULL,
            RollDecision("restart", 1, "broker 1 runs an old revision"),
        ),
        (
            [broker(0, False), broker(1, False), broker(2, controller=True)],
            FULL,
            RollDecision("restart", 2, "broker 2 runs an old revision"),
        ),
        # an unready stale broker serves nothing: restarted first, whatever else
        (
            [broker(0), broker(1), broker(2, ready=False)],
            [partition([0, 1, 2], [0, 1])],
            RollDecision("restart", 2, "broker 2 is stale and not ready"),
        ),
        # a pod being deleted (its controlled shutdown under way) is restarting already:
        # not deleted again though stale and unready, and no other broker meanwhile
        (
            [broker(0, ready=False, going=True), broker(1), broker(2)],
            FULL,
            RollDecision("wait", 0, "waiting for broker 0's pod to go"),
        ),
        (
            [broker(0, False), broker(1, going=True), broker(2, ready=False)],
            FULL,
            RollDecision("wait", 1, "waiting for broker 1's pod to go"),
        ),
        # a restarted broker not ready yet, or still catching up: wait for it
        (
            [broker(0, False, ready=False), broker(1), broker(2)],
            FULL,
            RollDecision("wait", 0, "waiting for broker 0 to be ready"),
        ),
        (
            [broker(0, False), broker(1), broker(2)],
            [partition([0, 1, 2], [1, 2], name="orders-3")],
            RollDecision(
                "wait",
                0,
                "waiting for broker 0 to be back in the ISR of 1 partitions (e.g. orders-3)",
            ),
        ),
        # never below min.insync.replicas: broker 1 is one of the two in sync
        (
            [broker(0, False), broker(1), broker(2)],
            [partition([1, 2, 3], [1, 2], min_isr=2, name="t-7")],
            RollDecision(
                "wait", 1, "restarting broker 1 would leave t-7 below min.insync.replicas"
            ),
        ),
        # min.insync.replicas 1 allows it
        (
            [broker(0, False), broker(1), broker(2)],
            [partition([1, 2], [1, 2], min_isr=1)],
            RollDecision("restart", 1, "broker 1 runs an old revision"),
        ),
    ],
)
def test_the_roller_decides(brokers, partitions, expected):
    assert decide_roll(brokers, partitions) == expected


def lacking(id_: int, ready: bool = True, controller: bool = False):
    """A stale broker whose pod lacks a volume the StatefulSet's templates added."""
    return BrokerState(id_, True, ready, controller, lacks_volumes=True)


@pytest.mark.parametrize(
    ("brokers", "partitions", "missing", "expected"),
    [
        # a volume added: lowest id first, the controller included
        (
            [lacking(0, controller=True), lacking(1), lacking(2)],
            FULL,
            frozenset(),
            RollDecision("restart", 0, "broker 0 runs an old revision"),
        ),
        # ... and not before the last restarted is back in sync
        (
            [broker(0, False), lacking(1), lacking(2)],
            [partition([0, 1, 2], [1, 2], name="t-4")],
            frozenset(),
            RollDecision(
                "wait", 0, "waiting for broker 0 to be back in the ISR of 1 partitions (e.g. t-4)"
            ),
        ),
        # an unready stale broker after the lowest lacking one waits its turn (its pod,
        # once deleted, would not come back)
        (
            [lacking(0), lacking(1), lacking(2, ready=False)],
            FULL,
            frozenset(),
            RollDecision("restart", 0, "broker 0 runs an old revision"),
        ),
        # a pod gone past the lowest lacking one comes back only after it: restart it now,
        # even below min.insync.replicas
        (
            [lacking(0, controller=True), lacking(2)],
            [partition([0, 1, 2], [0, 2])],
            frozenset({1}),
            RollDecision(
                "restart", 0, "broker 0 lacks a new volume, and no pod after it is made before"
            ),
        ),
    ],
)
def test_a_volume_added_restarts_the_brokers_lowest_id_first(
    brokers, partitions, missing, expected
):
    assert decide_roll(brokers, partitions, missing) == expected


def test_a_whole_roll_restarts_each_broker_once_and_the_controller_last():
    """A simulation: each restart makes the broker current, briefly out of the ISR,
    then back; every broker is restarted once, in order, never below min ISR."""
    stale = {0: True, 1: True, 2: True}
    out_of_sync: set[int] = set()
    restarted = []
    for _ in range(20):
        brokers = [broker(i, stale[i], True, controller=i == 0) for i in range(3)]
        isr = [i for i in range(3) if i not in out_of_sync]
        decision = decide_roll(brokers, [partition([0, 1, 2], isr)])
        if decision.action == "done":
            break
        if decision.action == "restart":
            assert len(isr) - 1 >= 2 or decision.broker not in isr
            restarted.append(decision.broker)
            stale[decision.broker] = False
            out_of_sync.add(decision.broker)
        else:
            out_of_sync.clear()  # the restarted broker caught up
    assert restarted == [1, 2, 0]
