"""Quotas key on the connection's principal: a broker with a PLAINTEXT listener
(``User:ANONYMOUS``) and a SASL_PLAINTEXT one (PLAIN users alice and bob). A quota of
``users/alice`` throttles alice's connections whatever their client id, not bob's nor
an anonymous one with the same client id; ``users/<default>/clients/<id>`` throttles that
client id for every user without a quota of their own, the anonymous one included."""

from __future__ import annotations

import pytest

from integration.broker_process import BrokerProcess, free_port
from integration.sasl_setup import sasl_listener_overrides
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.records.builder import build_batch
from tidelog.security.sasl_client import authenticate
from waiting import wait_until

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
TOPIC = "by-user"


@pytest.fixture(scope="module")
def broker(tmp_path_factory, module_chroot):
    plain, sasl = free_port(), free_port()
    process = BrokerProcess(
        tmp_path_factory.mktemp("broker"),
        module_chroot,
        port=plain,
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SASL://127.0.0.1:{sasl}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SASL:SASL_PLAINTEXT",
            "inter.broker.listener.name": "PLAINTEXT",
            **sasl_listener_overrides("SASL", ("PLAIN",), USERS),
        },
    ).start()
    process.plain_port, process.sasl_port = plain, sasl
    with connect(process, None, "setup") as connection:
        wait_until(
            lambda: connection.request(
                ApiKey.METADATA, None, {"topics": [], "allow_auto_topic_creation": False}
            ).brokers,
            "the broker registered",
        )
        created = connection.request(
            ApiKey.CREATE_TOPICS,
            None,
            {
                "topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1}],
                "timeout_ms": 10_000,
                "validate_only": False,
            },
        )
        assert created.topics[0].error_code == 0
    yield process
    assert process.stop() == 0


def connect(broker, user: str | None, client_id: str) -> BrokerConnection:
    """A connection as ``user`` over SASL/PLAIN, or anonymous over PLAINTEXT."""
    port = broker.plain_port if user is None else broker.sasl_port
    connection = BrokerConnection("127.0.0.1", port, client_id=client_id, timeout=30)
    if user is not None:
        authenticate(connection.request, "PLAIN", user, USERS[user])
    return connection


def set_quota(broker, entity: list[tuple[str, str | None]]) -> None:
    with connect(broker, None, "setup") as connection:
        response = connection.request(
            ApiKey.ALTER_CLIENT_QUOTAS,
            None,
            {
                "entries": [
                    {
                        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                        "ops": [{"key": "producer_byte_rate", "value": 1, "remove": False}],
                    }
                ],
                "validate_only": False,
            },
        )
    assert response.entries[0].error_code == 0


def throttle_ms(broker, user: str | None, client_id: str) -> int:
    """The throttle time a Produce of 1 kB gets."""
    with connect(broker, user, client_id) as connection:
        response = connection.request(
            ApiKey.PRODUCE,
            None,
            {
                "acks": 1,
                "timeout_ms": 5000,
                "topic_data": [
                    {
                        "name": TOPIC,
                        "partition_data": [
                            {"index": 0, "records": build_batch([(None, b"x" * 1000)])}
                        ],
                    }
                ],
            },
        )
    assert response.responses[0].partition_responses[0].error_code == 0
    return response.throttle_time_ms


def test_a_user_quota_follows_the_authenticated_user(broker):
    set_quota(broker, [("user", "alice")])
    wait_until(lambda: throttle_ms(broker, "alice", "app") > 0, "alice throttled")
    assert throttle_ms(broker, "alice", "another-app") > 0
    assert throttle_ms(broker, "bob", "app") == 0
    assert throttle_ms(broker, None, "app") == 0


def test_a_default_users_client_quota_covers_the_anonymous_user(broker):
    set_quota(broker, [("user", None), ("client-id", "shared")])
    wait_until(lambda: throttle_ms(broker, None, "shared") > 0, "anonymous shared throttled")
    assert throttle_ms(broker, "bob", "shared") > 0
    assert throttle_ms(broker, "bob", "own") == 0
