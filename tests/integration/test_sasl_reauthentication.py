"""KIP-368 on a broker with ``connections.max.reauth.ms``: SaslAuthenticate v1 tells the
client its session's lifetime; a connection that does not re-authenticate within it is
closed at its next request, one that does goes on; confluent-kafka (which
re-authenticates as Kafka's clients do) produces across several lifetimes on its
connections. Sessions expire with time, so these tests let time pass."""

from __future__ import annotations

import time

import pytest
from confluent_kafka import Producer

from integration.broker_process import BrokerProcess, free_port
from integration.sasl_setup import create_scram_user, sasl_listener_overrides, wait_for_login
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.sasl_client import plain_client_token

LIFETIME_MS = 1500
USERS = {"alice": "alice-secret"}
EXPIRED = "expired without re-authentication"


@pytest.fixture(scope="module")
def broker(module_chroot, tmp_path_factory):
    sasl = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("reauth"), module_chroot)
    with process.config_path.open("a") as config:
        config.write(
            f"listeners=PLAINTEXT://127.0.0.1:{process.port},SASL_PLAINTEXT://127.0.0.1:{sasl}\n"
            f"inter.broker.listener.name=PLAINTEXT\nconnections.max.reauth.ms={LIFETIME_MS}\n"
        )
        for key, value in sasl_listener_overrides(
            "SASL_PLAINTEXT", ("PLAIN", "SCRAM-SHA-256"), USERS
        ).items():
            config.write(f"{key}={value}\n")
    process.start()
    create_scram_user(process.port, "alice", USERS["alice"])
    wait_for_login(sasl, "SCRAM-SHA-256", "alice", USERS["alice"])
    process.sasl_port = sasl
    yield process
    assert process.stop() == 0, process.log()[-3000:]


def plain_login(connection: BrokerConnection) -> int:
    """SaslHandshake v1 and SaslAuthenticate v1 with PLAIN: the session's lifetime."""
    handshake = connection.request(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})
    assert handshake.error_code == ErrorCode.NONE
    answer = connection.request(
        ApiKey.SASL_AUTHENTICATE,
        1,
        {"auth_bytes": plain_client_token("alice", USERS["alice"])},
    )
    assert answer.error_code == ErrorCode.NONE, answer.error_message
    return answer.session_lifetime_ms


def metadata(connection: BrokerConnection):
    return connection.request(ApiKey.METADATA, 1, {"topics": []})


def test_a_session_not_renewed_is_closed_at_the_next_request(broker) -> None:
    with BrokerConnection("127.0.0.1", broker.sasl_port) as connection:
        assert plain_login(connection) == LIFETIME_MS
        metadata(connection)
        with pytest.raises(ConnectionError):
            while True:
                metadata(connection)
    assert EXPIRED in broker.log()


def test_a_session_renewed_in_time_goes_on(broker) -> None:
    with BrokerConnection("127.0.0.1", broker.sasl_port) as connection:
        renewed = time.monotonic()
        plain_login(connection)
        deadline = renewed + 3 * LIFETIME_MS / 1000
        while time.monotonic() < deadline:
            if time.monotonic() - renewed > LIFETIME_MS / 2000:
                renewed = time.monotonic()
                assert plain_login(connection) == LIFETIME_MS
            assert metadata(connection).brokers


def test_confluent_kafka_reauthenticates(broker) -> None:
    expired_before = broker.log().count(EXPIRED)
    delivered = []
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{broker.sasl_port}",
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-256",
            "sasl.username": "alice",
            "sasl.password": USERS["alice"],
        }
    )
    deadline = time.monotonic() + 3 * LIFETIME_MS / 1000
    sent = 0
    while time.monotonic() < deadline:
        producer.produce(
            "reauth", b"%d" % sent, on_delivery=lambda e, m: delivered.append(e is None)
        )
        sent += 1
        producer.flush(10)
    assert producer.flush(10) == 0
    assert delivered == [True] * sent
    assert broker.log().count(EXPIRED) == expired_before
