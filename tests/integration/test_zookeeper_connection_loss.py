"""A broker whose ZooKeeper server stops answering (a node lost with its ZooKeeper pod)
keeps its session: kazoo reconnects to another server of the ensemble. kazoo drops every
watch with the connection, so the controller must arm its watches again and go on
deciding; before, it went deaf: a broker that died was never taken out of its ISRs and
kept its leaderships, and one that came back got nothing."""

from __future__ import annotations

import os
import signal
from pathlib import Path

from integration.cluster import Cluster
from waiting import wait_until
from zookeeper.helpers import server_holding, server_mode, zookeeper_ensemble


def test_a_controller_whose_zookeeper_server_freezes_follows_brokers_leaving_and_joining(
    tmp_path: Path,
) -> None:
    with zookeeper_ensemble(tmp_path / "zookeeper") as servers:
        modes = wait_until(
            lambda: (m := {i: server_mode(s) for i, s in servers.items()})
            and all(m.values())
            and m,
            "every server says its mode",
        )
        # The brokers know the two followers only: freezing the one the controller talks
        # to leaves the ensemble its leader, so every session lives on.
        followers = {i: s for i, s in servers.items() if modes[i] == "follower"}
        connect = ",".join(s.connect_string for s in followers.values())
        with Cluster(tmp_path / "brokers", connect) as cluster:
            cluster.create_topic("orders", partitions=6, replication_factor=3)
            controller = cluster.wait_for_controller()
            session = cluster.zk.exists("/controller").ephemeralOwner
            frozen = wait_until(
                lambda: server_holding(followers, session), "the controller's server known"
            )
            victim = next(b for b in sorted(cluster.brokers) if b != controller)
            assert any(
                leader == victim for leader, _, _ in cluster.leaders(controller, "orders").values()
            )

            os.kill(followers[frozen].pid, signal.SIGSTOP)  # no answer and no reset
            cluster.brokers[victim].kill()

            def victim_gone() -> bool:
                states = cluster.leaders(controller, "orders").values()
                return all(leader != victim and victim not in isr for leader, _, isr in states)

            wait_until(victim_gone, f"broker {victim} leads nothing and is in no ISR", 60)
            cluster.brokers[victim].start()

            def victim_back() -> bool:
                states = cluster.leaders(controller, "orders").values()
                return all(sorted(isr) == [1, 2, 3] for _, _, isr in states)

            wait_until(victim_back, f"broker {victim} back in every ISR", 60)
            other = {i: s for i, s in followers.items() if i != frozen}
            assert server_holding(other, session) is not None
            # The test's own client may have been on the frozen server too: its request is
            # lost with that connection, so ask again once kazoo has moved to the other.
            owner = cluster.zk.retry(cluster.zk.exists, "/controller").ephemeralOwner
            assert owner == session
            os.kill(followers[frozen].pid, signal.SIGCONT)
