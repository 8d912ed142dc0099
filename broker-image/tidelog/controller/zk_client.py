"""The broker's ZooKeeper client: Kafka's znodes read and written through kazoo.

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
``timeout`` (ZooKeeperUnavailableError when it passes), and :meth:`KafkaZkClient.close`
is bounded: a broker whose ZooKeeper is gone still shuts down.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace
from typing import TypeVar

from kazoo.client import KazooClient, KazooState
from kazoo.exceptions import (
    BadVersionError,
    ConnectionLoss,
    NodeExistsError,
    NoNodeError,
    RolledBackError,
    SessionExpiredError,
)
from kazoo.protocol.serialization import CloseInstance
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent, ZnodeStat
from kazoo.retry import KazooRetry

from tidelog.controller.zk_addresses import ZooKeeperAddresses
from tidelog.controller.zk_data import (
    BROKER_IDS,
    BROKER_SEQID,
    CLUSTER_ID,
    CONFIG_CHANGES,
    CONTROLLER,
    CONTROLLER_EPOCH,
    DEFAULT_ENTITY,
    DELETE_TOPICS,
    ISR_CHANGE_NOTIFICATION,
    ISR_CHANGE_PREFIX,
    LOG_DIR_EVENT_NOTIFICATION,
    LOG_DIR_EVENT_PREFIX,
    LOG_DIR_FAILURE_EVENT,
    PERSISTENT_PATHS,
    PRODUCER_ID_BLOCK,
    REASSIGN_PARTITIONS,
    TOPICS,
    BrokerRegistration,
    PartitionState,
    TopicAssignment,
    broker_path,
    config_path,
    decode_json,
    decode_reassignments,
    encode_json,
    encode_reassignments,
    new_uuid,
    partition_state_path,
    topic_path,
    uuid_to_base64,
)

__all__ = [
    "CONFIG_CHANGE_EXPIRATION_MS",
    "PRODUCER_ID_BLOCK_SIZE",
    "REGISTRATION_WAIT_FACTOR",
    "SESSION_ERRORS",
    "BrokerIdTakenError",
    "KafkaZkClient",
    "PartitionsChangedError",
    "ReassignmentInProgressError",
    "StalePartitionStateError",
    "TopicExistsError",
    "ZkError",
    "ZooKeeperStartStopped",
    "ZooKeeperUnavailableError",
    "config_change_number",
    "until_answered",
    "worth_handling",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")
K = TypeVar("K")  # the keys of many znodes read at once

PRODUCER_ID_BLOCK_SIZE = 1000
RESERVED_BROKER_MAX_ID = 1000
# Kafka removes config change notifications this long after they were made.
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
CONFIG_CHANGE_PREFIX = "config_change_"
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
# How long a starting broker waits, in session timeouts, for the registration of a session
# that is not its own to go (see KafkaZkClient.register_broker). ZooKeeper expires a
# session within one tickTime after its timeout, and a session timeout is at least two
# ticks (ZooKeeper's minSessionTimeout), so an abandoned session is gone within 1.5.
REGISTRATION_WAIT_FACTOR = 1.5


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


class BrokerIdTakenError(ZkError):
    """Another live broker is registered with this id (or a persistent znode is there)."""


class TopicExistsError(ZkError):
    error_code = 36  # TOPIC_ALREADY_EXISTS


class ReassignmentInProgressError(ZkError):
    error_code = 60  # REASSIGNMENT_IN_PROGRESS


class StalePartitionStateError(ZkError):
    """A partition state znode changed since it was read (conditional write failed)."""


class PartitionsChangedError(ZkError):
    """The topic's partitions changed between the check and the write (CreatePartitions)."""

    error_code = 37  # INVALID_PARTITIONS


def config_change_number(name: str) -> int:
    """``config_change_0000000042`` → 42."""
    return int(name[len(CONFIG_CHANGE_PREFIX) :])


def _session_hex(session_id: int) -> str:
    """A session id as ZooKeeper's own logs print it (``0x`` and 64 bits unsigned)."""
    return f"0x{session_id & 0xFFFF_FFFF_FFFF_FFFF:x}"


