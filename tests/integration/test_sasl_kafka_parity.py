"""SASL answers compared with Apache Kafka 3.9's: the same listener settings and users on
a tidelog broker and on a Kafka broker (ZooKeeper mode), the same exchanges, the same
error codes and messages (a refused client learns no more from tidelog than from Kafka),
and the same connections closed; the SCRAM credential and delegation token APIs
likewise."""

from __future__ import annotations

import socket
import struct

import pytest
from kazoo.client import KazooClient

from integration.broker_process import BrokerProcess, free_port
from integration.clients import read_frame
from integration.sasl_setup import MECHANISMS, SCRAM_MODULE, jaas, sasl_listener_overrides
from integration.test_acl_apis import KafkaBroker
from kafka_reference.tools import run_kafka_tool
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey, RequestHeader, encode_request
from tidelog.security.client_security import ClientSecurity
from tidelog.security.sasl_client import ScramClient, plain_client_token
from waiting import wait_until

USERS = {"alice": "alice-secret"}


@pytest.fixture(scope="module", params=["tidelog", "kafka"])
def target(request, tmp_path_factory, zookeeper):
    kind = request.param
    connect = f"{zookeeper.connect_string}/sasl-parity-{kind}"
    admin = KazooClient(hosts=zookeeper.connect_string)
    admin.start(timeout=10)
    admin.ensure_path(f"/sasl-parity-{kind}")
    admin.stop()
    made = run_kafka_tool(
        "kafka-configs",
        *("--zookeeper", connect, "--alter", "--entity-type", "users", "--entity-name", "alice"),
        *("--add-config", "SCRAM-SHA-512=[password=alice-secret]"),
    )
    assert made.returncode == 0, made.stderr
    plaintext, sasl = free_port(), free_port()
    process_class = KafkaBroker if kind == "kafka" else BrokerProcess
    broker = process_class(
        tmp_path_factory.mktemp(f"sasl-{kind}"),
        connect,
        port=plaintext,
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{plaintext},SASL_PLAINTEXT://127.0.0.1:{sasl}",
            "inter.broker.listener.name": "PLAINTEXT",
            "connection.failed.authentication.delay.ms": "0",
            "delegation.token.secret.key": "token-secret",
            **sasl_listener_overrides("SASL_PLAINTEXT", MECHANISMS, USERS),
        },
    ).start()
    broker.sasl_port = sasl
    wait_until(lambda: outcome(broker, scram("alice-secret"))[-1] == "open", f"{kind} serves SASL")
    yield broker
    code = broker.stop()
    assert code == (143 if kind == "kafka" else 0), broker.log()[-3000:]


def outcome(broker, steps, port=None) -> list:
    """Each step's answer (error code, message or mechanisms), then whether the
    connection is still open: an ApiVersions request answered, or "closed"."""
    answers: list = []
    try:
        with BrokerConnection("127.0.0.1", port or broker.sasl_port, timeout=20) as connection:
            for step in steps:
                answers.append(step(connection))
            connection.request(ApiKey.API_VERSIONS, 0, {})
            answers.append("open")
    except (ConnectionError, OSError):
        answers.append("closed")
    return answers


def handshake(mechanism, version=1):
    def step(connection):
        answer = connection.request(ApiKey.SASL_HANDSHAKE, version, {"mechanism": mechanism})
        return answer.error_code, sorted(answer.mechanisms)

    return step


def authenticate(token):
    def step(connection):
        answer = connection.request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
        return answer.error_code, answer.error_message, answer.session_lifetime_ms

    return step


def metadata(connection):
    return len(connection.request(ApiKey.METADATA, 1, {"topics": []}).brokers), None


def scram(password, user="alice"):
    client = ScramClient("SCRAM-SHA-512", user, password)
    state = {}

    def first(connection):
        answer = connection.request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": client.first()})
        state["server_first"] = answer.auth_bytes
        return answer.error_code, answer.error_message

    def final(connection):
        token = client.final(state["server_first"])
        answer = connection.request(ApiKey.SASL_AUTHENTICATE, 1, {"auth_bytes": token})
        return answer.error_code, answer.error_message, answer.session_lifetime_ms

    return [handshake("SCRAM-SHA-512"), first, final]


