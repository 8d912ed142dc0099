"""The broker: storage, ZooKeeper membership, the controller role, the network.

Start-up order: ZooKeeper session and cluster id, the logs (recovered if the last
shutdown was unclean), the listeners, then the ``/brokers/ids/<id>`` registration (a
taken id stops the start with one clear error), then the controller election. Shut-down
reverses it and ends with the logs flushed, checkpointed and marked clean.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from dataclasses import replace

from tidelog.controller.controller import Controller, ControllerChannel, PartitionLeadership
from tidelog.controller.zk_client import KafkaZkClient
from tidelog.controller.zk_data import BrokerRegistration, TopicAssignment, new_uuid
from tidelog.coordinator.producer_ids import ProducerIdManager
from tidelog.protocol.errors import ErrorCode
from tidelog.replication.replica_manager import AppendResult, ReplicaManager
from tidelog.server.config import BrokerConfig
from tidelog.server.dispatch import RequestDispatcher
from tidelog.server.handlers.create_topics import TopicRequestError, plan_topic
from tidelog.server.metadata_cache import MetadataCache, PartitionMetadata
from tidelog.server.network import SocketServer
from tidelog.storage.cleaner import CleanerConfig
from tidelog.storage.config import LogConfig
from tidelog.storage.log_manager import LogManager

__all__ = ["Broker"]

logger = logging.getLogger(__name__)


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.advertised_versions: list = []
        self.dispatcher = RequestDispatcher(self)
        self.bound_listeners: list[tuple[str, str, int]] = []
        self._controller_epoch = 0
        self._tasks: list[asyncio.Task] = []
        self.stopped = asyncio.Event()

    # -- life cycle ----------------------------------------------------------------------

    async def start(self) -> None:
        config = self.config
        self.zk = KafkaZkClient(
            config["zookeeper.connect"],
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
        )
        await asyncio.to_thread(self.zk.start)
        cluster_id = await asyncio.to_thread(self.zk.get_or_create_cluster_id)
        if self.broker_id < 0:
            self.broker_id = await asyncio.to_thread(self.zk.generate_broker_id)
        self.metadata = MetadataCache(cluster_id)
        self.log_manager = LogManager(
            config.log_dirs,
            config.log_config(),
            broker_id=self.broker_id,
            cluster_id=cluster_id,
            topic_configs=await asyncio.to_thread(self._topic_configs),
            cleaner_config=CleanerConfig(
                log_cleaner_enable=config["log.cleaner.enable"],
                log_cleaner_threads=config["log.cleaner.threads"],
                log_cleaner_dedupe_buffer_size=config["log.cleaner.dedupe.buffer.size"],
                log_cleaner_backoff_ms=config["log.cleaner.backoff.ms"],
            ),
        )
        await asyncio.to_thread(self.log_manager.startup)
        self.replica_manager = ReplicaManager(self.broker_id, self.log_manager)
        self.producer_ids = ProducerIdManager(
            lambda: self.zk.allocate_producer_id_block(self.broker_id)
        )
        self.network = SocketServer(
            self.dispatcher,
            max_request_bytes=config["socket.request.max.bytes"],
            idle_timeout_ms=config["connections.max.idle.ms"],
            send_buffer_bytes=config["socket.send.buffer.bytes"],
            receive_buffer_bytes=config["socket.receive.buffer.bytes"],
        )
        try:
            for name, host, port in config.listeners:
                bound = await self.network.listen(name, host, port)
                self.bound_listeners.append((name, host, bound))
            await asyncio.to_thread(self.zk.register_broker, self._registration())
        except BaseException:
            await self.network.close()
            await asyncio.to_thread(self.log_manager.shutdown)
            await asyncio.to_thread(self.zk.close)
            raise
        self.controller = Controller(
            self.broker_id, self.zk, ControllerChannel(self.broker_id, self)
        )
        self.controller.start()
        self._tasks = [
            asyncio.create_task(
                self._every(
                    config["log.retention.check.interval.ms"], self.log_manager.cleanup_logs
                )
            ),
            asyncio.create_task(
                self._every(
                    config["log.flush.offset.checkpoint.interval.ms"],
                    lambda: self.log_manager.checkpoint(self.replica_manager.high_watermarks()),
                )
            ),
        ]
        logger.info(
            "broker %d started, listening on %s",
            self.broker_id,
            ", ".join(f"{n}://{h or '0.0.0.0'}:{p}" for n, h, p in self.bound_listeners),
        )

    def _topic_configs(self) -> dict[str, LogConfig]:
        base = self.config.log_config()
        configs = {}
        for topic in self.zk.topics():
            overrides = self.zk.entity_config("topics", topic)
            if overrides:
                configs[topic] = LogConfig.from_properties(overrides, base=base)
        return configs

    def _registration(self) -> BrokerRegistration:
        bound = {name: port for name, _, port in self.bound_listeners}
        endpoints = []
        for name, host, port in self.config.advertised_listeners:
            endpoints.append((name, host or "localhost", port or bound.get(name, port)))
        return BrokerRegistration(self.broker_id, tuple(endpoints), self.config["broker.rack"])

    async def _every(self, interval_ms: int, work) -> None:
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await asyncio.to_thread(work)
            except Exception:
                logger.exception("periodic task %r failed", work)

    async def shutdown(self) -> None:
        logger.info("broker %d shutting down", self.broker_id)
        for task in self._tasks:
            task.cancel()
        await self.controller.stop()
        await self.network.close()
        high_watermarks = self.replica_manager.high_watermarks()
        await asyncio.to_thread(self.log_manager.checkpoint, high_watermarks)
        await asyncio.to_thread(self.log_manager.shutdown)
        await asyncio.to_thread(self.zk.close)
        self.stopped.set()
        logger.info("broker %d shut down cleanly", self.broker_id)

    # -- requests from the controller --------------------------------------------------------

    def _fenced(self, epoch: int) -> bool:
        if epoch < self._controller_epoch:
            logger.warning(
                "ignoring a request of controller epoch %d < %d", epoch, self._controller_epoch
            )
            return True
        self._controller_epoch = epoch
        return False

    async def handle_leader_and_isr(self, epoch: int, states: list[PartitionLeadership]):
        if self._fenced(epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        for state in states:
            self.replica_manager.become_leader_or_follower(
                state.topic,
                state.topic_id,
                state.partition,
                leader=state.leader,
                leader_epoch=state.leader_epoch,
                replicas=list(state.replicas),
                isr=list(state.isr),
            )
        return ErrorCode.NONE

    async def handle_update_metadata(
        self, epoch: int, brokers: dict, states: list[PartitionLeadership], deleted: list[str]
    ):
        if self._fenced(epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.metadata.update_brokers(brokers)
        self.metadata.controller_id = self.broker_id if self.controller.is_active else None
        for topic in deleted:
            self.metadata.remove_topic(topic)
        for state in states:
            self.metadata.update_partition(
                state.topic,
                state.topic_id,
                PartitionMetadata(
                    state.partition,
                    state.leader,
                    state.leader_epoch,
                    list(state.replicas),
                    list(state.isr),
                ),
            )
        return ErrorCode.NONE

    async def handle_stop_replica(self, epoch: int, partitions, delete: bool):
        if self._fenced(epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        for topic, index in partitions:
            await asyncio.to_thread(self.replica_manager.stop_replica, topic, index, delete)
        return ErrorCode.NONE

    # -- helpers for handlers ------------------------------------------------------------------

    async def auto_create_topic(self, name: str) -> ErrorCode:
        """Metadata's auto-creation with the broker defaults (only on the controller)."""
        if not self.controller.is_active:
            return ErrorCode.LEADER_NOT_AVAILABLE
        try:
            plan = plan_topic(self, name, -1, -1, [], {})
        except TopicRequestError as error:
            return error.code
        failures = await self.controller.add_topics([TopicAssignment(name, new_uuid(), plan)], {})
        return ErrorCode.NONE if failures.get(name) is None else ErrorCode.LEADER_NOT_AVAILABLE

    @staticmethod
    def replica_manager_error(code: ErrorCode, message: str | None = None) -> AppendResult:
        return AppendResult(code, message=message)

    def topic_id(self, topic: str) -> uuid.UUID:
        entry = self.metadata.topics.get(topic)
        return entry.topic_id if entry else uuid.UUID(int=0)

    def with_config(self, config: BrokerConfig) -> None:
        self.config = config
        self.log_manager.default_config = replace(config.log_config())
