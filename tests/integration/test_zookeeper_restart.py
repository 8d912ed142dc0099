"""A ZooKeeper away for a minute (a restart of the ensemble, a node that reboots): once it
serves again, the brokers reconnect within a second or so, with the sessions they had,
as Kafka's ZooKeeper client does. ZooKeeper gives restored sessions a new timeout when it
starts, so a broker that is back within its session timeout keeps its registration and
nothing in the cluster changes. kazoo on its own waits twice as long after each failed
round of connection attempts: after a minute away it would come back about forty
seconds late, its session expired.

The test stops ZooKeeper, so it runs a server of its own, not the session's."""

from __future__ import annotations

import re
import time

import pytest
from kazoo.client import KazooClient

from integration.cluster import Cluster
from tidelog.zookeeper import ZooKeeperServer, four_letter_word
from waiting import wait_until

pytestmark = pytest.mark.timeout(240)

AWAY_S = 60
OVERRIDES = {"zookeeper.session.timeout.ms": "6000"}


def registration_owners(connect: str, broker_ids: list[int]) -> dict[int, int | None]:
    """The session that holds each broker's registration, None for one not registered."""
    zk = KazooClient(hosts=connect)
    zk.start(timeout=10)
    try:
        stats = {b: zk.exists(f"/brokers/ids/{b}") for b in broker_ids}
    finally:
        zk.stop()
        zk.close()
    return {b: stat.ephemeralOwner if stat else None for b, stat in stats.items()}


def connected_sessions(zookeeper: ZooKeeperServer) -> set[int]:
    """The sessions that ZooKeeper has a client connection of (``cons``: one line per
    connection, ``...,sid=0x<session>,...``)."""
    answer = four_letter_word(zookeeper.host, zookeeper.port, "cons")
    return {int(sid, 16) for sid in re.findall(r"sid=0x([0-9a-f]+)", answer)}


def outcome(zookeeper: ZooKeeperServer, before: dict[int, int]) -> dict[int, int | None]:
    """The registration owners, once each broker's session is settled: its session of
    ``before`` connected again, or its registration held by another session or none;
    an empty dict (not yet) before that."""
    now = registration_owners(zookeeper.connect_string, list(before))
    connected = connected_sessions(zookeeper)
    # an owner is a signed 64-bit number; ``cons`` prints it unsigned
    settled = all(now[b] != before[b] or before[b] % 2**64 in connected for b in before)
    return now if settled else {}


def test_brokers_keep_their_sessions_when_zookeeper_is_back_after_a_minute(tmp_path):
    with (
        ZooKeeperServer(tmp_path / "zookeeper") as zookeeper,
        Cluster(tmp_path, zookeeper.connect_string, size=2, overrides=OVERRIDES) as cluster,
    ):
        ids = list(cluster.brokers)
        before = registration_owners(zookeeper.connect_string, ids)
        assert None not in before.values(), before

        zookeeper.stop()
        # The scenario itself, not a wait for an event: a minute with no ZooKeeper, over
        # which kazoo's own back-off between connection attempts would grow.
        time.sleep(AWAY_S)
        zookeeper.start()
        # Each broker's outcome, whichever it is: back on its session (ZooKeeper has a
        # connection of that session again), or registered anew (or not at all) after
        # losing it. Before either, an unexpired session would look kept.
        after = wait_until(
            lambda: outcome(zookeeper, before),
            "every broker back on its session, or its registration changed",
        )
        assert after == before
        for broker in cluster.brokers.values():
            assert "new ZooKeeper session" not in broker.log(), broker.log()[-3000:]
