"""Fuzzed TLS handshakes on an SSL listener (hypothesis): random bytes, a ClientHello
cut short or followed by garbage, plain Kafka requests sent to a TLS port, a handshake
begun and abandoned. Each such connection is closed by the broker with one log line
(Kafka's "failed authentication ... SSL handshake failed"), the broker never logs a
traceback, and a TLS producer on the same listener is served all along."""

from __future__ import annotations

import contextlib
import socket
import ssl
import struct
import threading

import pytest
from confluent_kafka import Producer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from integration.clients import create_topics
from integration.tls_files import TlsFiles, ssl_broker
from tidelog.protocol import ApiKey, RequestHeader, encode_request
from waiting import wait_until


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> TlsFiles:
    return TlsFiles.make(tmp_path_factory.mktemp("tls-fuzz"))


@pytest.fixture(scope="module")
def broker(module_chroot, tmp_path_factory, tls):
    process = ssl_broker(tls, tmp_path_factory.mktemp("tls-fuzz-broker"), module_chroot)
    create_topics(process.bootstrap, ["steady"], 1)
    yield process
    assert process.stop() == 0, process.log()[-3000:]


class SteadyProducer(threading.Thread):
    """A confluent-kafka producer over TLS, sending a record every 20 ms."""

    def __init__(self, port: int, tls: TlsFiles):
        super().__init__(daemon=True)
        self.producer = Producer(
            {
                "bootstrap.servers": f"127.0.0.1:{port}",
                "security.protocol": "SSL",
                "ssl.ca.location": str(tls.ca_file),
                "acks": "1",
            }
        )
        self.delivered = 0
        self.errors: list[str] = []
        self._stopping = threading.Event()

    def _report(self, error, _message) -> None:
        if error is None:
            self.delivered += 1
        else:
            self.errors.append(str(error))

    def run(self) -> None:
        while not self._stopping.wait(0.02):
            self.producer.produce("steady", b"steady", on_delivery=self._report)
            self.producer.poll(0)

    def stop(self) -> None:
        self._stopping.set()
        self.join(15)
        self.producer.flush(15)


@pytest.fixture(scope="module")
def steady(broker, tls):
    producer = SteadyProducer(broker.ssl_port, tls)
    producer.start()
    wait_until(lambda: producer.delivered > 0, "the steady producer delivers over TLS")
    yield producer
    producer.stop()


def _client_hello() -> bytes:
    """The first flight of a real TLS client (its ClientHello)."""
    incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
    context = ssl.create_default_context()
    tls = context.wrap_bio(incoming, outgoing, server_hostname="localhost")
    with contextlib.suppress(ssl.SSLWantReadError):  # it waits for the server's answer
        tls.do_handshake()
    return outgoing.read()


CLIENT_HELLO = _client_hello()
KAFKA_REQUEST = encode_request(
    RequestHeader(
        request_api_key=int(ApiKey.API_VERSIONS),
        request_api_version=3,
        correlation_id=1,
        client_id="plain",
    ),
    {"client_software_name": "x", "client_software_version": "1"},
)


@st.composite
def first_flights(draw) -> bytes:
    """What one fuzzing connection sends before it stops sending."""
    kind = draw(st.sampled_from(["noise", "cut", "garbage after hello", "kafka", "record"]))
    if kind == "noise":
        return draw(st.binary(min_size=1, max_size=600))
    if kind == "cut":
        return CLIENT_HELLO[: draw(st.integers(1, len(CLIENT_HELLO) - 1))]
    if kind == "garbage after hello":
        return CLIENT_HELLO + draw(st.binary(min_size=1, max_size=300))
    if kind == "kafka":
        return struct.pack(">i", len(KAFKA_REQUEST)) + KAFKA_REQUEST
    # A TLS record header of any type and version around a random body.
    body = draw(st.binary(max_size=300))
    record_type = draw(st.sampled_from([20, 21, 22, 23, 99]))
    return struct.pack(">BHH", record_type, draw(st.integers(0, 0xFFFF)), len(body)) + body


def send_and_wait_for_close(port: int, flight: bytes) -> None:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        try:
            sock.sendall(flight)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(4096):
                pass
        except OSError:
            return  # reset: closed by the broker


@settings(
    max_examples=120, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(flight=first_flights())
def test_fuzzed_tls_handshakes_never_hurt_the_broker(broker, steady, flight) -> None:
    send_and_wait_for_close(broker.ssl_port, flight)
    assert broker.process.poll() is None


def test_after_the_fuzzing_the_steady_producer_went_on(broker, steady) -> None:
    delivered = steady.delivered
    wait_until(lambda: steady.delivered > delivered + 5, "the steady producer delivers on")
    assert steady.errors == []
    log = broker.log()
    assert "Traceback" not in log and " ERROR " not in log, log[-5000:]
    failures = log.count("failed authentication with 127.0.0.1 (SSL handshake failed: ")
    assert failures >= 100, log[-3000:]
