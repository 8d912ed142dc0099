"""A ZooKeeper away for a minute (a restart of the ensemble, a node that reboots): once it
serves again, the brokers reconnect within a second or so, with the sessions they had,
as Kafka's ZooKeeper client does. ZooKeeper gives restored sessions a new timeout when it
starts, so a broker that is back within its session timeout keeps its registration and
nothing in the cluster changes. kazoo on its own waits twice as long after each failed
round of connection attempts: after a minute away it would come back about forty
seconds late, its session expired.

The test stops ZooKeeper, so it runs a server of its own, not the session's."""

from __future__ import annotations

import time

import pytest
from kazoo.client import KazooClient

from integration.cluster import Cluster
from tidelog.zookeeper import ZooKeeperServer
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


def test_brokers_keep_their_sessions_when_zookeeper_is_back_after_a_minute(tmp_path):
    with (
        ZooKeeperServer(tmp_path / "zookeeper") as zookeeper,
        Cluster(tmp_path, zookeeper.connect_string, size=2, overrides=OVERRIDES) as cluster,
    ):
        ids = list(cluster.brokers)
        before = registration_owners(zookeeper.connect_string, ids)
        assert None not in before.values(), before

        zookeeper.stop()
        time.sleep(AWAY_S)
        zookeeper.start()
        # Past the session timeout after the restart: a broker that did not reconnect
        # in time has lost its session by now, and registered again with a new one.
        time.sleep(10)
        wait_until(
            lambda: None not in registration_owners(zookeeper.connect_string, ids).values(),
            "every broker registered",
        )
        after = registration_owners(zookeeper.connect_string, ids)
        assert after == before
        for broker in cluster.brokers.values():
            assert "new ZooKeeper session" not in broker.log(), broker.log()[-3000:]
