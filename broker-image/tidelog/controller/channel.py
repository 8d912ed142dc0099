"""How the controller reaches the brokers (seed 003: a connection and a sender per broker).

The local broker is called directly. Every other live broker gets a queue of its own,
drained by one task that sends the requests in order over one connection to the
broker's inter-broker endpoint (``inter.broker.listener.name``, else its first
listener), reconnecting and retrying while the broker is live. A slow or dead broker
thus delays only its own requests, never the controller's event queue or the other
brokers. When a broker leaves (or registers anew after a restart) its queue is dropped:
a returning broker gets its state afresh from the controller.

Beside its queue, every other live broker has a :class:`RefusalWatch` on its endpoint:
a broker whose process is gone is reported at once
(:meth:`ControllerChannel.on_broker_refusing`), not when its session expires.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Protocol

from tidelog.admin.async_connection import CONNECTION_ERRORS, AsyncBrokerConnection
from tidelog.controller.refusal_watch import RefusalWatch
from tidelog.controller.requests import (
    LEADER_AND_ISR_VERSION,
    LOG_END_VERSION,
    STOP_REPLICA_VERSION,
    UPDATE_METADATA_VERSION,
    PartitionLeadership,
    ReplicaToStop,
    failed_partitions,
    inter_broker_endpoint,
    leader_and_isr_request,
    log_end_answer,
    log_end_request,
    stop_replica_request,
    storage_errors,
    update_metadata_request,
)
from tidelog.controller.zk_data import BrokerRegistration
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.client_security import PLAINTEXT, ClientSecurity
from tidelog.storage.leader_epoch import UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET

__all__ = ["BrokerSender", "ControllerChannel", "LocalBroker"]

logger = logging.getLogger(__name__)

# Called with a broker and the partitions whose replicas it reports on a failed log
# directory (KAFKA_STORAGE_ERROR in its LeaderAndIsr answer).
OfflineReplicasReport = Callable[[int, list[tuple[str, int]]], None]
# Called with the registration of a broker whose endpoint refused a connection.
RefusingBrokerReport = Callable[[BrokerRegistration], None]

INITIAL_BACKOFF_S = 0.05
MAX_BACKOFF_S = 1.0


class LocalBroker(Protocol):
    """What the controller calls on its own broker (the inter-broker APIs' handlers)."""

    async def handle_leader_and_isr(
        self, controller_id: int, controller_epoch: int, states: list[PartitionLeadership]
    ) -> object: ...

    async def handle_update_metadata(
        self,
        controller_id: int,
        controller_epoch: int,
        brokers: dict[int, BrokerRegistration],
        states: list[PartitionLeadership],
    ) -> object: ...

    async def handle_stop_replica(
        self, controller_id: int, controller_epoch: int, replicas: list[ReplicaToStop]
    ) -> object: ...

    def replica_log_end(
        self, topic: str, partition: int, leader_epoch: int
    ) -> tuple[ErrorCode, int, int]: ...


class BrokerSender:
    """One remote broker's queue of controller requests and the task that sends them."""

    def __init__(
        self,
        registration: BrokerRegistration,
        address: tuple[str, int],
        *,
        client_id: str,
        request_timeout_s: float,
        connect_timeout_s: float,
        report_offline: OfflineReplicasReport,
        security: ClientSecurity = PLAINTEXT,
    ):
        self.registration = registration
        self._address = address
        self._security = security
        self._client_id = client_id
        self._timeout = request_timeout_s
        self._connect_timeout = connect_timeout_s
        self._report_offline = report_offline
        self._queue: asyncio.Queue[tuple[ApiKey, int, object]] = asyncio.Queue()
        self._connection: AsyncBrokerConnection | None = None
        self._task = asyncio.create_task(
            self._run(), name=f"controller-to-broker-{registration.broker_id}"
        )

    def enqueue(self, api_key: ApiKey, version: int, body: object) -> None:
        self._queue.put_nowait((api_key, version, body))

    def close(self) -> asyncio.Task:
        self._task.cancel()
        return self._task

    async def sent(self) -> None:
        """Until every request queued so far has been answered or dropped, or the sender
        was closed."""
        joined = asyncio.ensure_future(self._queue.join())
        await asyncio.wait([joined, self._task], return_when=asyncio.FIRST_COMPLETED)
        joined.cancel()

    async def _run(self) -> None:
        try:
            while True:
                api_key, version, body = await self._queue.get()
                try:
                    response = await self._deliver(api_key, version, body)
                except Exception:
                    logger.exception(
                        "%s to broker %d failed; dropped", api_key.name, self.registration.broker_id
                    )
                    self._disconnect()
                else:
                    self._log_errors(api_key, response)
                    if api_key == ApiKey.LEADER_AND_ISR:
                        offline = storage_errors(body, response)
                        if offline:
                            self._report_offline(self.registration.broker_id, offline)
                finally:
                    self._queue.task_done()
        finally:
            self._disconnect()

    async def _deliver(self, api_key: ApiKey, version: int, body: object) -> object:
        backoff = INITIAL_BACKOFF_S
        while True:
            try:
                # asyncio.timeout, not wait_for: 3.11's wait_for can swallow a cancellation.
                async with asyncio.timeout(self._timeout):
                    if self._connection is None:
                        host, port = self._address
                        self._connection = await AsyncBrokerConnection.open(
                            host,
                            port,
                            client_id=self._client_id,
                            connect_timeout_s=self._connect_timeout,
                            security=self._security,
                        )
                    return await self._connection.request(api_key, version, body)
            except CONNECTION_ERRORS as error:
                log = logger.warning if backoff == INITIAL_BACKOFF_S else logger.debug
                log(
                    "broker %d at %s:%d: %s failed (%r); retrying while it is live",
                    self.registration.broker_id,
                    *self._address,
                    api_key.name,
                    error,
                )
                self._disconnect()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, MAX_BACKOFF_S)

    def _disconnect(self) -> None:
        connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()

    def _log_errors(self, api_key: ApiKey, response: object) -> None:
        error_code = getattr(response, "error_code", 0)
        failed = failed_partitions(response)
        if error_code or failed:
            logger.warning(
                "broker %d answered %s with error %d, partitions failed: %s",
                self.registration.broker_id,
                api_key.name,
                error_code,
                failed[:10],
            )


