"""Kafka's connection limits on a real broker: ``max.connections.per.ip`` (and its
overrides), ``max.connections`` (the broker's, with the inter-broker listener exempt as
in KIP-402, and a listener's own), all counted at accept; a connection past a limit is
closed at once with one log line, the others keep being served, and a change made
through IncrementalAlterConfigs applies to the next connection.

The test's clients connect from 127.0.0.2 (any 127/8 address is this machine's), so that
the broker's connections to itself, from 127.0.0.1, never count against the limits a
test holds its own connections to."""

from __future__ import annotations

import contextlib
import socket
import struct

import pytest

from integration.broker_process import BrokerProcess, two_listener_broker
from integration.clients import read_frame
from tidelog.admin import AdminClient
from tidelog.admin.topics import AlterConfigOp
from tidelog.protocol import ApiKey, RequestHeader, encode_request
from tidelog.protocol.admin_enums import ConfigResourceType, OpType
from waiting import wait_until

CLIENT_ADDRESS = "127.0.0.2"
API_VERSIONS = encode_request(
    RequestHeader(
        request_api_key=int(ApiKey.API_VERSIONS),
        request_api_version=0,
        correlation_id=1,
        client_id="limits",
    ),
    {},
)


@contextlib.contextmanager
def connected(port: int):
    """A connection from CLIENT_ADDRESS that the broker served (ApiVersions answered);
    ConnectionError when the broker closed it instead."""
    sock = socket.create_connection(
        ("127.0.0.1", port), timeout=10, source_address=(CLIENT_ADDRESS, 0)
    )
    try:
        sock.sendall(struct.pack(">i", len(API_VERSIONS)) + API_VERSIONS)
        try:
            answer = read_frame(sock)
        except ConnectionResetError:
            answer = None
        if answer is None:
            raise ConnectionError("the broker closed the connection")
        yield sock
    finally:
        sock.close()


def refused(port: int) -> bool:
    """Whether the broker closes a new connection before answering it."""
    try:
        with connected(port):
            return False
    except ConnectionError:
        return True


def held_until_refused(port: int, stack: contextlib.ExitStack, at_most: int = 10) -> int:
    """Open connections (kept in ``stack``) until the broker refuses one, at most
    ``at_most``: how many it took."""
    for taken in range(at_most):
        try:
            stack.enter_context(connected(port))
        except ConnectionError:
            return taken
    return at_most


@pytest.fixture
def limited_broker(tmp_path, zk_chroot):
    broker, broker.internal_port = two_listener_broker(
        tmp_path / "broker",
        zk_chroot,
        "INTERNAL",
        {
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT",
            "inter.broker.listener.name": "INTERNAL",
            "max.connections.per.ip": "3",
        },
    )
    broker.start()
    yield broker
    assert broker.stop() == 0, broker.log()[-3000:]


def test_connections_past_the_per_ip_limit_are_closed_at_once(limited_broker):
    port = limited_broker.port
    with contextlib.ExitStack() as held:
        assert held_until_refused(port, held) == 3
        assert refused(limited_broker.internal_port)  # the address's count is the broker's
        assert (
            f"refused a connection on PLAINTEXT: too many connections from {CLIENT_ADDRESS} "
            "(max.connections.per.ip)" in limited_broker.log()
        )
        # The admitted connections are served on; a closed one's place is free again
        # once the broker saw it go.
        held.close()
        wait_until(lambda: not refused(port), "a new connection is admitted")
    # Another address has its own count.
    admin = AdminClient(limited_broker.bootstrap)
    assert admin.live_brokers() == [1]


def alter_cluster_wide(broker: BrokerProcess, *operations: AlterConfigOp) -> None:
    admin = AdminClient(broker.bootstrap)
    errors = admin.incremental_alter_configs(ConfigResourceType.BROKER, {"": list(operations)})
    assert errors == {"": None}


def lift_per_ip_limit(broker: BrokerProcess) -> None:
    """An override of 50 connections for the test's address, applied once the broker
    takes more than the per-IP limit of 3 from it."""
    alter_cluster_wide(
        broker,
        AlterConfigOp("max.connections.per.ip.overrides", OpType.SET, f"{CLIENT_ADDRESS}:50"),
    )

    def lifted() -> bool:
        with contextlib.ExitStack() as probes:
            return held_until_refused(broker.port, probes, at_most=5) == 5

    wait_until(lifted, "the per-IP override applies")


def test_limits_change_at_run_time_and_the_inter_broker_listener_is_exempt(limited_broker):
    lift_per_ip_limit(limited_broker)
    alter_cluster_wide(limited_broker, AlterConfigOp("max.connections", OpType.SET, "3"))
    port, internal = limited_broker.port, limited_broker.internal_port

    def broker_limit_applies() -> bool:
        with contextlib.ExitStack() as probes:
            return held_until_refused(port, probes, at_most=5) <= 3

    # The broker's own connections count towards its limit too, as in Kafka.
    wait_until(broker_limit_applies, "max.connections=3 applies to new connections")
    with contextlib.ExitStack() as held:
        held_until_refused(port, held, at_most=5)
        # Past the broker's limit, other brokers still reach it on the inter-broker
        # listener.
        for _ in range(3):
            held.enter_context(connected(internal))
    assert (
        "refused a connection on PLAINTEXT: too many connections to this broker "
        "(max.connections)" in limited_broker.log()
    )


def test_a_listeners_own_limit(limited_broker):
    lift_per_ip_limit(limited_broker)
    alter_cluster_wide(
        limited_broker,
        AlterConfigOp("listener.name.plaintext.max.connections", OpType.SET, "2"),
    )

    def listener_limit_applies() -> bool:
        with contextlib.ExitStack() as probes:
            return held_until_refused(limited_broker.port, probes) <= 2

    wait_until(listener_limit_applies, "the listener's max.connections=2 applies")
    with contextlib.ExitStack() as held:
        for _ in range(3):  # the other listener has no such limit
            held.enter_context(connected(limited_broker.internal_port))
    log = limited_broker.log()
    assert "too many connections on listener PLAINTEXT (its max.connections)" in log
