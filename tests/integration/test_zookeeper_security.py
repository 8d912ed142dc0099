"""The broker's ZooKeeper client secured as Kafka's is: TLS to ZooKeeper with a client
certificate (``zookeeper.ssl.*``), and ``zookeeper.set.acl`` making the znodes the broker
creates changeable only by the identity of that certificate (Kafka's defaultAcls: the
creator may do everything, the world may read, except the sensitive paths).

A real ZooKeeper serves TLS with x509 client authentication; real broker processes
connect with their certificates, which share one subject (the identity the ACLs name, as
the operator issues them: one per cluster, each broker's with its own host names); kazoo
clients, one without a certificate and one with a certificate of another identity from
the same CA, try to change what the brokers made.
"""

from __future__ import annotations

import contextlib
import json
import os
import ssl

import pytest
from kazoo.exceptions import NoAuthError, NoNodeError

from integration.broker_process import BrokerProcess
from tidelog.admin import AdminClient
from tidelog.controller.zk_security import (
    ZkClientSecurity,
    secured_kazoo_client,
    zk_client_security,
)
from tidelog.security.certificates import CertificateAuthority
from tidelog.server.config import BrokerConfig
from tidelog.zookeeper.server import ZooKeeperServer, ZooKeeperTls
from waiting import wait_until

BROKER_SUBJECT = "CN=events-broker,O=tidelog.dev"


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory):
    """A CA, ZooKeeper's certificate, two brokers' (one subject, their own host names)
    and an intruder's, as PEM files."""
    directory = tmp_path_factory.mktemp("zk-tls")
    ca = CertificateAuthority("CN=zookeeper-test-ca")
    (directory / "ca.pem").write_bytes(ca.certificate_pem)
    (directory / "ca.key").write_bytes(ca.key_pem())
    for name, subject, hosts in (
        ("zookeeper", "CN=zookeeper", ["127.0.0.1", "localhost"]),
        ("broker-1", BROKER_SUBJECT, ["events-broker-1.events.svc", "127.0.0.1"]),
        ("broker-2", BROKER_SUBJECT, ["events-broker-2.events.svc", "127.0.0.2"]),
        ("intruder", "CN=intruder", ["127.0.0.1", "localhost"]),
    ):
        issued = ca.issue(subject, hosts=hosts)
        (directory / f"{name}.pem").write_bytes(issued.key_pem() + issued.chain_pem)
    return directory


@pytest.fixture(scope="module")
def tls_zookeeper(tmp_path_factory, tls_files):
    tls = ZooKeeperTls(tls_files / "zookeeper.pem", tls_files / "ca.pem")
    with ZooKeeperServer(tmp_path_factory.mktemp("zk-data"), tls=tls) as server:
        yield server


@contextlib.contextmanager
def _session(hosts: str, tls_files=None, identity: str | None = None, *, set_acl: bool = False):
    """A started kazoo session on ``hosts``: plain, or TLS with ``identity``'s
    certificate (and Kafka's secure ACLs on what it creates with ``set_acl``)."""
    security = None
    if identity is not None:
        context = ssl.create_default_context(cafile=str(tls_files / "ca.pem"))
        context.check_hostname = False
        context.load_cert_chain(str(tls_files / f"{identity}.pem"))
        security = ZkClientSecurity(context, set_acl)
    client = secured_kazoo_client(security, hosts=hosts)
    client.start(timeout=15)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def _tls_properties(tls_files, identity: str = "broker-1") -> dict[str, str]:
    return {
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.ssl.keystore.location": str(tls_files / f"{identity}.pem"),
        "zookeeper.ssl.truststore.location": str(tls_files / "ca.pem"),
        # The test's certificates name 127.0.0.1, so the host check can stay on.
        "zookeeper.ssl.endpoint.identification.algorithm": "HTTPS",
    }


def _controller(client) -> int | None:
    try:
        return json.loads(client.get("/controller")[0])["brokerid"]
    except NoNodeError:
        return None


def _owners(client, path: str) -> set[tuple[str, str]]:
    acls, _ = client.get_acls(path)
    return {(acl.id.scheme, acl.id.id) for acl in acls}


