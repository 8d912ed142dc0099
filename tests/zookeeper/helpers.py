"""Shared by the ZooKeeper tests: a kazoo session as a context manager, an ensemble of
three servers, the server that holds a session, a server's mode."""

from __future__ import annotations

import os
import signal
import socket
from collections.abc import Collection, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from kazoo.client import KazooClient

from tidelog.zookeeper import ZooKeeperServer, four_letter_word
from tidelog.zookeeper.server import ZooKeeperTls


@contextmanager
def kazoo_session(hosts: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=hosts)
    client.start(timeout=10)
    try:
        yield client
    finally:
        client.stop()
        client.close()


@contextmanager
def zookeeper_ensemble(
    directory: Path,
    tls: Mapping[int, ZooKeeperTls] | None = None,
    serving: Collection[int] = (1, 2, 3),
) -> Iterator[dict[int, ZooKeeperServer]]:
    """Three servers of one ensemble on loopback (what a Cluster's ZooKeeper StatefulSet
    runs), by id, each with its ``tls`` if given; yielded once those in ``serving``
    serve; each is stopped afterwards (resumed first if it was frozen)."""
    tls = tls or {}
    ports = [_free_loopback_port() for _ in range(9)]
    peers = {i + 1: f"127.0.0.1:{ports[3 * i + 1]}:{ports[3 * i + 2]}" for i in range(3)}
    servers = {
        i: ZooKeeperServer(
            directory / f"zk-{i}", port=ports[3 * (i - 1)], servers=peers, my_id=i, tls=tls.get(i)
        )
        for i in peers
    }
    try:
        for server in servers.values():  # none serves before a quorum is up
            server.start(wait=False)
        for server_id in serving:
            servers[server_id].wait_until_serving(60)
        yield servers
    finally:
        for server in servers.values():
            if server.is_running:
                os.kill(server.pid, signal.SIGCONT)
            server.stop()


def ensemble_connect_string(servers: dict[int, ZooKeeperServer]) -> str:
    return ",".join(server.connect_string for server in servers.values())


def server_holding(servers: dict[int, ZooKeeperServer], session_id: int) -> int | None:
    """The id of the server the session is connected to (``cons`` lists each
    connection's ``sid``), None while it is connected to none."""
    for server_id, server in servers.items():
        if f"sid=0x{session_id:x}," in four_letter_word("127.0.0.1", server.port, "cons"):
            return server_id
    return None


def server_mode(server: ZooKeeperServer) -> str | None:
    """leader or follower, from ``srvr``; None while the answer is cut short (ZooKeeper
    may reset a four-letter-word connection)."""
    try:
        answer = four_letter_word("127.0.0.1", server.port, "srvr")
    except OSError:
        return None
    return answer.split("Mode: ")[1].split()[0] if "Mode: " in answer else None


def _free_loopback_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]