CASES = {
    "unknown mechanism": [handshake("GSSAPI")],
    "PLAIN wrong password": [
        handshake("PLAIN"),
        authenticate(plain_client_token("alice", "nope")),
    ],
    "PLAIN unknown user": [handshake("PLAIN"), authenticate(plain_client_token("eve", "x"))],
    "PLAIN other authzid": [
        handshake("PLAIN"),
        authenticate(b"admin\0alice\0alice-secret"),
    ],
    "PLAIN malformed": [handshake("PLAIN"), authenticate(b"alice-secret")],
    "SCRAM wrong password": scram("nope"),
    "SCRAM unknown user": scram("x", user="eve")[:2],
    "SCRAM garbage": [handshake("SCRAM-SHA-512"), authenticate(b"\xff\x00garbage")],
    "SCRAM then authenticate again": [*scram("alice-secret"), authenticate(b"x")],
    "authenticate before handshake": [authenticate(b"x")],
    "metadata before handshake": [metadata],
    "metadata after handshake": [handshake("PLAIN"), metadata],
    "handshake v0 after authentication": [*scram("alice-secret"), handshake("PLAIN", 0)],
}


@pytest.fixture(scope="module")
def kafkas_answers():
    return {}


@pytest.mark.parametrize("case", CASES)
def test_sasl_answers_are_kafkas(target, kafkas_answers, case) -> None:
    """Kafka's answers are recorded on its module-scoped run (the second), tidelog's
    compared with them there."""
    answers = outcome(target, CASES[case])
    if case == "metadata after handshake":
        # Kafka answers the request with its error response, then closes; tidelog closes
        answers = answers[:1] + answers[-1:]
    if isinstance(target, KafkaBroker):
        tidelogs = kafkas_answers.get(case)
        assert tidelogs == answers, f"{case}: tidelog {tidelogs}, Kafka {answers}"
    else:
        kafkas_answers[case] = answers


def _frame(api_key: ApiKey, version: int, body: dict, correlation_id: int) -> bytes:
    header = RequestHeader(
        request_api_key=int(api_key),
        request_api_version=version,
        correlation_id=correlation_id,
        client_id="parity",
    )
    request = encode_request(header, body)
    return struct.pack(">i", len(request)) + request


REFUSED_EXCHANGES = {
    "wrong password": [
        (ApiKey.SASL_HANDSHAKE, {"mechanism": "PLAIN"}),
        (ApiKey.SASL_AUTHENTICATE, {"auth_bytes": plain_client_token("alice", "nope")}),
    ],
    "unknown mechanism": [(ApiKey.SASL_HANDSHAKE, {"mechanism": "GSSAPI"})],
}


@pytest.mark.parametrize("exchange", REFUSED_EXCHANGES)
def test_a_refused_exchange_is_closed_right_after_its_answer(target, exchange) -> None:
    """The connection ends once the refusal is written, without waiting for the client's
    next request, on both brokers."""
    with socket.create_connection(("127.0.0.1", target.sasl_port), timeout=20) as sock:
        for correlation_id, (api_key, body) in enumerate(REFUSED_EXCHANGES[exchange], 1):
            sock.sendall(_frame(api_key, 1, body, correlation_id))
            assert read_frame(sock) is not None  # answered
        assert sock.recv(1) == b""  # then closed


def test_sasl_requests_on_a_plaintext_listener(target, kafkas_answers) -> None:
    answers = outcome(target, [handshake("PLAIN"), authenticate(b"x")], port=target.port)
    if isinstance(target, KafkaBroker):
        assert kafkas_answers["plaintext"] == answers
    else:
        kafkas_answers["plaintext"] = answers


def upsertion(name, mechanism=2, iterations=4096):
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": b"salt",
        "salted_password": b"p" * 64,
    }


