"""A client certificate is who the client is: with the ACL authorizer on, a broker whose
only client listener is mutual TLS takes the principal from the certificate's subject,
mapped by ``ssl.principal.mapping.rules``. ``CN=admin,OU=ops`` maps to the super user
``User:admin`` and may write; ``CN=bob,OU=eng`` maps to ``User:bob`` and is refused
with TOPIC_AUTHORIZATION_FAILED until an ACL lets it write; a certificate no rule maps
is refused its connection."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, Producer

from integration.broker_process import BrokerProcess, free_port
from integration.tls_files import TlsFiles
from kafka_reference.tools import run_kafka_tool
from waiting import wait_until

TOPIC = "by-certificate"


@pytest.fixture
def mtls_broker(tmp_path, zk_chroot):
    tls = TlsFiles.make(tmp_path / "tls")
    port, mtls_port = free_port(), free_port()
    broker = BrokerProcess(
        tmp_path / "broker",
        zk_chroot,
        port=port,
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{port},MTLS://127.0.0.1:{mtls_port}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,MTLS:SSL",
            "listener.name.mtls.ssl.client.auth": "required",
            "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=(ops|eng)$/$1/L",
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            # the inter-broker listener (PLAINTEXT, anonymous) and the certificate's admin
            "super.users": "User:ANONYMOUS;User:admin",
            **tls.listener_overrides(tls.broker_keystore()),
        },
    ).start()
    broker.mtls_port, broker.tls = mtls_port, tls
    yield broker
    assert broker.stop() == 0, broker.log()[-3000:]


def produce_as(broker, subject: str) -> KafkaError | None:
    """Produce one record with a certificate for ``subject``; the delivery's error."""
    client = broker.tls.client(subject)
    errors: list[KafkaError | None] = []
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.mtls_port}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(broker.tls.ca_file),
            "ssl.certificate.location": str(client.certificate),
            "ssl.key.location": str(client.key),
            "message.timeout.ms": 10000,
        }
    )
    producer.produce(TOPIC, b"x", on_delivery=lambda error, _message: errors.append(error))
    producer.flush(20)
    return errors[0]


def test_the_certificates_mapped_subject_is_the_principal(mtls_broker) -> None:
    created = run_kafka_tool(
        "kafka-topics",
        *("--bootstrap-server", mtls_broker.bootstrap, "--create", "--topic", TOPIC),
    )
    assert created.returncode == 0, created.stderr[-3000:]
    assert produce_as(mtls_broker, "CN=Admin,OU=ops") is None
    refused = produce_as(mtls_broker, "CN=bob,OU=eng")
    assert refused is not None and refused.code() == KafkaError.TOPIC_AUTHORIZATION_FAILED
    granted = run_kafka_tool(
        "kafka-acls",
        *("--bootstrap-server", mtls_broker.bootstrap, "--add", "--allow-principal"),
        *("User:bob", "--operation", "Write", "--topic", TOPIC),
    )
    assert granted.returncode == 0, granted.stderr[-3000:]
    wait_until(lambda: produce_as(mtls_broker, "CN=bob,OU=eng") is None, "bob may write")


def test_a_certificate_no_rule_maps_is_refused(mtls_broker) -> None:
    """The broker closes the connection: the record is never delivered."""
    error = produce_as(mtls_broker, "CN=carol,OU=sales")
    assert error is not None and error.code() == KafkaError._MSG_TIMED_OUT
    assert "no rule of ssl.principal.mapping.rules applies" in mtls_broker.log()
