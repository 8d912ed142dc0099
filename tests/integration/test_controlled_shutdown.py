"""Controlled shutdown with real broker processes (seed 000, seed 003 四.4): on SIGTERM a
broker asks the controller to move its leaderships away before it exits, and exits 0.

That the move happened before the exit, and not when the controller saw the broker's
registration go, is read from ZooKeeper's transaction ids: every partition state was
last written before the broker's ``/brokers/ids`` node was deleted (the parent's
``pzxid``), and nothing was written after it."""

from __future__ import annotations

import pytest

from integration.cluster import Cluster
from waiting import wait_until

TOPIC = "orders"


def live_brokers(cluster: Cluster, broker_id: int) -> list[int]:
    return sorted(b.node_id for b in cluster.metadata(broker_id).brokers)


def state_written_before_deregistration(cluster: Cluster, partition: int) -> bool:
    deregistered = cluster.zk.exists("/brokers/ids").pzxid
    _, stat = cluster.zk.get(f"/brokers/topics/{TOPIC}/partitions/{partition}/state")
    return stat.mzxid < deregistered


@pytest.mark.parametrize("role", ["broker", "controller"])
def test_sigterm_moves_leadership_away_before_the_broker_exits(cluster, role):
    cluster.create_topic(TOPIC, partitions=6, replication_factor=3)
    controller = cluster.controller_id()
    victim = (
        controller if role == "controller" else next(b for b in cluster.brokers if b != controller)
    )
    others = [b for b in cluster.brokers if b != victim]
    before = cluster.leaders(others[0], TOPIC)
    led = sorted(p for p, (leader, _, _) in before.items() if leader == victim)
    assert led, f"broker {victim} leads nothing: {before}"

    assert cluster.brokers[victim].stop() == 0
    log = cluster.brokers[victim].log()
    assert f"controlled shutdown of broker {victim} succeeded" in log

    assignment = cluster.assignment(TOPIC)
    expected = {}
    for partition, (leader, epoch, isr) in before.items():
        new_isr = [b for b in isr if b != victim]
        if leader == victim:  # the first other replica of the assignment in the ISR
            leader = next(b for b in assignment[partition] if b in new_isr)
        expected[partition] = (leader, epoch + 1, new_isr)
    for broker_id in others:
        wait_until(
            lambda b=broker_id: cluster.leaders(b, TOPIC) == expected,
            f"broker {broker_id} reports {victim}'s leaderships moved and {victim} out of the ISR",
        )
    for partition, (leader, epoch, isr) in expected.items():
        state = cluster.partition_state(TOPIC, partition)
        assert (state["leader"], state["leader_epoch"], sorted(state["isr"])) == (
            leader,
            epoch,
            isr,
        )
        assert state_written_before_deregistration(cluster, partition), partition

    cluster.brokers[victim].start()
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: live_brokers(cluster, b) == sorted(cluster.brokers),
            f"broker {broker_id} lists broker {victim} again",
        )


def test_a_broker_whose_partitions_cannot_move_still_shuts_down(cluster):
    """A single replica, and a partition whose other replica is out of the ISR: the
    controller keeps them on the broker, which retries and then exits 0 all the same."""
    controller = cluster.controller_id()
    victim, partner = [b for b in cluster.brokers if b != controller]
    cluster.create_topic("single", assignment={0: [victim]})
    cluster.create_topic(TOPIC, assignment={0: [victim, partner]})
    assert cluster.brokers[partner].stop() == 0
    wait_until(
        lambda: cluster.leaders(controller, TOPIC)[0][::2] == (victim, [victim]),
        f"{victim} leads {TOPIC}-0 alone",
    )

    assert cluster.brokers[victim].stop() == 0
    log = cluster.brokers[victim].log()
    assert "all controlled shutdown attempts failed; shutting down anyway" in log
    assert f"still leading [('{TOPIC}', 0)]" in log
    assert "('single', 0)" not in log  # a single replica is not waited for


def test_the_last_broker_alive_shuts_down_without_retrying(cluster):
    """Nobody can take the leaderships of the last broker of a stopping cluster: after
    the first attempt it stops, instead of waiting out its retries."""
    cluster.create_topic(TOPIC, partitions=6, replication_factor=3)
    last, *others = sorted(cluster.brokers)
    for broker_id in others:
        assert cluster.brokers[broker_id].stop() == 0
    wait_until(
        lambda: all(leader == last for leader, _, _ in cluster.leaders(last, TOPIC).values()),
        f"{last} leads all of {TOPIC}",
    )

    assert cluster.brokers[last].stop() == 0
    log = cluster.brokers[last].log()
    assert f"no other broker is alive to lead the 6 partitions broker {last} still" in log
    assert "controlled shutdown attempt 2" not in log
