"""``/brokers/ids/<id>`` at start-up, with real brokers: a broker killed with -9 and
started again at once (a supervisor's restart) waits for ZooKeeper to expire its old
session instead of failing; a second broker with the id of a live one still fails, with
one clear line and status 1, once the bounded wait is over."""

from __future__ import annotations

import subprocess

from integration.broker_process import BrokerProcess
from integration.cluster import Cluster
from waiting import wait_until

WAITING = "waiting for the previous registration of broker.id"


def owner(cluster: Cluster, broker_id: int) -> int | None:
    """The session that holds the broker's registration, None when there is none."""
    stat = cluster.zk.exists(f"/brokers/ids/{broker_id}")
    return None if stat is None else stat.ephemeralOwner


def test_a_broker_killed_and_started_again_at_once_registers_when_its_old_session_expires(
    tmp_path, zk_chroot
):
    with Cluster(tmp_path, zk_chroot, size=2) as cluster:  # zookeeper.session.timeout.ms 6000
        broker = cluster.brokers[2]
        old_session = owner(cluster, 2)
        broker.kill()
        assert owner(cluster, 2) == old_session  # held until the session expires
        broker.start()  # returns once its listener answers; the registration follows

        def registered_again() -> bool:
            return owner(cluster, 2) not in (None, old_session)

        wait_until(registered_again, "broker 2 registered in a session of its own")
        assert cluster.is_running(2), broker.log()[-3000:]
        wait_until(cluster.all_known, "both brokers know both again")
        (waited,) = [line for line in broker.log().splitlines() if WAITING in line]
        assert f"broker.id 2 (owner session 0x{old_session:x}) to expire" in waited
        assert "already registered" not in broker.log()


def test_a_second_broker_with_a_live_brokers_id_fails_after_the_bounded_wait(tmp_path, zk_chroot):
    short = {"zookeeper.session.timeout.ms": "4000"}  # a wait of at most 6 s
    with Cluster(tmp_path, zk_chroot, size=1, overrides=short) as cluster:
        live_session = owner(cluster, 1)
        impostor = BrokerProcess(tmp_path / "impostor", zk_chroot, broker_id=1, overrides=short)
        result = subprocess.run(impostor.command(), capture_output=True, text=True, timeout=60)

        assert result.returncode == 1, result.stderr[-3000:]
        lines = result.stderr.splitlines()
        assert lines[-1] == (
            "tidelog-server: broker.id 1 is already registered in ZooKeeper by another "
            f"running broker (session 0x{live_session:x} still held it after 6 s)"
        )
        (waited,) = [line for line in lines if WAITING in line]
        assert f"broker.id 1 (owner session 0x{live_session:x}) to expire: up to 6 s" in waited
        assert "Traceback" not in result.stderr
        assert owner(cluster, 1) == live_session  # the live broker kept its registration
        assert cluster.all_known()
