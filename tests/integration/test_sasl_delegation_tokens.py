"""Delegation tokens as on Kafka: ``kafka-delegation-tokens.sh`` creates, describes,
renews and expires them over SASL; they are stored where Kafka stores them; a client
logs in with one (SCRAM with ``tokenauth=true``) as the token's owner; a token may not be
asked for on a PLAINTEXT connection or with a token; one past its expiry is deleted."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from integration.broker_process import BrokerProcess, free_port
from integration.sasl_setup import (
    MECHANISMS,
    SCRAM_MODULE,
    create_scram_user,
    jaas,
    sasl_listener_overrides,
    wait_for_login,
)
from kafka_reference.tools import run_kafka_tool
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.client_security import ClientSecurity
from tidelog.security.sasl_client import SaslAuthenticationFailed, authenticate
from waiting import wait_until

USERS = {"alice": "alice-secret", "bob": "bob-secret"}


@pytest.fixture(scope="module")
def broker(module_chroot, tmp_path_factory):
    sasl = free_port()
    process = BrokerProcess(tmp_path_factory.mktemp("tokens"), module_chroot)
    with process.config_path.open("a") as config:
        config.write(
            f"listeners=PLAINTEXT://127.0.0.1:{process.port},SASL_PLAINTEXT://127.0.0.1:{sasl}\n"
            "inter.broker.listener.name=PLAINTEXT\ndelegation.token.secret.key=s3cret-key\n"
            "delegation.token.expiry.check.interval.ms=300\n"
        )
        for key, value in sasl_listener_overrides("SASL_PLAINTEXT", MECHANISMS, USERS).items():
            config.write(f"{key}={value}\n")
    process.start()
    for user, password in USERS.items():
        create_scram_user(process.port, user, password)
        wait_for_login(sasl, "SCRAM-SHA-512", user, password)
    process.sasl_port = sasl
    yield process
    assert process.stop() == 0, process.log()[-3000:]


def command_config(directory: Path, user: str, password: str, **options: str) -> Path:
    path = directory / f"{user}.properties"
    path.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=SCRAM-SHA-512\n"
        f"sasl.jaas.config={jaas(SCRAM_MODULE, user, password, **options)}\n"
    )
    return path


def tokens_tool(broker, config: Path, *args: str) -> str:
    result = run_kafka_tool(
        "kafka-delegation-tokens",
        *("--bootstrap-server", f"127.0.0.1:{broker.sasl_port}", "--command-config", str(config)),
        *args,
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"
    return result.stdout


def token_login(broker, token_id: str, hmac: str) -> bool:
    with BrokerConnection("127.0.0.1", broker.sasl_port) as connection:
        try:
            authenticate(connection.request, "SCRAM-SHA-256", token_id, hmac, token_auth=True)
        except SaslAuthenticationFailed:
            return False
    return True


def test_kafka_delegation_tokens_round_trip(broker, tmp_path, module_chroot) -> None:
    alice = command_config(tmp_path, "alice", USERS["alice"])
    out = tokens_tool(
        broker, alice, "--create", "--max-life-time-period", "-1", "--renewer-principal", "User:bob"
    )
    token_id = re.search(r"Created delegation token with tokenId : (\S+)", out)[1]
    row = next(line.split() for line in out.splitlines() if line.startswith(token_id))
    hmac = row[1]
    assert row[2:5] == ["User:alice", "User:alice", "[User:bob]"]

    zk = KazooClient(hosts=module_chroot)
    zk.start()
    try:
        stored = json.loads(zk.get(f"/delegation_token/tokens/{token_id}")[0])
    finally:
        zk.stop()
    assert stored["owner"] == "User%3Aalice" and stored["tokenId"] == token_id
    assert stored["renewers"] == ["User%3Abob"] and "hmac" not in stored

    # Kafka 3.9's tool asks for no owner at all without --owner-principal: no tokens
    assert "Total number of tokens : 0" in tokens_tool(broker, alice, "--describe")
    described = tokens_tool(broker, alice, "--describe", "--owner-principal", "User:alice")
    assert token_id in described and hmac in described
    bob = command_config(tmp_path, "bob", USERS["bob"])
    assert token_id in tokens_tool(broker, bob, "--describe", "--owner-principal", "User:alice")

    assert token_login(broker, token_id, hmac)
    assert not token_login(broker, token_id, hmac[:-2] + "AA")

    renewed = tokens_tool(broker, bob, "--renew", "--hmac", hmac, "--renew-time-period", "-1")
    assert "Completed renew operation" in renewed
    expired = tokens_tool(broker, alice, "--expire", "--hmac", hmac, "--expiry-time-period", "-1")
    assert "Completed expire operation" in expired
    wait_until(lambda: not token_login(broker, token_id, hmac), "the expired token is refused")
    assert token_id not in tokens_tool(
        broker, alice, "--describe", "--owner-principal", "User:alice"
    )


def test_a_token_is_refused_on_plaintext_and_to_a_token(broker, tmp_path) -> None:
    body = {"renewers": [], "max_lifetime_ms": -1}
    with BrokerConnection("127.0.0.1", broker.port) as connection:
        answer = connection.request(ApiKey.CREATE_DELEGATION_TOKEN, 2, body)
    assert answer.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    alice = ClientSecurity.from_properties(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": jaas(SCRAM_MODULE, "alice", USERS["alice"]),
        }
    )
    with BrokerConnection("127.0.0.1", broker.sasl_port, security=alice) as connection:
        created = connection.request(ApiKey.CREATE_DELEGATION_TOKEN, 2, body)
    assert created.error_code == ErrorCode.NONE

    password = base64.b64encode(created.hmac).decode()
    with BrokerConnection("127.0.0.1", broker.sasl_port) as connection:
        authenticate(
            connection.request, "SCRAM-SHA-512", created.token_id, password, token_auth=True
        )
        again = connection.request(ApiKey.CREATE_DELEGATION_TOKEN, 2, body)
    assert again.error_code == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED


def test_a_token_past_its_expiry_is_deleted(broker, module_chroot) -> None:
    alice = ClientSecurity.from_properties(
        {
            "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": jaas(SCRAM_MODULE, "alice", USERS["alice"]),
        }
    )
    with BrokerConnection("127.0.0.1", broker.sasl_port, security=alice) as connection:
        created = connection.request(
            ApiKey.CREATE_DELEGATION_TOKEN, 2, {"renewers": [], "max_lifetime_ms": 500}
        )
    assert created.error_code == ErrorCode.NONE
    assert created.max_timestamp_ms - created.issue_timestamp_ms == 500
    zk = KazooClient(hosts=module_chroot)
    zk.start()
    try:
        path = f"/delegation_token/tokens/{created.token_id}"
        assert zk.exists(path)
        wait_until(lambda: not zk.exists(path), "the expired token's znode is deleted")
    finally:
        zk.stop()