class ControllerChannel:
    """The controller's requests to every live broker, each broker's in order."""

    def __init__(
        self,
        local_id: int,
        local: LocalBroker,
        listener: str | None = None,
        *,
        request_timeout_ms: int = 30000,
        connect_timeout_ms: int = 10000,
        control_listener: str | None = None,
        security: ClientSecurity = PLAINTEXT,
    ):
        self.local_id = local_id
        self.local = local
        # The brokers' endpoints the requests name (the inter-broker listener's), and the
        # listener the requests go to (control.plane.listener.name, else the same) with
        # this broker's security for it.
        self.listener = listener
        self.control_listener = control_listener or listener
        self.security = security
        self.brokers: dict[int, BrokerRegistration] = {}
        self.request_timeout_s = request_timeout_ms / 1000
        self.connect_timeout_s = connect_timeout_ms / 1000
        self._senders: dict[int, BrokerSender] = {}
        self._watches: dict[int, RefusalWatch] = {}
        self._report_offline: OfflineReplicasReport = lambda broker, partitions: None
        self._report_refusing: RefusingBrokerReport = lambda registration: None

    def on_offline_replicas(self, report: OfflineReplicasReport) -> None:
        """Who hears of the replicas a broker reports on a failed log directory."""
        self._report_offline = report

    def on_broker_refusing(self, report: RefusingBrokerReport) -> None:
        """Who hears of a live broker whose endpoint refused a connection (its process is
        gone): called on the event loop with the broker's registration."""
        self._report_refusing = report

    def watch(
        self, registration: BrokerRegistration, report: RefusingBrokerReport
    ) -> RefusalWatch | None:
        """A :class:`RefusalWatch` on the broker's endpoint on this channel's listener
        (None when it has none there)."""
        address = inter_broker_endpoint(registration, self.control_listener)
        if address is None:
            return None
        return RefusalWatch(
            registration,
            address,
            client_id=f"controller-{self.local_id}",
            connect_timeout_s=self.connect_timeout_s,
            report=report,
            security=self.security,
        )

    def set_brokers(self, brokers: Mapping[int, BrokerRegistration]) -> None:
        """The live brokers changed: drop the queues of those gone or re-registered, open
        queues to the new ones."""
        for party in (self._senders, self._watches):
            for broker_id, sender_or_watch in list(party.items()):
                if brokers.get(broker_id) != sender_or_watch.registration:
                    sender_or_watch.close()
                    del party[broker_id]
        for broker_id, registration in sorted(brokers.items()):
            if broker_id == self.local_id or broker_id in self._senders:
                continue
            address = inter_broker_endpoint(registration, self.control_listener)
            if address is None:
                logger.error(
                    "broker %d has no endpoint on listener %s; it gets no controller requests",
                    broker_id,
                    self.control_listener,
                )
                continue
            self._senders[broker_id] = BrokerSender(
                registration,
                address,
                client_id=f"controller-{self.local_id}",
                request_timeout_s=self.request_timeout_s,
                connect_timeout_s=self.connect_timeout_s,
                report_offline=lambda broker, partitions: self._report_offline(broker, partitions),
                security=self.security,
            )
            watch = self.watch(registration, lambda gone: self._report_refusing(gone))
            if watch is not None:
                self._watches[broker_id] = watch
        self.brokers = dict(brokers)

    async def flush(self, timeout_s: float, brokers: Collection[int] | None = None) -> None:
        """Wait (at most ``timeout_s``) until the requests queued so far for ``brokers``
        (by default all) have reached them: when the order across brokers matters, and
        when a controller stops (a broker that is down keeps its requests queued)."""
        senders = [
            sender.sent()
            for broker_id, sender in self._senders.items()
            if brokers is None or broker_id in brokers
        ]
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(asyncio.gather(*senders), timeout_s)

    async def close(self) -> None:
        tasks = [party.close() for party in (*self._senders.values(), *self._watches.values())]
        self._senders.clear()
        self._watches.clear()
        self.brokers = {}
        await asyncio.gather(*tasks, return_exceptions=True)

    async def leader_and_isr(
        self, broker: int, epoch: int, states: Sequence[PartitionLeadership]
    ) -> None:
        if broker == self.local_id:
            answer = await self._call_local(
                self.local.handle_leader_and_isr(self.local_id, epoch, list(states))
            )
            _, errors = answer or (None, {})
            offline = [k for k, code in errors.items() if code == ErrorCode.KAFKA_STORAGE_ERROR]
            if offline:
                self._report_offline(broker, sorted(offline))
            return
        body = leader_and_isr_request(self.local_id, epoch, states, self.brokers, self.listener)
        self._send(broker, ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body)

    async def update_metadata(
        self, broker: int, epoch: int, states: Sequence[PartitionLeadership]
    ) -> None:
        if broker == self.local_id:
            call = self.local.handle_update_metadata(
                self.local_id, epoch, dict(self.brokers), list(states)
            )
            await self._call_local(call)
            return
        body = update_metadata_request(self.local_id, epoch, states, self.brokers)
        self._send(broker, ApiKey.UPDATE_METADATA, UPDATE_METADATA_VERSION, body)

    async def stop_replica(
        self, broker: int, epoch: int, replicas: Sequence[ReplicaToStop]
    ) -> None:
        if broker == self.local_id:
            await self._call_local(
                self.local.handle_stop_replica(self.local_id, epoch, list(replicas))
            )
            return
        body = stop_replica_request(self.local_id, epoch, replicas)
        self._send(broker, ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, body)

    async def replica_log_ends(
        self, key: tuple[str, int], brokers: Collection[int], leader_epoch: int
    ) -> dict[int, tuple[int, int]]:
        """Where each broker's replica of ``key`` stands, (latest leader epoch, log end
        offset), asked of all at once, each on a connection of its own (the answer is
        needed now, not in the order of the broker's queue). A broker that does not host
        the partition holds nothing: (-1, -1). One that did not answer within the
        request timeout, or whose replica is on a failed directory, is left out."""

        async def ask(broker: int) -> tuple[int, tuple[int, int] | None]:
            try:
                if broker == self.local_id:
                    answer = self.local.replica_log_end(*key, leader_epoch)
                else:
                    answer = await self._ask_log_end(broker, key, leader_epoch)
            except Exception as error:  # one broker's failure must not stop the event
                logger.warning("broker %d: where %s-%d stands is unknown (%r)", broker, *key, error)
                return broker, None
            code, epoch, end_offset = answer
            if code == ErrorCode.NONE:
                return broker, (epoch, end_offset)
            if code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                return broker, (UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET)
            logger.warning("broker %d: where %s-%d stands is unknown (%s)", broker, *key, code.name)
            return broker, None

        answers = await asyncio.gather(*(ask(broker) for broker in brokers))
        return {broker: end for broker, end in answers if end is not None}

    async def refuses_connections(self, registration: BrokerRegistration) -> bool:
        """Whether the broker's endpoint refuses a connection now (any other failure, or
        no endpoint on the listener, counts as not refusing)."""
        address = inter_broker_endpoint(registration, self.control_listener)
        if address is None:
            return False
        try:
            connection = await AsyncBrokerConnection.open(
                *address,
                client_id=f"controller-{self.local_id}",
                connect_timeout_s=self.connect_timeout_s,
                security=self.security,
            )
        except ConnectionRefusedError:
            return True
        except CONNECTION_ERRORS:
            return False
        connection.close()
        return False

    async def _ask_log_end(
        self, broker: int, key: tuple[str, int], leader_epoch: int
    ) -> tuple[ErrorCode, int, int]:
        registration = self.brokers.get(broker)
        address = registration and inter_broker_endpoint(registration, self.control_listener)
        if address is None:
            raise LookupError(f"no endpoint on listener {self.control_listener}")
        async with asyncio.timeout(self.request_timeout_s):
            connection = await AsyncBrokerConnection.open(
                *address,
                client_id=f"controller-{self.local_id}",
                connect_timeout_s=self.connect_timeout_s,
                security=self.security,
            )
            try:
                response = await connection.request(
                    ApiKey.OFFSET_FOR_LEADER_EPOCH,
                    LOG_END_VERSION,
                    log_end_request(*key, leader_epoch),
                )
            finally:
                connection.close()
        return log_end_answer(response)

    def _send(self, broker: int, api_key: ApiKey, version: int, body: object) -> None:
        sender = self._senders.get(broker)
        if sender is None:
            logger.debug("broker %d is not live; %s not sent", broker, api_key.name)
            return
        sender.enqueue(api_key, version, body)

    @staticmethod
    async def _call_local(call) -> object:
        """The local broker's answer (None when it failed: the failure is logged so that
        the controller still reaches the other brokers)."""
        try:
            return await call
        except Exception:
            logger.exception("the local broker failed a controller request")
            return None
