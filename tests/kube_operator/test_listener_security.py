"""The listeners as the operator configures them, served by a real broker: the keys of
``builders.listeners`` (with the mount paths pointed at files on disk, the ports at free
ones and the pod's names at localhost), the TLS material as the operator's handlers lay
it out, and real clients.

- The operator's own credentials (``builders.certificates.operator_credentials_secret``)
  reach REPLICATION with mutual TLS and are a super user: they create a SCRAM user, ACLs
  and a topic with the authorizer on.
- On the SCRAM listener that user produces with confluent-kafka over TLS; a wrong
  password is refused.
- On the mutual-TLS listener a certificate ``CN=bob`` from the clients CA is ``User:bob``
  (its ACL lets it produce); a certificate from another CA is refused.
- ``tidelog-healthcheck``, the pods' probes, passes on every listener: the broker's own
  certificate is accepted where a listener wants one from the clients CA.
- A certificate replaced in the broker's keystore file is served once the certificate
  step has the broker read its stores again, without a restart.
"""

from __future__ import annotations

import base64
import datetime
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer

from integration.broker_process import BrokerProcess, free_port
from tidelog.admin import AdminClient
from tidelog.admin.topics import NewTopic
from tidelog.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from tidelog.security.certificates import CertificateAuthority, CertificateFacts
from tidelog.security.client_security import ClientSecurity
from tidelog.server.process import TIDELOG_SERVER
from tidelog_operator import names
from tidelog_operator.builders import brokers, certificates, listeners
from tidelog_operator.cluster.certificate_commands import ReloadStores
from tidelog_operator.cluster.certificate_step import TlsView, certificate_step
from tidelog_operator.cluster.commands import Context, carry_out
from tidelog_operator.cluster.tls_probe import served_fingerprints
from tidelog_operator.spec import parse_cluster
from waiting import wait_until

SPEC = parse_cluster(
    "events",
    "ns",
    {
        "storage": {"volumes": [{"id": 0, "size": "1Gi"}]},
        "listeners": [
            {"name": "internal", "port": 9092},
            {"name": "mtls", "port": 9093, "authentication": "tls"},
        ],
        "authorization": {"type": "simple"},
        "zookeeper": {"connect": "zookeeper.example:2181"},
    },
)
POD_HOST = "events-broker-0.events-brokers.ns.svc"
HEALTHCHECK = TIDELOG_SERVER.with_name("tidelog-healthcheck")
NOW = datetime.datetime.now(datetime.UTC)


class OperatorConfiguredBroker:
    """Broker 0 of ``SPEC`` on this machine, with the operator's keys and files."""

    def __init__(self, directory: Path, zk_connect: str):
        self.tls = directory / "tls"
        self.cluster_ca = CertificateAuthority(f"CN=events-cluster-ca v0,O={names.GROUP}")
        self.clients_ca = CertificateAuthority(f"CN=events-clients-ca v0,O={names.GROUP}")
        self._files()
        self.ports = {9091: free_port(), 9092: free_port(), 9093: free_port()}
        keys = brokers.broker_keys(SPEC, zk_connect, 0)
        for key in ("log.dirs", "zookeeper.connect", "broker.id"):
            keys.pop(key)
        self.process = BrokerProcess(
            directory / "broker",
            zk_connect,
            broker_id=0,
            port=self.ports[9091],
            overrides={key: self._local(value) for key, value in keys.items()},
        )

    def _files(self) -> None:
        """The mounts of ``listeners.tls_volumes``, as the handlers fill them."""
        for directory in ("cluster-ca", "clients-ca", "broker"):
            (self.tls / directory).mkdir(parents=True)
        cluster_pem = self.cluster_ca.certificate_pem
        (self.tls / "cluster-ca" / "ca.crt").write_bytes(cluster_pem)
        (self.tls / "clients-ca" / "ca.crt").write_bytes(
            self.clients_ca.certificate_pem + cluster_pem
        )
        issued = self.cluster_ca.issue(names.broker_subject("events"), hosts=["localhost"])
        (self.tls / "broker" / "events-broker-0.pem").write_bytes(
            issued.key_pem() + issued.chain_pem
        )

    def _local(self, value: str) -> str:
        value = value.replace(listeners.TLS_DIR, str(self.tls)).replace(POD_HOST, "localhost")
        value = value.replace("0.0.0.0", "127.0.0.1")
        for port, local in self.ports.items():
            value = value.replace(f":{port}", f":{local}")
        return value

    def operator_admin(self) -> AdminClient:
        issued = self.cluster_ca.issue(names.operator_subject("events"))
        secret = certificates.operator_credentials_secret(
            SPEC, self.cluster_ca.certificate_pem, issued.chain_pem, issued.key_pem()
        )
        properties = {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}
        assert properties.pop("bootstrap.servers") == "events-bootstrap.ns.svc:9091"
        security = ClientSecurity.from_properties(properties)
        return AdminClient(f"localhost:{self.ports[9091]}", security=security, timeout=20)

    def ca_file(self) -> str:
        return str(self.tls / "cluster-ca" / "ca.crt")