def split_connect_string(connect: str) -> tuple[str, str]:
    """``h1:p1,h2:p2/chroot`` → (hosts, chroot or "")."""
    hosts, slash, chroot = connect.partition("/")
    return hosts, (slash + chroot).rstrip("/")


class KafkaZkClient:
    def __init__(
        self,
        connect: str,
        *,
        session_timeout_ms: int = 18000,
        connection_timeout_ms: int | None = None,
        give_up: threading.Event | None = None,
    ):
        self.connect_string = connect
        # Set by a broker stopped while it starts: start() stops waiting for ZooKeeper.
        self._give_up = give_up or threading.Event()
        self._hosts, self._chroot = split_connect_string(connect)
        self._session_timeout = session_timeout_ms / 1000
        self._connection_timeout = (connection_timeout_ms or session_timeout_ms) / 1000
        self.zk = self._kazoo_client(connect)
        self._addresses = ZooKeeperAddresses(self._hosts, self._chroot, self.zk.set_hosts)

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
        return KazooClient(
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

    # -- cluster and brokers -------------------------------------------------------------

    def get_or_create_cluster_id(self) -> str:
        try:
            data, _ = self.zk.get(CLUSTER_ID)
            return decode_json(data)["id"]
        except NoNodeError:
            pass
        proposed = uuid_to_base64(new_uuid())
        try:
            self.zk.create(CLUSTER_ID, encode_json({"version": "1", "id": proposed}), makepath=True)
            return proposed
        except NodeExistsError:  # another broker was first
            data, _ = self.zk.get(CLUSTER_ID)
            return decode_json(data)["id"]

    def generate_broker_id(self) -> int:
        """Kafka's broker.id generation: a sequence above reserved.broker.max.id."""
        stat = self.zk.set(BROKER_SEQID, b"")
        return RESERVED_BROKER_MAX_ID + stat.version

    def register_broker(self, registration: BrokerRegistration) -> None:
        """Create ``/brokers/ids/<id>``, ephemeral, owned by this session.

        When the node exists, its ``ephemeralOwner`` says whose it is (Kafka's
        ``KafkaZkClient.registerBroker`` checks the owner the same way, but fails at
        once on another session's node, so a quick restart after a crash fails too):

        - this session: the create went through before a lost connection hid the
          answer; the registration is ours and stands.
        - no session (a persistent node): nothing will remove it;
          :class:`BrokerIdTakenError` at once.
        - another session: the previous run of this broker, killed before it could
          close its session (ZooKeeper deletes the node when that session expires), or
          a live broker with this id (seed 000: a second broker with a taken id fails).
          Logged once per owner; then the broker waits, with a watch on the node (no
          polling), for it to go, and registers. A live broker's node never goes: past
          ``REGISTRATION_WAIT_FACTOR`` x the session timeout, :class:`BrokerIdTakenError`.

        ZooKeeper tells no client another session's timeout (and kazoo does not keep even
        its own negotiated one), so the bound is this client's
        ``zookeeper.session.timeout.ms``, taken to be the owner's: true of the same broker
        restarted with the same config, which the server grants the same timeout.
        """
        path = broker_path(registration.broker_id)
        bound = REGISTRATION_WAIT_FACTOR * self._session_timeout
        deadline: float | None = None
        announced: set[int] = set()
        while True:
            try:
                self.zk.create(path, registration.encode(), ephemeral=True)
                return
            except NodeExistsError:
                pass
            changed = threading.Event()
            stat = self.zk.exists(path, watch=lambda _event, changed=changed: changed.set())
            if stat is None:
                continue  # it went meanwhile
            owner = stat.ephemeralOwner
            if owner == self.session_id:
                return
            if owner == 0:
                raise BrokerIdTakenError(
                    f"broker.id {registration.broker_id} is taken in ZooKeeper by a "
                    f"persistent znode {path}, which no session expiry removes"
                )
            now = time.monotonic()
            if deadline is None:
                deadline = now + bound
            if owner not in announced:
                announced.add(owner)
                logger.warning(
                    "waiting for the previous registration of broker.id %d (owner session "
                    "%s) to expire: up to %g s (%g x zookeeper.session.timeout.ms)",
                    registration.broker_id,
                    _session_hex(owner),
                    round(deadline - now, 1),
                    REGISTRATION_WAIT_FACTOR,
                )
            if now >= deadline:
                raise BrokerIdTakenError(
                    f"broker.id {registration.broker_id} is already registered in ZooKeeper "
                    f"by another running broker (session {_session_hex(owner)} still held "
                    f"it after {bound:g} s)"
                )
            changed.wait(deadline - now)

    def live_brokers(
        self, watch: Callable | None = None, timeout: float | None = None
    ) -> dict[int, BrokerRegistration]:
        """The registered brokers; ``timeout`` bounds each read."""
        brokers = {}
        children = self.zk.get_children_async(BROKER_IDS, watch=watch)
        for child in self._wait(children, timeout, f"for {BROKER_IDS}"):
            path = f"{BROKER_IDS}/{child}"
            try:
                data, stat = self._wait(self.zk.get_async(path), timeout, f"for {path}")
            except NoNodeError:
                continue
            brokers[int(child)] = BrokerRegistration.decode(int(child), data, stat.czxid)
        return brokers

    def broker_epoch(self, broker_id: int, timeout: float | None = None) -> int | None:
        """The broker epoch (its registration's czxid), None while it is not registered."""
        path = broker_path(broker_id)
        stat = self._wait(self.zk.exists_async(path), timeout, f"for {path}")
        return None if stat is None else stat.czxid

    # -- controller ------------------------------------------------------------------------

    def try_become_controller(self, broker_id: int) -> int | None:
        """Create the ephemeral /controller node and bump /controller_epoch, in one
        transaction conditional on the epoch's version (as Kafka does), so nobody sees a
        controller without its epoch; return the new epoch, or None when another broker
        is the controller."""
        document = {"version": 1, "brokerid": broker_id, "timestamp": str(int(time.time() * 1000))}
        while True:
            try:
                data, stat = self.zk.get(CONTROLLER_EPOCH)
                epoch, version = int(data.decode()) + 1, stat.version
            except NoNodeError:
                epoch, version = 1, None
            transaction = self.zk.transaction()
            transaction.create(CONTROLLER, encode_json(document), ephemeral=True)
            if version is None:
                transaction.create(CONTROLLER_EPOCH, str(epoch).encode())
            else:
                transaction.set_data(CONTROLLER_EPOCH, str(epoch).encode(), version=version)
            results = transaction.commit()
            if not any(isinstance(r, Exception) for r in results):
                return epoch
            if isinstance(results[0], NodeExistsError):
                return self._own_controller_epoch(broker_id)
            # The epoch moved (or appeared) meanwhile: read it again.

    def _own_controller_epoch(self, broker_id: int) -> int | None:
        """The epoch, when ``/controller`` names this broker and is this session's: an
        earlier attempt whose answer the connection lost made it the controller."""
        try:
            data, stat = self.zk.get(CONTROLLER)
        except NoNodeError:
            return None
        if stat.ephemeralOwner != self.session_id or decode_json(data)["brokerid"] != broker_id:
            return None
        epoch, _ = self.zk.get(CONTROLLER_EPOCH)
        return int(epoch.decode())

    def delete_controller(self, broker_id: int) -> bool:
        """Delete ``/controller`` if it names ``broker_id``, so that the brokers run for
        controller again, as an operator deleting the node forces; True when this call
        deleted it. (Read and delete are a moment apart: a node another broker created
        in between would go too, which costs one more election, nothing else.)"""
        try:
            data, stat = self.zk.get(CONTROLLER)
            if decode_json(data)["brokerid"] != broker_id:
                return False
            self.zk.delete(CONTROLLER, version=stat.version)
        except (NoNodeError, BadVersionError):
            return False
        return True

    def controller_id(
        self, watch: Callable | None = None, timeout: float | None = None
    ) -> int | None:
        """The broker ``/controller`` names; ``timeout`` bounds each read."""
        what = f"for {CONTROLLER}"
        try:
            data, _ = self._wait(self.zk.get_async(CONTROLLER, watch=watch), timeout, what)
        except NoNodeError:
            if watch is not None:
                self._wait(self.zk.exists_async(CONTROLLER, watch=watch), timeout, what)
            return None
        return decode_json(data)["brokerid"]

    # -- topics ----------------------------------------------------------------------------

    def topics(self, watch: Callable | None = None) -> list[str]:
        return sorted(self.zk.get_children(TOPICS, watch=watch))

    def topic_assignment(self, topic: str) -> TopicAssignment | None:
        try:
            data, _ = self.zk.get(topic_path(topic))
        except NoNodeError:
            return None
        return TopicAssignment.decode(topic, data)

    def topic_assignments(self, topics: Iterable[str]) -> dict[str, TopicAssignment]:
        """Many topics' assignments, read in one pipelined round trip; a topic gone
        meanwhile is left out."""
        found = self._read_many({topic: topic_path(topic) for topic in topics})
        return {topic: TopicAssignment.decode(topic, data) for topic, (data, _) in found.items()}

    def _read_many(self, paths: Mapping[K, str]) -> dict[K, tuple[bytes, ZnodeStat]]:
        """Many znodes' data and stat, read in one pipelined round trip; one that does not
        exist is left out."""
        pending = {key: self.zk.get_async(path) for key, path in paths.items()}
        found = {}
        for key, result in pending.items():
            with contextlib.suppress(NoNodeError):
                found[key] = result.get()
        return found

    def create_topic(self, assignment: TopicAssignment, config: Mapping[str, str]) -> None:
        """Topic config first, then the assignment (as Kafka does), atomically."""
        transaction = self.zk.transaction()
        config_node = config_path("topics", assignment.topic)
        if self.zk.exists(config_node):
            transaction.set_data(config_node, _config_document(config))
        else:
            transaction.create(config_node, _config_document(config))
        transaction.create(topic_path(assignment.topic), assignment.encode())
        results = transaction.commit()
        # Operations before the failing one report RolledBackError; find the cause.
        failures = [r for r in results if isinstance(r, Exception)]
        failure = next((r for r in failures if not isinstance(r, RolledBackError)), None)
        if isinstance(failure, NodeExistsError):
            raise TopicExistsError(f"topic {assignment.topic!r} already exists")
        if failure is not None:
            raise ZkError(f"creating topic {assignment.topic!r} failed: {failure!r}")

    def set_topic_assignment(self, assignment: TopicAssignment) -> None:
        self.zk.set(topic_path(assignment.topic), assignment.encode())

    def add_topic_partitions(
        self, topic: str, new_partitions: Mapping[int, list[int]]
    ) -> TopicAssignment:
        """Extend a topic's assignment with new partitions (CreatePartitions), written
        conditionally on the version read, so a concurrent change fails instead of being
        overwritten. Refused while a reassignment of the topic is in progress."""
        try:
            data, stat = self.zk.get(topic_path(topic))
        except NoNodeError:
            raise ZkError(f"topic {topic!r} does not exist") from None
        document = decode_json(data)
        if document.get("adding_replicas") or document.get("removing_replicas"):
            raise ReassignmentInProgressError(
                f"A partition reassignment is in progress for the topic '{topic}'."
            )
        current = TopicAssignment.decode(topic, data)
        expected = range(len(current.partitions), len(current.partitions) + len(new_partitions))
        if sorted(current.partitions) != list(range(len(current.partitions))) or sorted(
            new_partitions
        ) != list(expected):
            raise PartitionsChangedError(
                f"the partitions of topic '{topic}' changed meanwhile; try again"
            )
        updated = TopicAssignment(
            topic, current.topic_id, {**current.partitions, **dict(new_partitions)}
        )
        try:
            self.zk.set(topic_path(topic), updated.encode(), version=stat.version)
        except (BadVersionError, NoNodeError):
            raise PartitionsChangedError(
                f"the assignment of topic '{topic}' changed meanwhile; try again"
            ) from None
        return updated

    # -- reassignments asked for through /admin/reassign_partitions ------------------------

    def zk_reassignments(self, watch: Callable | None = None) -> dict[tuple[str, int], list[int]]:
        """The reassignments in ``/admin/reassign_partitions`` (empty when the node is
        absent); ``watch`` fires when the node is created, changed or deleted. A document
        that is not Kafka's is deleted with an error logged, as Kafka does."""
        if self.zk.exists(REASSIGN_PARTITIONS, watch=watch) is None:
            return {}
        try:
            data, _ = self.zk.get(REASSIGN_PARTITIONS)
            return decode_reassignments(data)
        except NoNodeError:
            return {}
        except ValueError as error:
            logger.error("deleting %s: %s", REASSIGN_PARTITIONS, error)
            with contextlib.suppress(NoNodeError):
                self.zk.delete(REASSIGN_PARTITIONS)
            return {}

    def set_zk_reassignments(self, reassignments: dict[tuple[str, int], list[int]]) -> None:
        """Rewrite ``/admin/reassign_partitions`` with what is left of it; deleted when
        nothing is."""
        with contextlib.suppress(NoNodeError):
            if reassignments:
                self.zk.set(REASSIGN_PARTITIONS, encode_reassignments(reassignments))
            else:
                self.zk.delete(REASSIGN_PARTITIONS)

    def mark_topic_for_deletion(self, topic: str) -> None:
        with contextlib.suppress(NodeExistsError):
            self.zk.create(f"{DELETE_TOPICS}/{topic}", b"", makepath=True)

    def topics_marked_for_deletion(self, watch: Callable | None = None) -> list[str]:
        return sorted(self.zk.get_children(DELETE_TOPICS, watch=watch))

    def delete_topic_znodes(self, topic: str) -> None:
        """After its partitions are gone: assignment, config and the deletion marker."""
        for path in (topic_path(topic), config_path("topics", topic), f"{DELETE_TOPICS}/{topic}"):
            with contextlib.suppress(NoNodeError):
                self.zk.delete(path, recursive=True)

    def partition_state(self, topic: str, partition: int) -> PartitionState | None:
        return self.partition_states([(topic, partition)]).get((topic, partition))

    def partition_states(
        self, keys: Iterable[tuple[str, int]]
    ) -> dict[tuple[str, int], PartitionState]:
        """The states of many partitions, read in one pipelined round trip; a partition
        without a state is left out."""
        found = self._read_many({key: partition_state_path(*key) for key in keys})
        return {
            key: PartitionState.decode(data, stat.version) for key, (data, stat) in found.items()
        }

    def create_partition_states(
        self, topic: str, states: Mapping[int, PartitionState]
    ) -> dict[int, PartitionState]:
        """Each partition's state as created (znode version 0), or the one already there
        (written by an earlier controller). The requests are pipelined: one round trip
        for the partitions' parent znodes and one for their states, however many there
        are (creating a 1,000-partition topic one znode at a time took seconds)."""
        partitions_path = f"{topic_path(topic)}/partitions"
        self.zk.ensure_path(partitions_path)
        parents = [self.zk.create_async(f"{partitions_path}/{partition}") for partition in states]
        for result in parents:
            with contextlib.suppress(NodeExistsError):
                result.get()
        pending = {
            partition: self.zk.create_async(partition_state_path(topic, partition), state.encode())
            for partition, state in states.items()
        }
        created = {}
        for partition, result in pending.items():
            try:
                result.get()
            except NodeExistsError:
                existing = self.partition_state(topic, partition)
                if existing is None:
                    raise
                created[partition] = existing
            else:
                created[partition] = replace(states[partition], zk_version=0)
        return created

    def update_partition_state(self, topic: str, partition: int, state: PartitionState) -> int:
        """Conditional on the version the state was read at; returns the new version.
        Raises StalePartitionStateError when the znode changed meanwhile, unless to this
        very state: a write made again after the connection lost its answer."""
        version = self.update_partition_states({(topic, partition): state})[(topic, partition)]
        if version is None:
            raise StalePartitionStateError(
                f"the state of {topic}-{partition} changed since version {state.zk_version}"
            )
        return version

    def update_partition_states(
        self, states: Mapping[tuple[str, int], PartitionState]
    ) -> dict[tuple[str, int], int | None]:
        """:meth:`update_partition_state` of many partitions, pipelined (one round trip
        for all): each partition's new version, None where its state changed meanwhile."""
        pending = {
            key: self.zk.set_async(
                partition_state_path(*key), state.encode(), version=state.zk_version
            )
            for key, state in states.items()
        }
        versions: dict[tuple[str, int], int | None] = {}
        for key, result in pending.items():
            try:
                versions[key] = result.get().version
            except (BadVersionError, NoNodeError):
                state = states[key]
                current = self.partition_state(*key)
                same = (
                    current is not None and replace(current, zk_version=state.zk_version) == state
                )
                versions[key] = current.zk_version if same else None
        return versions

    # -- ISR changes (a leader announces them; the controller spreads them) ---------------

    def announce_isr_changes(self, partitions: list[tuple[str, int]]) -> None:
        """A sequential ``/isr_change_notification/isr_change_<n>`` naming the partitions
        whose ISR this leader changed, in Kafka's format."""
        document = {
            "version": 1,
            "partitions": [{"topic": t, "partition": p} for t, p in partitions],
        }
        self.zk.create(
            f"{ISR_CHANGE_NOTIFICATION}/{ISR_CHANGE_PREFIX}",
            encode_json(document),
            sequence=True,
            makepath=True,
        )

    def isr_change_notifications(self, watch: Callable | None = None) -> list[str]:
        return sorted(self.zk.get_children(ISR_CHANGE_NOTIFICATION, watch=watch))

    def isr_change_partitions(self, name: str) -> list[tuple[str, int]]:
        """The partitions one notification names (none when it is gone or unreadable)."""
        try:
            data, _ = self.zk.get(f"{ISR_CHANGE_NOTIFICATION}/{name}")
            document = decode_json(data)
            return [(p["topic"], int(p["partition"])) for p in document["partitions"]]
        except NoNodeError:
            return []
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring the malformed ISR change notification %s", name)
            return []

    def delete_isr_change_notifications(self, names: list[str]) -> None:
        for name in names:
            with contextlib.suppress(NoNodeError):
                self.zk.delete(f"{ISR_CHANGE_NOTIFICATION}/{name}")

    # -- log directory failures (a broker announces them; the controller acts) -----------

    def announce_log_dir_failure(self, broker_id: int) -> None:
        """A sequential ``/log_dir_event_notification/log_dir_event_<n>``: one of this
        broker's log directories failed (Kafka's format; which replicas it held, the
        controller learns from the broker's LeaderAndIsr answers)."""
        document = {"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT}
        self.zk.create(
            f"{LOG_DIR_EVENT_NOTIFICATION}/{LOG_DIR_EVENT_PREFIX}",
            encode_json(document),
            sequence=True,
            makepath=True,
        )

    def log_dir_event_notifications(self, watch: Callable | None = None) -> list[str]:
        return sorted(self.zk.get_children(LOG_DIR_EVENT_NOTIFICATION, watch=watch))

    def log_dir_failure_broker(self, name: str) -> int | None:
        """The broker a log dir failure notification names (none when it is gone,
        unreadable or of another event)."""
        try:
            data, _ = self.zk.get(f"{LOG_DIR_EVENT_NOTIFICATION}/{name}")
            document = decode_json(data)
            if document["event"] != LOG_DIR_FAILURE_EVENT:
                return None
            return int(document["broker"])
        except NoNodeError:
            return None
        except (ValueError, KeyError, TypeError):
            logger.warning("ignoring the malformed log dir event notification %s", name)
            return None

    def delete_log_dir_event_notifications(self, names: list[str]) -> None:
        for name in names:
            with contextlib.suppress(NoNodeError):
                self.zk.delete(f"{LOG_DIR_EVENT_NOTIFICATION}/{name}")

    # -- configs ---------------------------------------------------------------------------

    def entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        try:
            data, _ = self.zk.get(config_path(entity_type, name))
        except NoNodeError:
            return {}
        return dict(decode_json(data).get("config", {}))

    def set_entity_config(self, entity_type: str, name: str, config: Mapping[str, str]) -> None:
        """Write an entity's configs and announce the change (Kafka's notification)."""
        path = config_path(entity_type, name)
        document = _config_document(config)
        try:
            self.zk.set(path, document)
        except NoNodeError:
            self.zk.create(path, document, makepath=True)
        self.zk.create(
            f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}",
            encode_json({"version": 2, "entity_path": f"{entity_type}/{name}"}),
            sequence=True,
            makepath=True,
        )

    def config_changes(self, watch: Callable | None = None) -> list[str]:
        """The pending change notifications (``config_change_<seq>``), oldest first."""
        children = self.zk.get_children(CONFIG_CHANGES, watch=watch)
        return sorted(c for c in children if c.startswith(CONFIG_CHANGE_PREFIX))

    def config_change(self, name: str) -> tuple[str, str] | None:
        """The (entity type, entity name) a notification announces, or None when it is
        gone or unreadable. Reads both of Kafka's formats: version 2 with
        ``entity_path`` (``topics/orders``) and version 1 with ``entity_type`` and
        ``entity_name``."""
        try:
            data, _ = self.zk.get(f"{CONFIG_CHANGES}/{name}")
            document = decode_json(data)
        except (NoNodeError, ValueError):
            return None
        if not isinstance(document, dict):
            return None
        if "entity_path" in document:
            entity_type, _, entity_name = str(document["entity_path"]).partition("/")
        else:
            entity_type, entity_name = document.get("entity_type"), document.get("entity_name")
        if not entity_type or not entity_name:
            return None
        return entity_type, entity_name

    def purge_config_changes(self, names: list[str], now_ms: int) -> None:
        """Delete the notifications among ``names`` (oldest first) older than Kafka's
        expiration; stops at the first one still young."""
        for name in names:
            path = f"{CONFIG_CHANGES}/{name}"
            stat = self.zk.exists(path)
            if stat is None:
                continue
            if now_ms - stat.ctime <= CONFIG_CHANGE_EXPIRATION_MS:
                return
            with contextlib.suppress(NoNodeError):
                self.zk.delete(path)

    def broker_configs(self, broker_id: int) -> tuple[dict[str, str], dict[str, str]]:
        """(cluster-wide ``<default>``, this broker's) dynamic configs."""
        return (
            self.entity_config("brokers", DEFAULT_ENTITY),
            self.entity_config("brokers", str(broker_id)),
        )

    # -- producer ids ------------------------------------------------------------------------

    def allocate_producer_id_block(self, broker_id: int) -> tuple[int, int]:
        """Reserve the next block of producer ids: (first, last) inclusive."""
        while True:
            try:
                data, stat = self.zk.get(PRODUCER_ID_BLOCK)
                current = decode_json(data)
                start = int(current["block_end"]) + 1 if current else 0
                version = stat.version
            except NoNodeError:
                start, version = 0, None
            end = start + PRODUCER_ID_BLOCK_SIZE - 1
            document = encode_json(
                {
                    "version": 1,
                    "broker": broker_id,
                    "block_start": str(start),
                    "block_end": str(end),
                }
            )
            try:
                if version is None:
                    self.zk.create(PRODUCER_ID_BLOCK, document)
                else:
                    self.zk.set(PRODUCER_ID_BLOCK, document, version=version)
                return start, end
            except (BadVersionError, NodeExistsError):
                continue  # another broker took a block meanwhile


def _config_document(config: Mapping[str, str]) -> bytes:
    return encode_json({"version": 1, "config": dict(sorted(config.items()))})


def topic_id_of(assignment: TopicAssignment | None) -> uuid.UUID:
    return assignment.topic_id if assignment else uuid.UUID(int=0)
