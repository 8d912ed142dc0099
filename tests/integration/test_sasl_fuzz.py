"""Fuzzed SASL exchanges on a SASL_PLAINTEXT listener (hypothesis): random frames before
any handshake, handshakes of any version and mechanism, random raw tokens after a v0
handshake, random SaslAuthenticate bytes after a v1 one, a well-begun SCRAM exchange with
a random final message, other requests before authentication. Every such connection ends
with the broker closing it once the client is done, the broker never logs a traceback,
and an authenticated producer on the same listener is served all along."""

from __future__ import annotations

import socket
import struct
import threading

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka import KafkaProducer

from integration.broker_process import two_listener_broker
from integration.clients import create_topics, read_frame
from integration.sasl_setup import (
    MECHANISMS,
    create_scram_user,
    sasl_listener_overrides,
    wait_for_login,
)
from tidelog.protocol import ApiKey, RequestHeader, encode_request
from tidelog.security.sasl_client import ScramClient, plain_client_token
from waiting import wait_until

USERS = {"steady": "steady-secret"}


@pytest.fixture(scope="module")
def broker(module_chroot, tmp_path_factory):
    process, sasl = two_listener_broker(
        tmp_path_factory.mktemp("sasl-fuzz"),
        module_chroot,
        "SASL_PLAINTEXT",
        {
            "inter.broker.listener.name": "PLAINTEXT",
            "connection.failed.authentication.delay.ms": "0",
            "sasl.server.max.receive.size": "4096",
            **sasl_listener_overrides("SASL_PLAINTEXT", MECHANISMS, USERS),
        },
    )
    process.start()
    create_scram_user(process.port, "steady", USERS["steady"])
    wait_for_login(sasl, "SCRAM-SHA-512", "steady", USERS["steady"])
    create_topics(process.bootstrap, ["steady"], 1)
    process.sasl_port = sasl
    yield process
    assert process.stop() == 0, process.log()[-3000:]


class SteadyProducer(threading.Thread):
    """An authenticated kafka-python producer sending a record every 20 ms."""

    def __init__(self, port: int):
        super().__init__(daemon=True)
        self.producer = KafkaProducer(
            bootstrap_servers=f"127.0.0.1:{port}",
            security_protocol="SASL_PLAINTEXT",
            sasl_mechanism="SCRAM-SHA-512",
            sasl_plain_username="steady",
            sasl_plain_password=USERS["steady"],
            acks=1,
            max_block_ms=5000,
        )
        self.sent = 0
        self.errors: list[Exception] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(0.02):
            try:
                self.producer.send("steady", b"steady-%d" % self.sent).get(timeout=10)
                self.sent += 1
            except Exception as error:
                self.errors.append(error)

    def stop(self) -> None:
        self._stopping.set()
        self.join(15)
        self.producer.close(timeout=5)


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def request(api_key: int, version: int, body: dict, correlation_id: int = 1) -> bytes:
    header = RequestHeader(
        request_api_key=api_key,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id="fuzzer",
    )
    return framed(encode_request(header, body))


def handshake(version: int, mechanism: str) -> bytes:
    return request(ApiKey.SASL_HANDSHAKE, version, {"mechanism": mechanism})


def authenticate(version: int, token: bytes) -> bytes:
    return request(ApiKey.SASL_AUTHENTICATE, version, {"auth_bytes": token}, 2)


mechanisms = st.one_of(st.sampled_from([*MECHANISMS, "GSSAPI", ""]), st.text(max_size=20))
tokens = st.one_of(
    st.binary(max_size=300),
    st.sampled_from(
        [
            plain_client_token("steady", "wrong"),
            plain_client_token("steady", USERS["steady"]),
            ScramClient("SCRAM-SHA-256", "steady", "x").first(),
            b"n,,n=steady,r=" + b"A" * 200,
        ]
    ),
)


@st.composite
def exchanges(draw) -> list[bytes]:
    """What one fuzzing connection sends, frame by frame."""
    kind = draw(st.sampled_from(["noise", "raw", "authenticate", "scram", "other", "oversized"]))
    if kind == "noise":
        return [framed(draw(st.binary(max_size=200))) for _ in range(draw(st.integers(1, 3)))]
    if kind == "raw":
        return [handshake(0, draw(mechanisms)), *(framed(draw(tokens)) for _ in range(2))]
    if kind == "authenticate":
        version = draw(st.integers(0, 2))
        return [
            handshake(1, draw(mechanisms)),
            *(authenticate(version, draw(tokens)) for _ in range(draw(st.integers(1, 3)))),
        ]
    if kind == "scram":
        mechanism = draw(st.sampled_from(["SCRAM-SHA-256", "SCRAM-SHA-512"]))
        client = ScramClient(mechanism, "steady", USERS["steady"])
        return [
            handshake(1, mechanism),
            authenticate(1, client.first()),
            authenticate(1, b"c=biws,r=" + draw(st.binary(max_size=80)) + b",p=" + draw(tokens)),
        ]
    if kind == "other":
        api_key = draw(st.sampled_from([ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.FIND_COORDINATOR]))
        return [framed(struct.pack(">hhih", api_key, 1, 1, 0) + draw(st.binary(max_size=40)))]
    return [framed(b"\x00\x11\x00\x01" + b"x" * 5000)]


def exchange(port: int, frames: list[bytes]) -> None:
    """Send the frames, say we are done, read until the broker closes the connection."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(b"".join(frames))
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            return  # closed already, mid-send
        try:
            while read_frame(sock) is not None:
                pass
        except (ConnectionResetError, struct.error):
            return


@pytest.fixture(scope="module")
def steady(broker):
    producer = SteadyProducer(broker.sasl_port)
    producer.start()
    yield producer
    producer.stop()


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(frames=exchanges())
def test_fuzzed_sasl_exchanges_never_hurt_the_broker(broker, steady, frames) -> None:
    exchange(broker.sasl_port, frames)
    assert broker.process.poll() is None


def test_after_the_fuzzing_the_steady_producer_went_on(broker, steady) -> None:
    sent = steady.sent
    wait_until(lambda: steady.sent > sent + 5, "the steady producer sends on")
    assert steady.errors == []
    log = broker.log()
    assert "Traceback" not in log and " ERROR " not in log, log[-5000:]
