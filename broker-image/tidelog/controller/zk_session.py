"""The broker's ZooKeeper session: connecting, closing, and waiting for answers.

:class:`ZkSession` holds the kazoo client; each area of Kafka's znodes is a subclass
(:mod:`.zk_brokers`, :mod:`.zk_configs`, :mod:`.zk_notifications`,
:mod:`.zk_producer_ids`, and the topics in :mod:`.zk_client`), and
:class:`~tidelog.controller.zk_client.KafkaZkClient` is all of them.

Everything here is synchronous (kazoo's own threads do the I/O); callers on the
event loop run these calls in a worker thread. Watches registered here must only hand
events over (seed 003: the controller's ZooKeeper callbacks only enqueue).

kazoo keeps a request made while it has no connection until it has one again, so such a
call waits as long as ZooKeeper is away. A request in flight when the connection drops
fails with ConnectionLoss although the session lives on: :func:`until_answered` asks
again, as Kafka's ZooKeeperClient retries until connected. kazoo also forgets every
watch when its connection drops (it has no SetWatches), and calls each one with an event
of type NONE in state CONNECTING: a watcher that must keep watching arms itself again
then (its request waits for the reconnection). The reads a stopping broker makes take a
``timeout`` (ZooKeeperUnavailableError when it passes), and :meth:`ZkSession.close`
is bounded: a broker whose ZooKeeper is gone still shuts down.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections.abc import Callable, Mapping
from typing import TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import ConnectionLoss, NoNodeError, SessionExpiredError
from kazoo.protocol.serialization import CloseInstance
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent, ZnodeStat
from kazoo.retry import KazooRetry

from tidelog.controller.zk_addresses import ZooKeeperAddresses
from tidelog.controller.zk_data import PERSISTENT_PATHS
from tidelog.controller.zk_security import ZkClientSecurity, secured_kazoo_client

__all__ = [
    "SESSION_ERRORS",
    "ZkError",
    "ZkSession",
    "ZooKeeperStartStopped",
    "ZooKeeperUnavailableError",
    "until_answered",
    "worth_handling",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")
K = TypeVar("K")  # the keys of many znodes read at once

# How long close() waits for kazoo to stop: closing a live session takes one round trip.
# Without a connection there is no session to close, and kazoo's connection thread sees
# the stop within 0.1 s unless it sits in a name lookup or in a connect to an unreachable
# host (up to the session timeout).
CLOSE_TIMEOUT_S = 5.0
DISCONNECTED_CLOSE_TIMEOUT_S = 1.0
# The longest wait between two rounds of connection attempts. kazoo doubles its wait
# after each failed round, up to an hour: a broker whose ZooKeeper was away for a minute
# would find it back only a minute later, its session expired meanwhile, and one that
# starts while its ensemble forms would start that much later. ZooKeeper's own client
# tries again within a second.
RECONNECT_MAX_DELAY_S = 1.0
# How often a bounded request checks the connection while it waits, and a start that
# waits for ZooKeeper whether it should give up.
_POLL_S = 0.1


# ZooKeeper calls fail with these while the session is gone; the broker re-registers
# and re-arms its watches once kazoo has a new one.
SESSION_ERRORS = (SessionExpiredError, ConnectionLoss)


def until_answered(call: Callable[..., T], *args) -> T:
    """``call(*args)``, made again each time it fails with ConnectionLoss: the session
    lives on and kazoo holds the new request until it has reconnected, to this server or
    another of the ensemble. A write whose answer was lost has happened: the call must
    tell its own earlier write apart (a conditional write finds its data, a create finds
    its node). SessionExpiredError and ConnectionClosedError end it."""
    while True:
        try:
            return call(*args)
        except ConnectionLoss:
            logger.info("lost the connection to ZooKeeper: asking again once reconnected")


def worth_handling(event: WatchedEvent | None) -> bool:
    """Whether a watch callback should run its handler: the watched node changed, or
    kazoo's connection dropped (the watch is gone while the session may live on, and the
    handler's request arms it again once kazoo has reconnected). Not when the session
    ended: the broker's new session registers and watches everything anew."""
    if event is None or event.type != EventType.NONE:
        return True
    return event.state == KeeperState.CONNECTING


class ZkError(Exception):
    pass


class ZooKeeperUnavailableError(ZkError):
    """No connection to ZooKeeper, or no answer in time: a request would wait until the
    client reconnects."""


class ZooKeeperStartStopped(ZooKeeperUnavailableError):
    """The broker was asked to stop while its start waited for ZooKeeper."""