@pytest.fixture
def broker(tmp_path, zk_chroot):
    configured = OperatorConfiguredBroker(tmp_path, zk_chroot)
    configured.process.start()
    try:
        yield configured
    finally:
        configured.process.stop()


def _allow(principal: str, operation: AclOperation, kind=ResourceType.TOPIC, name="orders"):
    entry = AccessControlEntry(principal, "*", operation, AclPermissionType.ALLOW)
    return AclBinding(ResourcePattern(kind, name), entry)


def _produce(config: dict) -> None:
    producer = Producer({**config, "message.timeout.ms": 15000, "socket.timeout.ms": 10000})
    errors = []
    producer.produce("orders", b"one", on_delivery=lambda error, _: errors.append(error))
    producer.flush(20)
    assert errors == [None]


def _refused_login(config: dict) -> bool:
    """Whether the client is told its login failed (librdkafka's error callback, served
    while it polls)."""
    errors = []
    producer = Producer({**config, "error_cb": errors.append})
    return wait_until(
        lambda: producer.poll(0.2) is not None
        and any(e.code() == KafkaError._AUTHENTICATION for e in errors),
        "the login refused",
        timeout=30,
    )


def test_the_operators_listeners_serve_its_admin_scram_and_certificate_users(broker, tmp_path):
    admin = broker.operator_admin()
    admin.upsert_scram_credential("alice", "alice-secret")
    admin.create_acls(
        [
            _allow("User:alice", AclOperation.WRITE),
            _allow("User:alice", AclOperation.DESCRIBE),
            _allow("User:bob", AclOperation.WRITE),
            _allow("User:bob", AclOperation.DESCRIBE),
        ]
    )
    assert admin.create_topics([NewTopic("orders", 1, 1)]) == {"orders": None}

    scram = {
        "bootstrap.servers": f"localhost:{broker.ports[9092]}",
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": broker.ca_file(),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
    }
    _produce({**scram, "sasl.password": "alice-secret"})
    assert _refused_login({**scram, "sasl.password": "wrong"})

    def certificate_user(ca: CertificateAuthority, name: str) -> dict:
        issued = ca.issue(f"CN={name}")
        certificate, key = tmp_path / f"{name}.crt", tmp_path / f"{name}.key"
        certificate.write_bytes(issued.chain_pem)
        key.write_bytes(issued.key_pem())
        return {
            "bootstrap.servers": f"localhost:{broker.ports[9093]}",
            "security.protocol": "SSL",
            "ssl.ca.location": broker.ca_file(),
            "ssl.certificate.location": str(certificate),
            "ssl.key.location": str(key),
        }

    _produce(certificate_user(broker.clients_ca, "bob"))
    with pytest.raises(KafkaException):
        stranger = certificate_user(CertificateAuthority("CN=elsewhere"), "bob")
        Producer(stranger).list_topics("orders", timeout=8)

    check = subprocess.run(
        [str(HEALTHCHECK), str(broker.process.config_path), "--timeout", "10"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert check.returncode == 0, check.stderr
    assert "REPLICATION" in check.stdout and "MTLS" in check.stdout


def test_a_certificate_renewed_in_its_file_is_served_once_the_step_has_the_broker_reload(
    broker, monkeypatch
):
    """As the kubelet swaps a Secret's files, the broker's keystore file is replaced; the
    broker serves its old certificate until the certificate step, seeing the probe's
    fingerprint differ from the Secret's, has it read its stores again (no restart)."""
    for constant in ("BROKER_CERTS_DIR", "CLUSTER_CA_DIR", "CLIENTS_CA_DIR"):
        monkeypatch.setattr(listeners, constant, broker._local(getattr(listeners, constant)))
    admin = broker.operator_admin()
    address = {0: ("localhost", broker.ports[9091])}
    before = served_fingerprints(admin, address)[0]
    keystore = broker.tls / "broker" / "events-broker-0.pem"
    issued = broker.cluster_ca.issue(names.broker_subject("events"), hosts=["localhost"])
    swapped = keystore.with_suffix(".new")
    swapped.write_bytes(issued.key_pem() + issued.chain_pem)
    swapped.replace(keystore)
    renewed = CertificateFacts.of(issued.certificate)
    assert served_fingerprints(admin, address)[0] == before != renewed.sha256_fingerprint

    view = TlsView(brokers={"events-broker-0": renewed})
    commands = certificate_step(SPEC, view, 0, NOW, served={0: before})
    assert ReloadStores((0,)) in commands
    context = Context(None, "ns", "events", lambda: admin, SPEC)
    carry_out(ReloadStores((0,)), context)
    # the broker applies its dynamic config as ZooKeeper tells it of the change
    wait_until(
        lambda: served_fingerprints(admin, address)[0] == renewed.sha256_fingerprint,
        "the renewed certificate served",
    )
