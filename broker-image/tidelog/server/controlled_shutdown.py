"""A broker's controlled shutdown (seed 000, 003 四.4): before it stops, it asks the
controller to move its leaderships away, so clients fail over at once instead of after
the ZooKeeper session timeout.

ControlledShutdown v3 (what Kafka 3.9's brokers send) carries the broker epoch, the
czxid of its ``/brokers/ids`` registration. The controller is the one ``/controller``
names now; its endpoint comes from the metadata cache, else from ZooKeeper. An attempt
fails when the controller cannot be reached or answers an error or partitions the
broker still leads; ``controlled.shutdown.max.retries`` attempts are made,
``controlled.shutdown.retry.backoff.ms`` apart. The broker shuts down either way. One
exception to Kafka's retries: when ZooKeeper registers no other broker, nobody can take
the leaderships the controller left (the last broker of a stopping cluster), and the
broker shuts down after the first attempt instead of waiting out its retries (3 x 5 s
by default).

Each attempt is bounded: its ZooKeeper reads and the request to the controller (or the
wait for this broker's own controller) by ``controller.socket.timeout.ms``, and without a
ZooKeeper connection an attempt fails at once, since no controller can be found (nor
could one move leaderships: partition states live in ZooKeeper). So a broker whose
ZooKeeper is gone gives up after its retries and shuts down; its leaderships move when
ZooKeeper expires its session.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from tidelog.admin.async_connection import AsyncBrokerConnection
from tidelog.controller.requests import inter_broker_endpoint
from tidelog.controller.zk_client import KafkaZkClient
from tidelog.controller.zk_session import SESSION_ERRORS, ZooKeeperUnavailableError
from tidelog.protocol import ApiKey, MalformedMessageError, request_class
from tidelog.protocol.errors import ErrorCode
from tidelog.security.client_security import ClientSecurity
from tidelog.security.listeners import inter_broker_listener
from tidelog.security.sasl_client import SaslAuthenticationFailed
from tidelog.server.config import BrokerConfig
from tidelog.server.metadata_cache import MetadataCache

__all__ = ["CONTROLLED_SHUTDOWN_VERSION", "ShuttingDownBroker", "shut_down_controlled"]

logger = logging.getLogger(__name__)

CONTROLLED_SHUTDOWN_VERSION = 3
UNKNOWN_BROKER_EPOCH = -1
ControlledShutdownRequest = request_class(ApiKey.CONTROLLED_SHUTDOWN)
# An attempt that fails with one of these is made again.
ATTEMPT_ERRORS = (
    OSError,
    SaslAuthenticationFailed,
    asyncio.IncompleteReadError,
    asyncio.TimeoutError,
    MalformedMessageError,
    ZooKeeperUnavailableError,
    *SESSION_ERRORS,
)

TopicPartition = tuple[str, int]
T = TypeVar("T")
# How often a wait on this broker's own controller checks the ZooKeeper connection.
CONNECTION_POLL_S = 0.1


class ControllerUnavailableError(Exception):
    """No controller, or none reachable on the inter-broker listener."""


@dataclass(frozen=True)
class ShuttingDownBroker:
    """What a controlled shutdown reads of the broker: its id and configuration, its
    ZooKeeper client, its metadata cache (the controller's endpoint), and its own
    controller's ControlledShutdown (``own_controller(broker_id, broker_epoch)``: the
    error and the partitions still led), used when this broker is the controller."""

    broker_id: int
    config: BrokerConfig
    zk: KafkaZkClient
    metadata: MetadataCache
    own_controller: Callable[[int, int], Awaitable[tuple[ErrorCode, list[TopicPartition]]]]


async def shut_down_controlled(broker: ShuttingDownBroker) -> bool:
    """Ask the controller until it moved every leadership of ``broker`` it could; True
    when it did."""
    config = broker.config
    attempts = max(config["controlled.shutdown.max.retries"], 1)
    last_failure: Exception | None = None
    for attempt in range(1, attempts + 1):
        try:
            error, remaining = await _ask_controller(broker)
        except (ControllerUnavailableError, *ATTEMPT_ERRORS) as failure:
            last_failure = failure
            logger.warning("controlled shutdown attempt %d failed: %r", attempt, failure)
        else:
            last_failure = None
            if error == ErrorCode.NONE and not remaining:
                logger.info("controlled shutdown of broker %d succeeded", broker.broker_id)
                return True
            logger.warning(
                "controlled shutdown attempt %d: error %s, still leading %s",
                attempt,
                error.name,
                remaining[:10],
            )
            if error == ErrorCode.NONE and await _alone(broker):
                logger.warning(
                    "no other broker is alive to lead the %d partitions broker %d still "
                    "leads; shutting down without retrying",
                    len(remaining),
                    broker.broker_id,
                )
                return False
        if attempt < attempts:
            await asyncio.sleep(config["controlled.shutdown.retry.backoff.ms"] / 1000)
    if isinstance(last_failure, (ZooKeeperUnavailableError, *SESSION_ERRORS)):
        logger.warning(
            "controlled shutdown of broker %d not possible without ZooKeeper (%r): no "
            "controller can move its leaderships; they move when its session expires",
            broker.broker_id,
            last_failure,
        )
    logger.warning("all controlled shutdown attempts failed; shutting down anyway")
    return False


async def _ask_controller(broker: ShuttingDownBroker) -> tuple[ErrorCode, list[TopicPartition]]:
    if not broker.zk.connected:
        # kazoo would hold the reads below until it reconnects.
        raise ZooKeeperUnavailableError("not connected to ZooKeeper")
    timeout = broker.config["controller.socket.timeout.ms"] / 1000
    epoch = await asyncio.to_thread(broker.zk.broker_epoch, broker.broker_id, timeout)
    epoch = UNKNOWN_BROKER_EPOCH if epoch is None else epoch
    controller_id = await asyncio.to_thread(broker.zk.controller_id, None, timeout)
    if controller_id is None:
        raise ControllerUnavailableError("no controller")
    if controller_id == broker.broker_id:
        # Its controller writes the partition states to ZooKeeper.
        return await _while_connected(
            broker, broker.own_controller(broker.broker_id, epoch), timeout
        )
    host, port = await _endpoint_of(broker, controller_id, timeout)
    connection = await asyncio.wait_for(
        AsyncBrokerConnection.open(
            host,
            port,
            client_id=f"broker-{broker.broker_id}",
            security=ClientSecurity.inter_broker(broker.config),
        ),
        timeout,
    )
    try:
        response = await asyncio.wait_for(
            connection.request(
                ApiKey.CONTROLLED_SHUTDOWN,
                CONTROLLED_SHUTDOWN_VERSION,
                ControlledShutdownRequest(broker_id=broker.broker_id, broker_epoch=epoch),
            ),
            timeout,
        )
    finally:
        connection.close()
    remaining = [(p.topic_name, p.partition_index) for p in response.remaining_partitions]
    return ErrorCode(response.error_code), remaining


async def _alone(broker: ShuttingDownBroker) -> bool:
    """True when ZooKeeper registers no broker but ``broker``; False when it registers
    others or cannot be read (the retries then go on as Kafka's do)."""
    timeout = broker.config["controller.socket.timeout.ms"] / 1000
    try:
        live = await asyncio.to_thread(broker.zk.live_brokers, None, timeout)
    except ATTEMPT_ERRORS:
        return False
    return set(live) <= {broker.broker_id}


async def _endpoint_of(
    broker: ShuttingDownBroker, broker_id: int, timeout: float
) -> tuple[str, int]:
    listener = inter_broker_listener(broker.config)
    registration = broker.metadata.brokers.get(broker_id)
    if registration is None:
        brokers = await asyncio.to_thread(broker.zk.live_brokers, None, timeout)
        registration = brokers.get(broker_id)
    endpoint = None if registration is None else inter_broker_endpoint(registration, listener)
    if endpoint is None:
        raise ControllerUnavailableError(f"controller {broker_id} has no endpoint on {listener}")
    return endpoint


async def _while_connected(broker: ShuttingDownBroker, work: Awaitable[T], timeout: float) -> T:
    """``work``'s result, given up after ``timeout`` seconds or once the ZooKeeper
    connection is lost (a request kazoo holds until it reconnects would keep it waiting)."""
    task = asyncio.ensure_future(work)
    deadline = asyncio.get_running_loop().time() + timeout
    try:
        while True:
            done, _ = await asyncio.wait({task}, timeout=CONNECTION_POLL_S)
            if done:
                return task.result()
            if not broker.zk.connected:
                raise ZooKeeperUnavailableError("lost the connection to ZooKeeper")
            if asyncio.get_running_loop().time() >= deadline:
                raise TimeoutError()
    finally:
        task.cancel()
