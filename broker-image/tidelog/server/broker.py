"""The broker: the composition root that wires storage, replication, the coordinators,
ZooKeeper membership, the controller role and the network.

Start-up order (:meth:`Broker.start`): ZooKeeper session and cluster id; the dynamic
broker configs layered over the static ones (:mod:`.dynamic_config`), the users' and
clients' configs (:mod:`.entity_configs`); the ACLs, delegation tokens and client quotas
(:mod:`.zk_security_state`); the logs (recovered if the last shutdown was unclean),
replication and the coordinators; the
listeners, the ISRs this broker leaves because it holds no log of their partition (say
its disks were replaced, :mod:`.isr_writes`), then the ``/brokers/ids/<id>``
registration (the registration of this broker's previous, killed run is waited out until
its session expires; an id a live broker keeps stops the start with one clear error, see
``BrokerZnodes.register_broker``); then the controller election and the background
tasks. Shut-down reverses it and ends with the logs flushed, checkpointed and marked
clean.

Each job has its module: following ``/config/changes`` (:mod:`.dynamic_config`), the
controller's LeaderAndIsr, UpdateMetadata and StopReplica (:mod:`.controller_requests`,
which the ``handle_*`` methods here hand over to), the ISR writes to ZooKeeper
(:mod:`.isr_writes`), the topics the broker creates itself (:mod:`.internal_topics`) and
the controlled shutdown (:mod:`.controlled_shutdown`). When the ZooKeeper session
expires the broker gives up the controller role; on the new session it registers again
and runs for controller again.

A broker whose ZooKeeper is gone still shuts down, cleanly and in bounded time: its
controlled shutdown gives up after its retries, the logs are closed in a thread of their
own (the worker threads may all wait on ZooKeeper requests, which kazoo holds until it
reconnects), and the ZooKeeper client's close is bounded (see ``ZkSession.close``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import socket
import threading
import uuid
from dataclasses import replace
from pathlib import Path

from tidelog.controller.channel import ControllerChannel
from tidelog.controller.controller import Controller
from tidelog.controller.requests import (
    PartitionLeadership,
    ReplicaToStop,
    inter_broker_endpoint,
)
from tidelog.controller.zk_brokers import BrokerIdTakenError
from tidelog.controller.zk_client import KafkaZkClient
from tidelog.controller.zk_data import BrokerRegistration
from tidelog.controller.zk_security import zk_client_security
from tidelog.controller.zk_session import SESSION_ERRORS
from tidelog.coordinator.group_coordinator import (
    OFFSETS_TOPIC,
    CoordinatorConfig,
    GroupCoordinator,
)
from tidelog.coordinator.producer_ids import ProducerIdManager
from tidelog.protocol.errors import ErrorCode
from tidelog.replication.fetcher import FetcherConfig
from tidelog.replication.log_dir_mover import LogDirMover
from tidelog.replication.replica_manager import AppendResult, ReplicaManager
from tidelog.security.authenticator import AuthenticatorFactory
from tidelog.security.authorizer import AclAuthorizer
from tidelog.security.client_security import ClientSecurity
from tidelog.security.connection_limits import LimitsOfConfig
from tidelog.security.delegation_tokens import (
    DelegationTokenCache,
)
from tidelog.security.listener_security import ListenerSecurity
from tidelog.security.listeners import (
    control_plane_listener,
    inter_broker_listener,
    listener_specs,
)
from tidelog.server.config import BrokerConfig
from tidelog.server.controlled_shutdown import ShuttingDownBroker, shut_down_controlled
from tidelog.server.controller_requests import ControllerRequests
from tidelog.server.dispatch import RequestDispatcher
from tidelog.server.dynamic_config import (
    DynamicConfig,
    ReplicationThrottles,
    load_broker_config,
    log_config_for,
    read_topic_overrides,
)
from tidelog.server.entity_configs import EntityConfigs
from tidelog.server.fetch_sessions import FetchSessionCache
from tidelog.server.internal_topics import InternalTopics
from tidelog.server.isr_writes import leave_isrs_of_lost_replicas, shrink_isrs, write_isrs
from tidelog.server.metadata_cache import MetadataCache
from tidelog.server.network import SocketServer
from tidelog.server.zk_security_state import ZkSecurityState, request_quotas
from tidelog.storage.cleaner import CleanerConfig
from tidelog.storage.log_manager import LogManager

__all__ = ["Broker"]

logger = logging.getLogger(__name__)

# How long a stopping controller waits for its last requests to reach the brokers.
CONTROLLER_FLUSH_TIMEOUT_S = 5.0


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.advertised_versions: list = []
        self.dispatcher = RequestDispatcher(self)
        self.bound_listeners: list[tuple[str, str, int]] = []
        self._tasks: list[asyncio.Task] = []
        self.stopped = asyncio.Event()
        # Set when the broker is stopped during start-up: the wait for ZooKeeper ends.
        self._stop_starting = threading.Event()
        # Listeners are bound before registration (a port 0 listener must be known to
        # register it), but requests wait until the controller election has run, so a
        # client never learns an empty cluster from a broker that is starting.
        self.ready = asyncio.Event()
        # ACLs and delegation tokens, from ZooKeeper (see zk_security_state); the
        # dispatcher consults the authorizer (tidelog.server.authorization), None: every
        # request is served.
        self.zk_security = ZkSecurityState()
        self.authorizer: AclAuthorizer | None = None
        self.delegation_tokens: DelegationTokenCache | None = None
        # Replication throttles (seed 003 修改主题限速): rates from the broker configs,
        # throttled replicas from each topic's overrides (see dynamic_config).
        self.throttles = ReplicationThrottles(config)
        self.leader_quota = self.throttles.leader
        self.follower_quota = self.throttles.follower
        self.alter_log_dirs_quota = self.throttles.alter_log_dirs
        self.fetch_sessions = FetchSessionCache(config["max.incremental.fetch.session.cache.slots"])
        # SASL listeners' authentication (ConfigError here when one cannot serve): users'
        # SCRAM credentials from entity_configs, loaded at start.
        self.authenticator_factory = AuthenticatorFactory(
            lambda: self.config,
            lambda user: self.entity_configs.user(user),
            lambda token_id, mechanism: self.zk_security.token_login(token_id, mechanism),
        )

    # -- life cycle ----------------------------------------------------------------------

    def stop_starting(self) -> None:
        """A stop asked while the broker starts: a start still waiting for ZooKeeper gives
        up at once (ZooKeeperStartStopped), since nothing is loaded or registered yet."""
        self._stop_starting.set()

    async def start(self) -> None:
        """Start-up, step by step in the order the module docstring gives."""
        self._loop = asyncio.get_running_loop()
        cluster_id = await self._connect_to_zookeeper()
        last_config_change = await self._load_dynamic_config()
        await self._load_zk_security()
        topic_overrides = await asyncio.to_thread(read_topic_overrides, self.zk)
        await self._start_logs(cluster_id, topic_overrides)
        self._start_replication_and_coordinators(topic_overrides, last_config_change)
        await self._listen_and_register()
        await self._start_controller()
        self._start_background_tasks()
        logger.info(
            "broker %d started, listening on %s",
            self.broker_id,
            ", ".join(f"{n}://{h or '0.0.0.0'}:{p}" for n, h, p in self.bound_listeners),
        )

    async def _connect_to_zookeeper(self) -> str:
        """The ZooKeeper session (given up by :meth:`stop_starting`); the cluster id, and
        this broker's id if ZooKeeper is to assign it."""
        config = self.config
        self.zk = KafkaZkClient(
            config["zookeeper.connect"],
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
            give_up=self._stop_starting,
            security=zk_client_security(config),
        )
        await asyncio.to_thread(self.zk.start)
        cluster_id = await asyncio.to_thread(self.zk.get_or_create_cluster_id)
        if self.broker_id < 0:
            self.broker_id = await asyncio.to_thread(self.zk.generate_broker_id)
        return cluster_id

    async def _load_dynamic_config(self) -> int:
        """The dynamic broker configs layered over the static ones, their replication
        rates set, and the users' and clients' configs (quotas, SCRAM credentials); the
        last config change notification that covers."""
        self.config, last_change = await load_broker_config(self.zk, self.broker_id, self.config)
        self.throttles.set_rates(self.config)
        self.entity_configs = EntityConfigs(self.zk)
        await asyncio.to_thread(self.entity_configs.load)
        return last_change

    async def _load_zk_security(self) -> None:
        """ACLs and delegation tokens loaded, and the client quotas set up, before any
        request is served (see :mod:`.zk_security_state`)."""
        self.zk_security = await ZkSecurityState.load(self.config, self.zk.zk)
        self.authorizer = self.zk_security.authorizer
        self.delegation_tokens = self.zk_security.delegation_tokens
        self.quotas = request_quotas(self.config, self.entity_configs)
        self.dispatcher.quotas = self.quotas

    async def _start_logs(self, cluster_id: str, topic_overrides: dict[str, dict[str, str]]):
        """The metadata cache and the logs, loaded (recovered after an unclean shutdown)
        with each topic's overrides."""
        config = self.config
        self.metadata = MetadataCache(cluster_id)
        self.log_manager = LogManager(
            config.log_dirs,
            config.log_config(),
            broker_id=self.broker_id,
            cluster_id=cluster_id,
            topic_configs={
                topic: log_config_for(config, topic, overrides)
                for topic, overrides in topic_overrides.items()
                if overrides
            },
            on_dir_failure=self._log_dir_failed,
            flush_scheduler_interval_ms=config["log.flush.scheduler.interval.ms"],
            cleaner_config=CleanerConfig(
                log_cleaner_enable=config["log.cleaner.enable"],
                log_cleaner_threads=config["log.cleaner.threads"],
                log_cleaner_dedupe_buffer_size=config["log.cleaner.dedupe.buffer.size"],
                log_cleaner_backoff_ms=config["log.cleaner.backoff.ms"],
            ),
        )
        await asyncio.to_thread(self.log_manager.startup)

    def _start_replication_and_coordinators(
        self, topic_overrides: dict[str, dict[str, str]], last_config_change: int
    ) -> None:
        config = self.config
        self.dynamic_config = DynamicConfig(
            self.zk,
            self.broker_id,
            self.log_manager,
            self.throttles,
            self.entity_configs,
            overrides=topic_overrides,
            last_change=last_config_change,
            current=lambda: self.config,
            apply_broker_config=self.with_config,
        )
        self.inter_broker_security = ClientSecurity.inter_broker(config)
        self.replica_manager = ReplicaManager(
            self.broker_id,
            self.log_manager,
            fetcher_config=FetcherConfig(
                replica_id=self.broker_id,
                max_wait_ms=config["replica.fetch.wait.max.ms"],
                min_bytes=config["replica.fetch.min.bytes"],
                partition_max_bytes=config["replica.fetch.max.bytes"],
                response_max_bytes=config["replica.fetch.response.max.bytes"],
                backoff_ms=config["replica.fetch.backoff.ms"],
                socket_timeout_ms=config["replica.socket.timeout.ms"],
                connect_timeout_ms=config["socket.connection.setup.timeout.ms"],
                security=self.inter_broker_security,
            ),
            num_fetchers=config["num.replica.fetchers"],
            endpoint_of=self._inter_broker_endpoint,
            isr_writer=lambda changes: write_isrs(self.zk, changes),
            follower_quota=self.follower_quota,
            known_to_cluster=lambda topic, index: self.metadata.partition(topic, index) is not None,
        )
        self.log_dir_mover = LogDirMover(self.replica_manager, quota=self.alter_log_dirs_quota)
        self.log_manager.set_draining_dirs(config["log.dirs.draining"])
        self.group_coordinator = GroupCoordinator(
            self.replica_manager, CoordinatorConfig.from_broker(config)
        )
        self.controller_requests = ControllerRequests(
            self.replica_manager, self.group_coordinator, self.metadata, self.dynamic_config
        )
        self.producer_ids = ProducerIdManager(
            lambda: self.zk.allocate_producer_id_block(self.broker_id)
        )

    async def _listen_and_register(self) -> None:
        """Bind the listeners, leave the ISRs of partitions this broker lost, register
        in ``/brokers/ids``; on failure, undo what was started."""
        config = self.config
        self._connection_limits = LimitsOfConfig()
        self.network = SocketServer(
            self.dispatcher,
            max_request_bytes=config["socket.request.max.bytes"],
            idle_timeout_ms=config["connections.max.idle.ms"],
            send_buffer_bytes=config["socket.send.buffer.bytes"],
            receive_buffer_bytes=config["socket.receive.buffer.bytes"],
            bursts=self.dispatcher,
            limits=lambda: self._connection_limits(self.config),
        )
        try:
            self.listener_security = ListenerSecurity(config)
            self.dynamic_config.on_broker_config(self.listener_security.reconfigure)
            self.listener_security.follow_client(
                inter_broker_listener(config), self.inter_broker_security.ssl_context
            )
            for spec in self.listener_security.listeners:
                tls = self.listener_security.tls.get(spec.name)
                bound = await self.network.listen(
                    spec.name,
                    spec.host,
                    spec.port,
                    tls and tls.front,
                    security_protocol=spec.security_protocol,
                    principal_of=tls and spec.security_protocol == "SSL" and tls.principal_of,
                )
                self.bound_listeners.append((spec.name, spec.host, bound))
            hosted = set(self.log_manager.logs)
            await asyncio.to_thread(leave_isrs_of_lost_replicas, self.zk, self.broker_id, hosted)
            await asyncio.to_thread(self.zk.register_broker, self._registration())
        except BaseException:
            await self.network.close()
            await asyncio.to_thread(self.log_manager.shutdown)
            await asyncio.to_thread(self.zk.close)
            raise

    async def _start_controller(self) -> None:
        """Run for controller; return once the election ran (an elected controller has
        sent this broker its metadata by then; one that lost serves what it knows)."""
        config = self.config
        control_listener = control_plane_listener(config)
        control_security = self.inter_broker_security
        if control_listener != inter_broker_listener(config):
            control_security = ClientSecurity.for_listener(config, control_listener)
            self.listener_security.follow_client(control_listener, control_security.ssl_context)
        self.controller = Controller(
            self.broker_id,
            self.zk,
            ControllerChannel(
                self.broker_id,
                self.controller_requests,
                inter_broker_listener(config),
                control_listener=control_listener,
                security=control_security,
                request_timeout_ms=config["controller.socket.timeout.ms"],
                connect_timeout_ms=config["socket.connection.setup.timeout.ms"],
            ),
            unclean_leader_election=lambda: self.config["unclean.leader.election.enable"],
        )
        self.internal_topics = InternalTopics(
            lambda: self.config, self.metadata, self.zk, self.controller
        )
        self.controller.start()
        # Queued behind the election.
        await self.controller.enqueue(self._election_done)
        self.zk.on_session_change(self._session_lost, self._session_renewed)

    def _start_background_tasks(self) -> None:
        config = self.config
        self.dynamic_config.read_again()  # the first pass arms the watch
        self.log_dir_mover.start()
        self._tasks += [
            asyncio.create_task(self.dynamic_config.follow(), name="config-changes"),
            asyncio.create_task(
                self._every(
                    config["log.retention.check.interval.ms"], self.log_manager.cleanup_logs
                )
            ),
            asyncio.create_task(
                shrink_isrs(self.replica_manager, config["replica.lag.time.max.ms"]),
                name="isr-shrink",
            ),
            asyncio.create_task(self._expire_offsets(), name="offsets-expiry"),
            asyncio.create_task(
                self._every(
                    config["log.flush.offset.checkpoint.interval.ms"],
                    self.log_manager.checkpoint,
                    # read on the event loop, which owns the partitions
                    arguments=lambda: (self.replica_manager.high_watermarks(),),
                )
            ),
        ]
        self._tasks += self.zk_security.follow(config, self._every)
        if config["auto.leader.rebalance.enable"]:
            self._tasks.append(
                self.controller.start_leader_rebalance(
                    config["leader.imbalance.check.interval.seconds"],
                    config["leader.imbalance.per.broker.percentage"],
                )
            )

    async def _election_done(self) -> None:
        self.ready.set()

    # -- ZooKeeper session expiry ------------------------------------------------------------

    def _hand_over(self, callback) -> None:
        """From another thread (kazoo's, a log I/O worker's) to the event loop, nothing else."""
        with contextlib.suppress(RuntimeError):  # a closed loop: the broker has stopped
            self._loop.call_soon_threadsafe(callback)

    def _session_lost(self) -> None:
        self._hand_over(self.controller.resign)

    def _session_renewed(self) -> None:
        self._hand_over(lambda: self._tasks.append(asyncio.create_task(self._rejoin())))

    async def _rejoin(self) -> None:
        """A new session has none of the old one's ephemeral nodes and watches: register
        again, run for controller again, follow the config changes again."""
        logger.warning("new ZooKeeper session: registering broker %d again", self.broker_id)
        try:
            await asyncio.to_thread(self.zk.register_broker, self._registration())
        except BrokerIdTakenError as error:
            logger.error("%s", error)
        self.controller.elect()
        self.dynamic_config.read_again()
        self.zk_security.read_again()

    def _registration(self) -> BrokerRegistration:
        bound = {name: port for name, _, port in self.bound_listeners}
        endpoints, protocols = [], []
        for spec in listener_specs(self.config, advertised=True):
            # Like Kafka: an empty host advertises the machine's name.
            port = spec.port or bound.get(spec.name, spec.port)
            endpoints.append((spec.name, spec.host or socket.getfqdn(), port))
            protocols.append((spec.name, spec.security_protocol))
        return BrokerRegistration(
            self.broker_id,
            tuple(endpoints),
            self.config["broker.rack"],
            protocols=tuple(protocols),
        )

    async def _every(self, interval_ms: int, work, arguments=lambda: ()) -> None:
        """Run blocking ``work`` in a worker thread every ``interval_ms``."""
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await asyncio.to_thread(work, *arguments())
            except Exception:
                logger.exception("periodic task %r failed", work)

    # -- background work ---------------------------------------------------------------------

    async def _expire_offsets(self) -> None:
        while True:
            await asyncio.sleep(self.config["offsets.retention.check.interval.ms"] / 1000)
            try:
                self.group_coordinator.expire_offsets()
            except Exception:
                logger.exception("expiring committed offsets failed")

    def _log_dir_failed(self, directory: Path, reason: str) -> None:
        """The log manager took ``directory`` offline (called on whichever thread hit
        the error): the broker lets go of its partitions and tells the controller."""
        self._hand_over(
            lambda: self._tasks.append(asyncio.create_task(self._handle_log_dir_failure(directory)))
        )

    async def _handle_log_dir_failure(self, directory: Path) -> None:
        """Kafka's handleLogDirFailure (KIP-112): the partitions of the failed directory
        stop being led or followed here, the group coordinator gives up the offsets
        partitions among them, and a /log_dir_event_notification makes the controller
        ask this broker (LeaderAndIsr) which replicas it lost, elect other leaders for
        them and take them out of their ISRs. The other directories serve on."""
        replica_manager = getattr(self, "replica_manager", None)  # none while loading
        dropped = replica_manager.drop_offline_partitions() if replica_manager else []
        for topic, partition in dropped:
            if topic == OFFSETS_TOPIC:
                self.group_coordinator.resigned(partition)
        logger.error(
            "log directory %s failed; %d partitions offline on broker %d: %s",
            directory,
            len(dropped),
            self.broker_id,
            [f"{t}-{p}" for t, p in dropped[:20]],
        )
        try:
            await asyncio.to_thread(self.zk.announce_log_dir_failure, self.broker_id)
        except SESSION_ERRORS as error:  # the controller learns it at re-registration
            logger.warning("log dir failure not announced: no ZooKeeper (%r)", error)

    def _inter_broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        registration = self.metadata.brokers.get(broker_id)
        if registration is None:
            return None
        return inter_broker_endpoint(registration, inter_broker_listener(self.config))

    async def shutdown(self) -> None:
        """Controlled shutdown first (while this broker still serves, so it can become a
        follower or stop its replicas as the controller says), then the rest."""
        logger.info("broker %d shutting down", self.broker_id)
        if self.config["controlled.shutdown.enable"]:
            await shut_down_controlled(
                ShuttingDownBroker(
                    self.broker_id,
                    self.config,
                    self.zk,
                    self.metadata,
                    self.controller.controlled_shutdown,
                )
            )
        for task in self._tasks:
            task.cancel()
        if self.controller.is_active:
            # A new controller would send every state again; this spares brokers the wait.
            await self.controller.channel.flush(CONTROLLER_FLUSH_TIMEOUT_S)
        await self.controller.stop()
        await self.network.close()
        await self.group_coordinator.shutdown()
        await self.log_dir_mover.stop()
        await self.replica_manager.shutdown()
        high_watermarks = self.replica_manager.high_watermarks()
        # Not in the default executor: without ZooKeeper its workers may all be waiting
        # on requests kazoo holds until it reconnects or is closed (last, below).
        loop = asyncio.get_running_loop()
        with concurrent.futures.ThreadPoolExecutor(1, "broker-shutdown") as executor:
            await loop.run_in_executor(executor, self.log_manager.checkpoint, high_watermarks)
            await loop.run_in_executor(executor, self.log_manager.shutdown)
            await loop.run_in_executor(executor, self.zk.close)
        self.stopped.set()
        logger.info("broker %d shut down cleanly", self.broker_id)

    # -- the inter-broker APIs (controller.channel.LocalBroker) ------------------------------

    async def handle_leader_and_isr(
        self, controller_id: int, controller_epoch: int, states: list[PartitionLeadership]
    ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        return await self.controller_requests.handle_leader_and_isr(
            controller_id, controller_epoch, states
        )

    async def handle_update_metadata(
        self,
        controller_id: int,
        controller_epoch: int,
        brokers: dict[int, BrokerRegistration],
        states: list[PartitionLeadership],
    ) -> ErrorCode:
        return await self.controller_requests.handle_update_metadata(
            controller_id, controller_epoch, brokers, states
        )

    async def handle_stop_replica(
        self, controller_id: int, controller_epoch: int, replicas: list[ReplicaToStop]
    ) -> ErrorCode:
        return await self.controller_requests.handle_stop_replica(
            controller_id, controller_epoch, replicas
        )

    # -- helpers for handlers ------------------------------------------------------------------

    @staticmethod
    def replica_manager_error(code: ErrorCode, message: str | None = None) -> AppendResult:
        return AppendResult(code, message=message)

    def topic_id(self, topic: str) -> uuid.UUID:
        entry = self.metadata.topics.get(topic)
        return entry.topic_id if entry else uuid.UUID(int=0)

    def with_config(self, config: BrokerConfig) -> None:
        self.config = config
        self.log_manager.default_config = replace(config.log_config())
        self.log_manager.set_draining_dirs(config["log.dirs.draining"])
        self.log_dir_mover.wake()