def split_connect_string(connect: str) -> tuple[str, str]:
    """``h1:p1,h2:p2/chroot`` → (hosts, chroot or "")."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/")


class ZkSession:
    """One ZooKeeper session, and the reads and waits every area of znodes shares."""

    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        give_up: threading.Event | None = None,
        security: ZkClientSecurity | None = None,
    ):
        self.connect_string = connect
        self._security = security
        # Set by a broker stopped while it starts: start() stops waiting for ZooKeeper.
        self._give_up = give_up or threading.Event()
        self._hosts, self._chroot = split_connect_string(connect)
        self._session_timeout = session_timeout_ms / 1000
        self._connection_timeout = (connection_timeout_ms or session_timeout_ms) / 1000
        self._addresses = ZooKeeperAddresses(
            self._hosts, self._chroot, lambda hosts: self.zk.set_hosts(hosts)
        )
        self.zk = self._kazoo_client(connect)

    @property
    def session_timeout_s(self) -> float:
        """The session timeout this client asks for (``zookeeper.session.timeout.ms``)."""
        return self._session_timeout

    def start(self) -> None:
        """Connect, creating the chroot first if needed; ZooKeeperUnavailableError when no
        server answers within the connection timeout; ZooKeeperStartStopped as soon as
        ``give_up`` is set while it waits. The session's client reconnects to the
        servers' addresses looked up ahead (:mod:`.zk_addresses`)."""
        logger.info(
            "connecting to ZooKeeper at %s (waiting up to %.0f s)",
            self.connect_string,
            self._connection_timeout,
        )
        if self._chroot:  # Kafka creates its chroot on first use
            bootstrap = self._kazoo_client(self._hosts)
            try:
                self._connect(bootstrap)
                bootstrap.ensure_path(self._chroot)
            finally:
                bootstrap.stop()
                bootstrap.close()
        self._addresses.refresh()
        self._connect(self.zk)
        self.zk.add_listener(
            lambda state: state != KazooState.CONNECTED and self._addresses.connection_dropped()
        )
        self._addresses.start()
        for path in PERSISTENT_PATHS:
            self.zk.ensure_path(path)

    def _kazoo_client(self, hosts: str) -> KazooClient:
        return secured_kazoo_client(
            self._security,
            self._addresses.name_of,
            hosts=hosts,
            timeout=self._session_timeout,
            connection_retry=KazooRetry(max_tries=-1, max_delay=RECONNECT_MAX_DELAY_S),
        )

    def _connect(self, client: KazooClient) -> None:
        """kazoo's start(timeout), also ended by ``give_up``."""
        connected = client.start_async()
        deadline = time.monotonic() + self._connection_timeout
        while not connected.wait(_POLL_S):
            if self._give_up.is_set() or time.monotonic() >= deadline:
                client.stop()  # it would go on trying in the background
                client.close()
                if self._give_up.is_set():
                    raise ZooKeeperStartStopped(
                        f"stopped before ZooKeeper at {self.connect_string} answered"
                    )
                raise ZooKeeperUnavailableError(
                    f"no ZooKeeper answered at {self.connect_string} in time"
                )

    def close(self) -> None:
        """End the session and stop kazoo's threads, waiting at most ``CLOSE_TIMEOUT_S``
        (``DISCONNECTED_CLOSE_TIMEOUT_S`` without a connection).

        Connected, this closes the session and ZooKeeper deletes its ephemeral nodes at
        once. Without a connection there is no session to close (the server expires it
        and its ephemeral nodes after the session timeout), and kazoo's stop() waits for
        its connection thread, which may be in a name lookup or in a connect to an
        unreachable host. Past the timeout the client is left to stop on its own (its
        threads are daemons) and closed as kazoo closes it when its connection thread
        ends: every request still waiting fails with ConnectionLoss, so no worker thread
        waits on ZooKeeper any longer, and later calls fail at once."""
        self._addresses.stop()
        timeout = CLOSE_TIMEOUT_S if self.zk.connected else DISCONNECTED_CLOSE_TIMEOUT_S
        failure: list[BaseException] = []

        def stop() -> None:
            try:
                self.zk.stop()
            except Exception as error:  # kazoo's WriterNotClosedException
                failure.append(error)

        stopper = threading.Thread(target=stop, name="zookeeper-close", daemon=True)
        stopper.start()
        stopper.join(timeout)
        if stopper.is_alive() or failure:
            reason = f"{failure[0]!r}" if failure else f"not within {timeout:g} s"
            logger.warning("the ZooKeeper client did not stop (%s); not waiting for it", reason)
            # What kazoo does when its connection thread ends (private: kazoo has no
            # public way to fail the requests it holds); that drops the queued close
            # request, queued again so that a connect that still succeeds closes too.
            self.zk._session_callback(KeeperState.CLOSED)
            self.zk._queue.append((CloseInstance, None))
            return
        self.zk.close()

    @property
    def connected(self) -> bool:
        """Whether kazoo has a connection (requests are answered) right now."""
        return self.zk.connected

    def _wait(self, result, timeout: float | None, what: str):
        """The outcome of an asynchronous kazoo request. With a ``timeout``, waiting at
        most that many seconds, and no longer than the connection lasts: kazoo fails the
        requests in flight when it loses its connection, but holds one made after that
        until it reconnects."""
        if timeout is None:
            return result.get()
        deadline = time.monotonic() + timeout
        while not result.wait(min(_POLL_S, max(deadline - time.monotonic(), 0))):
            if not self.zk.connected:
                raise ZooKeeperUnavailableError(f"lost the connection to ZooKeeper asking {what}")
            if time.monotonic() >= deadline:
                raise ZooKeeperUnavailableError(
                    f"ZooKeeper did not answer {what} within {timeout:g} s"
                )
        return result.get()

    @property
    def session_id(self) -> int:
        return self.zk.client_id[0] if self.zk.client_id else 0

    def on_session_change(self, lost: Callable[[], None], renewed: Callable[[], None]) -> None:
        """Call ``lost`` when the session expired (its ephemeral nodes and watches are
        gone) and ``renewed`` once kazoo has connected a new session. Both run in kazoo's
        thread and must only hand over."""
        expired = False

        def listener(state: str) -> None:
            nonlocal expired
            if state == KazooState.LOST:
                expired = True
                lost()
            elif state == KazooState.CONNECTED and expired:
                expired = False
                renewed()

        self.zk.add_listener(listener)

    def _read_many(self, paths: Mapping[K, str]) -> dict[K, tuple[bytes, ZnodeStat]]:
        """Many znodes' data and stat, read in one pipelined round trip; one that does not
        exist is left out."""
        pending = {key: self.zk.get_async(path) for key, path in paths.items()}
        found = {}
        for key, result in pending.items():
            with contextlib.suppress(NoNodeError):
                found[key] = result.get()
        return found
