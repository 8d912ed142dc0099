"""ZooKeeperServer, the API tests and ``make run`` use: ports, restarts on the same data,
clear failures; and the session fixtures built on it."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from tidelog.zookeeper import (
    ZooKeeperError,
    ZooKeeperServer,
    ZooKeeperSetupError,
    ZooKeeperStartError,
    four_letter_word,
)
from waiting import wait_until
from zookeeper.helpers import kazoo_session, server_mode, zookeeper_ensemble


def test_restart_keeps_persistent_data_on_the_same_port(tmp_path: Path) -> None:
    with ZooKeeperServer(tmp_path / "zk") as server:
        connect_string, first_pid = server.connect_string, server.pid
        assert server.port != 0
        with kazoo_session(connect_string) as client:
            client.create("/config/topics/orders", b'{"version":1}', makepath=True)
            client.create("/brokers/ids/1", b"gone after restart", ephemeral=True, makepath=True)

        server.restart()

        assert server.connect_string == connect_string
        assert server.pid != first_pid
        with kazoo_session(connect_string) as client:
            data, _ = client.get("/config/topics/orders")
            assert data == b'{"version":1}'
            assert client.get_children("/brokers/ids") == []
    assert not server.is_running
    assert (tmp_path / "zk" / "version-2").is_dir()


def test_a_stopped_server_refuses_connections_and_stop_is_idempotent(tmp_path: Path) -> None:
    server = ZooKeeperServer(tmp_path / "zk").start()
    port = server.port
    server.stop()
    server.stop()
    with pytest.raises(OSError):
        four_letter_word("127.0.0.1", port, "ruok", timeout=0.5)
    with pytest.raises(ZooKeeperError, match="not running"):
        server.wait()


def test_a_taken_port_fails_start_clearly(tmp_path: Path) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = ZooKeeperServer(tmp_path / "zk", port=port)
        with pytest.raises(ZooKeeperStartError, match=f"127.0.0.1:{port}: address in use"):
            server.start(timeout=20)
    assert not server.is_running


def test_missing_jars_fail_before_any_process(tmp_path: Path) -> None:
    server = ZooKeeperServer(tmp_path / "zk", libs=tmp_path / "empty")
    with pytest.raises(ZooKeeperSetupError, match="make zookeeper-libs"):
        server.start()
    assert server.pid is None
    with pytest.raises(ZooKeeperError, match="port is picked at the first start"):
        _ = server.connect_string


def test_zk_chroot_gives_the_test_its_own_existing_subtree(zookeeper, zk_chroot: str) -> None:
    host_port, chroot = zk_chroot.split("/", 1)
    assert host_port == zookeeper.connect_string
    assert chroot.startswith("test-")
    with kazoo_session(zk_chroot) as client:
        client.create("/brokers/ids/0", b"in the chroot", makepath=True)
    with kazoo_session(zookeeper.connect_string) as client:
        data, _ = client.get(f"/{chroot}/brokers/ids/0")
        assert data == b"in the chroot"
        assert client.exists("/brokers") is None


def test_an_ensemble_of_three_replicates_and_survives_one_loss(tmp_path: Path) -> None:
    """Three servers of one ensemble (what a Cluster's ZooKeeper StatefulSet runs): a
    write through one is read through another, and two keep serving without the third."""
    with zookeeper_ensemble(tmp_path) as ensemble:
        servers = list(ensemble.values())
        assert all(server.is_running for server in servers)

        def modes_known() -> list[str] | None:
            modes = [server_mode(s) for s in servers]
            return modes if all(modes) else None

        modes = wait_until(modes_known, "every server says its mode")
        assert sorted(modes) == ["follower", "follower", "leader"]
        assert (tmp_path / "zk-2" / "myid").read_text() == "2\n"
        with kazoo_session(servers[0].connect_string) as client:
            client.create("/brokers/topics/orders", b"assigned", makepath=True)
        servers[0].stop()
        with kazoo_session(servers[2].connect_string) as client:
            client.sync("/brokers/topics/orders")
            assert client.get("/brokers/topics/orders")[0] == b"assigned"


def test_an_ensemble_member_needs_its_id_among_the_servers(tmp_path: Path) -> None:
    with pytest.raises(ZooKeeperError, match="its own id among them"):
        ZooKeeperServer(tmp_path, servers={1: "a:1:2"}, my_id=2)
    with pytest.raises(ZooKeeperError, match="its own id among them"):
        ZooKeeperServer(tmp_path, my_id=1)