SCRAM_ADMIN = {
    "describe named": (
        ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
        {"users": [{"name": n} for n in ("alice", "nobody", "x", "x", "")]},
    ),
    "describe all": (ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, {"users": None}),
    "alter refusals": (
        ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
        {
            "deletions": [{"name": "dora", "mechanism": 1}, {"name": "erin", "mechanism": 2}],
            "upsertions": [
                upsertion("bob", iterations=4095),
                upsertion("carl", iterations=16385),
                upsertion("dan", mechanism=3),
                upsertion(""),
                upsertion("erin"),
                upsertion("fay", mechanism=1),
            ],
        },
    ),
}


def scram_admin_answer(broker, api_key, body):
    with BrokerConnection("127.0.0.1", broker.port) as connection:
        response = connection.request(api_key, 0, body)
    return [
        (
            r.user,
            r.error_code,
            r.error_message,
            [(i.mechanism, i.iterations) for i in getattr(r, "credential_infos", [])],
        )
        for r in response.results
    ]


@pytest.mark.parametrize("case", SCRAM_ADMIN)
def test_scram_credential_answers_are_kafkas(target, kafkas_answers, case) -> None:
    answers = scram_admin_answer(target, *SCRAM_ADMIN[case])
    if isinstance(target, KafkaBroker):
        assert kafkas_answers[case] == answers
    else:
        kafkas_answers[case] = answers


ALICE = ClientSecurity.from_properties(
    {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": jaas(SCRAM_MODULE, "alice", "alice-secret"),
    }
)
DAY_MS, WEEK_MS = 86400000, 604800000


def user(name):
    return {"principal_type": "User", "principal_name": name}


def token_story(broker) -> list:
    """Delegation token requests and what of their answers both brokers must agree on
    (ids, HMACs and times differ: only their shapes are kept)."""
    told: list = []
    with BrokerConnection("127.0.0.1", broker.port) as plaintext:
        told.append(
            plaintext.request(
                ApiKey.CREATE_DELEGATION_TOKEN, 3, {"renewers": [], "max_lifetime_ms": -1}
            ).error_code
        )
    with BrokerConnection("127.0.0.1", broker.sasl_port, security=ALICE) as alice:

        def create(version, **body):
            answer = alice.request(
                ApiKey.CREATE_DELEGATION_TOKEN,
                version,
                {"renewers": [], "max_lifetime_ms": -1, **body},
            )
            told.append(
                (
                    answer.error_code,
                    answer.principal_name,
                    answer.max_timestamp_ms - answer.issue_timestamp_ms,
                    answer.expiry_timestamp_ms - answer.issue_timestamp_ms,
                )
            )
            return answer.hmac

        def describe(owners):
            answer = alice.request(ApiKey.DESCRIBE_DELEGATION_TOKEN, 3, {"owners": owners})
            told.append(
                (
                    answer.error_code,
                    sorted(
                        (t.principal_name, t.token_requester_principal_name, len(t.renewers))
                        for t in answer.tokens
                    ),
                )
            )

        def renew(api_key, hmac, period):
            body = {"hmac": hmac}
            body[
                "renew_period_ms"
                if api_key == ApiKey.RENEW_DELEGATION_TOKEN
                else "expiry_time_period_ms"
            ] = period
            told.append(alice.request(api_key, 2, body).error_code)

        create(3, renewers=[{"principal_type": "Group", "principal_name": "g"}])
        for_bob = create(3, owner_principal_type="User", owner_principal_name="bob")
        mine = create(3, renewers=[user("bob")], max_lifetime_ms=2 * DAY_MS)
        renew(ApiKey.RENEW_DELEGATION_TOKEN, b"no such hmac", -1)
        renew(ApiKey.RENEW_DELEGATION_TOKEN, for_bob, -1)
        describe(None)
        describe([])
        describe([user("bob")])
        renew(ApiKey.EXPIRE_DELEGATION_TOKEN, mine, -1)
        describe(None)
    return told


def test_delegation_token_answers_are_kafkas(target, kafkas_answers) -> None:
    answers = token_story(target)
    if isinstance(target, KafkaBroker):
        assert kafkas_answers["tokens"] == answers
    else:
        kafkas_answers["tokens"] = answers
