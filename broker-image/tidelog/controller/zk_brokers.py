"""The cluster's membership znodes: the cluster id, broker ids and registrations under
``/brokers/ids``, and the controller's ``/controller`` and ``/controller_epoch``."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

from tidelog.controller.zk_data import (
    BROKER_IDS,
    BROKER_SEQID,
    CLUSTER_ID,
    CONTROLLER,
    CONTROLLER_EPOCH,
    BrokerRegistration,
    broker_path,
    decode_json,
    encode_json,
    new_uuid,
    uuid_to_base64,
)
from tidelog.controller.zk_session import ZkError, ZkSession

__all__ = ["REGISTRATION_WAIT_FACTOR", "BrokerIdTakenError", "BrokerZnodes"]

logger = logging.getLogger(__name__)

RESERVED_BROKER_MAX_ID = 1000
# How long a starting broker waits, in session timeouts, for the registration of a session
# that is not its own to go (see BrokerZnodes.register_broker). ZooKeeper expires a
# session within one tickTime after its timeout, and a session timeout is at least two
# ticks (ZooKeeper's minSessionTimeout), so an abandoned session is gone within 1.5.
REGISTRATION_WAIT_FACTOR = 1.5


class BrokerIdTakenError(ZkError):
    """Another live broker is registered with this id (or a persistent znode is there)."""


def _session_hex(session_id: int) -> str:
    """A session id as ZooKeeper's own logs print it (``0x`` and 64 bits unsigned)."""
    return f"0x{session_id & 0xFFFF_FFFF_FFFF_FFFF:x}"


class BrokerZnodes(ZkSession):
    """Who is in the cluster, and which broker is its controller."""

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