def test_brokers_sharing_a_subject_with_set_acl_own_what_they_create(
    tmp_path, tls_files, tls_zookeeper
):
    """Two brokers whose certificates share one subject: the second registers under
    ``/brokers/ids``, which the first created; topics are created through each; the
    controller's successor bumps ``/controller_epoch``, which its predecessor wrote;
    nobody else may change any of it."""
    chroot = "/secured"
    secure = tls_zookeeper.secure_connect_string + chroot
    brokers = {
        i: BrokerProcess(
            tmp_path / f"broker-{i}",
            secure,
            broker_id=i,
            overrides={**_tls_properties(tls_files, f"broker-{i}"), "zookeeper.set.acl": "true"},
        )
        for i in (1, 2)
    }
    try:
        for broker in brokers.values():
            broker.start()
        # The controller counts live brokers when it places replicas: both, first.
        wait_until(
            lambda: len(AdminClient(brokers[1].bootstrap).metadata([]).brokers) == 2,
            "both brokers known to the controller",
        )
        for topic, broker in zip(("orders", "payments"), brokers.values(), strict=True):
            AdminClient(broker.bootstrap).create_topic(topic, 1, replication_factor=2)
        with (
            _session(tls_zookeeper.connect_string + chroot) as anonymous,
            _session(secure, tls_files, "intruder") as intruder,
        ):
            # The world reads what is not sensitive...
            data, _ = anonymous.get("/brokers/ids/2")
            assert b'"PLAINTEXT://127.0.0.1' in data
            # ...but only the brokers' subject may change it.
            owned = ["/brokers/ids", "/brokers/ids/1", "/brokers/ids/2", "/controller_epoch"]
            for path in [*owned, "/brokers/topics/orders", "/brokers/topics/payments"]:
                assert _owners(anonymous, path) == {
                    ("x509", BROKER_SUBJECT),
                    ("world", "anyone"),
                }, path
            for client in (anonymous, intruder):
                with pytest.raises(NoAuthError):
                    client.set("/brokers/topics/orders", b"{}")
                with pytest.raises(NoAuthError):
                    client.create("/brokers/topics/planted", b"{}")
            with pytest.raises(NoAuthError):
                intruder.create("/config/topics/planted", b"{}")

            first = _controller(anonymous)
            (survivor,) = set(brokers) - {first}
            epoch = int(anonymous.get("/controller_epoch")[0])
            assert brokers[first].stop() == 0, brokers[first].log()[-3000:]
            wait_until(
                lambda: _controller(anonymous) == survivor,
                f"broker {survivor} is the controller",
            )
            assert int(anonymous.get("/controller_epoch")[0]) > epoch
        AdminClient(brokers[survivor].bootstrap).create_topic("made-after-failover", 1, 1)
    finally:
        for broker in brokers.values():
            assert broker.stop() == 0, broker.log()[-3000:]


def test_sensitive_paths_are_readable_by_their_creator_only(tls_files, tls_zookeeper):
    """Users' configs hold SCRAM credentials: created with Kafka's secure ACLs, nobody
    else may even read them, while other znodes stay world-readable."""
    with _session(tls_zookeeper.connect_string) as root:
        root.ensure_path("/sensitive-test")
    secure = tls_zookeeper.secure_connect_string + "/sensitive-test"
    with _session(secure, tls_files, "broker-1", set_acl=True) as owner:
        owner.create("/config/users/alice", b"{}", makepath=True)
        owner.create("/config/topics/t", b"{}", makepath=True)
        assert owner.get("/config/users/alice")[0] == b"{}"
    hosts = tls_zookeeper.connect_string + "/sensitive-test"
    with _session(hosts) as anonymous, _session(secure, tls_files, "intruder") as intruder:
        assert anonymous.get("/config/topics/t")[0] == b"{}"
        for client in (anonymous, intruder):
            with pytest.raises(NoAuthError):
                client.get("/config/users/alice")


def test_set_acl_without_a_client_certificate_is_refused_in_one_line(tmp_path, tls_zookeeper):
    broker = BrokerProcess(
        tmp_path / "broker",
        tls_zookeeper.connect_string + "/refused",
        overrides={"zookeeper.set.acl": "true"},
    )
    with pytest.raises(RuntimeError, match="exited with 1") as refused:
        broker.start()
    assert (
        "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at "
        "least zookeeper.ssl.client.enable and zookeeper.ssl.keystore.location is missing"
    ) in str(refused.value)
    assert "Traceback" not in broker.log()


