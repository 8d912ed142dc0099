"""ZooKeeperServer, the API tests and ``make run`` use: ports, restarts on the same data,
clear failures; and the session fixtures built on it."""

from __future__ import annotations

import socket
import ssl
from pathlib import Path

import pytest

from tidelog.security.certificates import CertificateAuthority
from tidelog.zookeeper import (
    ZooKeeperError,
    ZooKeeperServer,
    ZooKeeperSetupError,
    ZooKeeperStartError,
    four_letter_word,
)
from tidelog.zookeeper.server import ZooKeeperTls
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


def _quorum_tls(directory: Path, ca: CertificateAuthority, name: str, hosts=("127.0.0.1",)):
    """Server ``name``'s certificate from ``ca`` naming ``hosts``, trusting the CA in
    ``directory/ca.pem``, for its secure port and its quorum."""
    issued = ca.issue(f"CN={name},O=tidelog.dev", hosts=hosts)
    keystore = directory / f"{name}.pem"
    keystore.write_bytes(issued.key_pem() + issued.chain_pem)
    return ZooKeeperTls(keystore, directory / "ca.pem", quorum=True)


def _cluster_ca(directory: Path) -> CertificateAuthority:
    ca = CertificateAuthority("CN=cluster-ca")
    (directory / "ca.pem").write_bytes(ca.certificate_pem)
    return ca


def _modes(servers: list[ZooKeeperServer]) -> list[str] | None:
    modes = [server_mode(s) for s in servers]
    return sorted(modes) if all(modes) else None


def test_an_ensemble_with_quorum_tls_forms_a_quorum_and_serves(tmp_path: Path) -> None:
    """The members elect a leader and replicate over mutual TLS: a member's election
    port completes a TLS handshake with a certificate of the cluster CA and presents
    the member's own."""
    ca = _cluster_ca(tmp_path)
    tls = {i: _quorum_tls(tmp_path, ca, f"zk-{i}") for i in (1, 2, 3)}
    with zookeeper_ensemble(tmp_path, tls) as ensemble:
        servers = list(ensemble.values())
        modes = wait_until(lambda: _modes(servers), "every server says its mode")
        assert modes == ["follower", "follower", "leader"]
        with kazoo_session(servers[0].connect_string) as client:
            client.create("/brokers/topics/orders", b"assigned", makepath=True)
        with kazoo_session(servers[2].connect_string) as client:
            client.sync("/brokers/topics/orders")
            assert client.get("/brokers/topics/orders")[0] == b"assigned"

        peer = _quorum_tls(tmp_path, ca, "peer")
        context = ssl.create_default_context(cafile=str(peer.truststore))
        context.load_cert_chain(str(peer.keystore))
        election_port = int(servers[0].servers[1].rsplit(":", 1)[1])
        with (
            socket.create_connection(("127.0.0.1", election_port), timeout=10) as raw,
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls_socket,
        ):
            subject = dict(pair[0] for pair in tls_socket.getpeercert()["subject"])
        assert subject == {"commonName": "zk-1", "organizationName": "tidelog.dev"}


@pytest.mark.parametrize(
    ("odd_one", "refusal"),
    [
        ("another CA", "unable to find valid certification path"),
        ("another host name", "doesn't match any of the subject alternative names: [zk-3."),
    ],
)
def test_a_member_with_a_certificate_the_quorum_refuses_never_joins(
    tmp_path: Path, odd_one: str, refusal: str
) -> None:
    """Server 3's quorum certificate is signed by another CA, or names another host than
    the address it connects from (ZooKeeper checks the connecting peer's address too): the
    other two refuse its handshakes, serve as a quorum of two, and it never serves."""
    ca = _cluster_ca(tmp_path)
    tls = {i: _quorum_tls(tmp_path, ca, f"zk-{i}") for i in (1, 2)}
    if odd_one == "another CA":
        tls[3] = _quorum_tls(tmp_path, CertificateAuthority("CN=other-ca"), "zk-3")
    else:
        tls[3] = _quorum_tls(tmp_path, ca, "zk-3", hosts=["zk-3.elsewhere.test"])
    with zookeeper_ensemble(tmp_path, tls, serving=(1, 2)) as ensemble:
        members, odd = [ensemble[1], ensemble[2]], ensemble[3]
        assert wait_until(lambda: _modes(members), "both members say their mode") == [
            "follower",
            "leader",
        ]
        with kazoo_session(",".join(s.connect_string for s in members)) as client:
            client.create("/brokers/ids/1", b"registered", makepath=True)
        wait_until(
            lambda: all(refusal in s.log_path.read_text() for s in members),
            "both members refused server 3's certificate",
        )
        assert odd.is_running
        assert server_mode(odd) is None
        answer = four_letter_word("127.0.0.1", odd.port, "srvr")
        assert "not currently serving requests" in answer


def test_quorum_tls_needs_an_ensemble(tmp_path: Path) -> None:
    tls = ZooKeeperTls(tmp_path / "zk.pem", tmp_path / "ca.pem", quorum=True)
    with pytest.raises(ZooKeeperError, match="quorum TLS needs an ensemble"):
        ZooKeeperServer(tmp_path, tls=tls)