def test_a_foreign_ca_is_not_trusted(tmp_path, tls_files, tls_zookeeper):
    """A broker whose truststore does not hold ZooKeeper's CA does not connect: it gives up
    after zookeeper.connection.timeout.ms with one line naming ZooKeeper."""
    foreign = CertificateAuthority("CN=foreign-ca")
    (tmp_path / "foreign-ca.pem").write_bytes(foreign.certificate_pem)
    broker = BrokerProcess(
        tmp_path / "broker",
        tls_zookeeper.secure_connect_string + "/foreign",
        overrides={
            **_tls_properties(tls_files),
            "zookeeper.ssl.truststore.location": str(tmp_path / "foreign-ca.pem"),
            "zookeeper.connection.timeout.ms": "3000",
        },
    )
    with pytest.raises(RuntimeError, match="exited with 1") as refused:
        broker.start()
    assert "no ZooKeeper answered at 127.0.0.1:" in str(refused.value)


def test_a_server_certificate_naming_its_host_alone_is_checked_against_that_name(
    tmp_path, tls_files
):
    """In Kubernetes a ZooKeeper server's certificate names its host, never its pod's
    address (unknown when the certificate is made). The broker hands kazoo the servers'
    looked-up addresses (``zk_addresses``), so the TLS handshake must check the name the
    address came from: a broker connecting to ``localhost`` with the host check on gets
    in although the certificate names no address."""
    ca_pem = (tls_files / "ca.pem").read_bytes()
    ca = CertificateAuthority.from_pem(ca_pem, (tls_files / "ca.key").read_bytes())
    named = ca.issue("CN=zookeeper", hosts=["localhost"])
    keystore = tmp_path / "zookeeper-by-name.pem"
    keystore.write_bytes(named.key_pem() + named.chain_pem)
    tls = ZooKeeperTls(keystore, tls_files / "ca.pem")
    with ZooKeeperServer(tmp_path / "zk-data", tls=tls) as server:
        connect = f"localhost:{server.secure_port}/by-name"
        broker = BrokerProcess(
            tmp_path / "broker", connect, broker_id=1, overrides=_tls_properties(tls_files)
        )
        try:
            broker.start()
            AdminClient(broker.bootstrap).create_topic("named", 1, replication_factor=1)
        finally:
            assert broker.stop() == 0


def test_a_keystore_replaced_in_place_is_presented_from_the_next_connection_on(
    tmp_path, tls_files, tls_zookeeper
):
    """The broker's ZooKeeper client built from Kafka's keys (``zk_client_security``),
    its keystore file replaced while it runs, as a kubelet replaces a mounted Secret's
    file when the operator renews the certificate: its next connection presents the new
    certificate (ZooKeeper names its subject as the owner of what that session creates),
    without a new client."""
    ca = CertificateAuthority.from_pem(
        (tls_files / "ca.pem").read_bytes(), (tls_files / "ca.key").read_bytes()
    )
    renewed_subject = "CN=events-broker-renewed,O=tidelog.dev"
    renewed = ca.issue(renewed_subject, hosts=["127.0.0.1"])
    keystore = tmp_path / "broker.pem"
    keystore.write_bytes((tls_files / "broker-1.pem").read_bytes())
    with _session(tls_zookeeper.connect_string) as root:
        root.ensure_path("/renewed-keystore")
    config = BrokerConfig(
        {
            "zookeeper.connect": tls_zookeeper.secure_connect_string + "/renewed-keystore",
            **_tls_properties(tls_files),
            "zookeeper.ssl.keystore.location": str(keystore),
            "zookeeper.set.acl": "true",
        }
    )
    client = secured_kazoo_client(zk_client_security(config), hosts=config["zookeeper.connect"])
    client.start(timeout=15)
    try:
        client.create("/before", b"")
        replacement = tmp_path / "broker.pem.new"
        replacement.write_bytes(renewed.key_pem() + renewed.chain_pem)
        os.replace(replacement, keystore)  # as atomically as the kubelet's symlink swap
        client.stop()
        client.start(timeout=15)  # the next connection
        client.create("/after", b"")
        assert ("x509", BROKER_SUBJECT) in _owners(client, "/before")
        assert ("x509", renewed_subject) in _owners(client, "/after")
    finally:
        client.stop()
        client.close()
