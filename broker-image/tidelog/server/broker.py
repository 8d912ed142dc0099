"""The broker: storage, ZooKeeper membership, the controller role, the network.

Start-up order: ZooKeeper session and cluster id, the logs (recovered if the last
shutdown was unclean), the listeners, the ISRs this broker leaves because it holds no log
of their partition (say its disks were replaced), then the ``/brokers/ids/<id>``
registration (the registration of this broker's previous, killed run is waited out until
its session expires; an id a live broker keeps stops the start with one clear error, see
``KafkaZkClient.register_broker``), then the controller election. Shut-down reverses it
and ends with the logs flushed, checkpointed and marked clean.

Dynamic configuration (seed 003): the dynamic broker configs in ZooKeeper are layered
over the static ones at start-up, and the broker follows ``/config/changes``: the kazoo
watch only hands over to the event loop, which reads the announced entity (ZooKeeper
calls in worker threads) and applies it, a topic's overrides to its logs, a broker
change (this broker's or ``<default>``) to the defaults of every topic without an
override of its own.

Cluster: the controller (one of the brokers) tells every broker what to host and what the
cluster looks like through LeaderAndIsr, UpdateMetadata and StopReplica, answered here
(``handle_*``) whether they come over the network or from this broker's own controller;
a request of an older controller epoch is refused. When the ZooKeeper session expires
the broker gives up the controller role; on the new session it registers again and runs
for controller again.

A broker whose ZooKeeper is gone still shuts down, cleanly and in bounded time: its
controlled shutdown gives up after its retries, the logs are closed in a thread of their
own (the worker threads may all wait on ZooKeeper requests, which kazoo holds until it
reconnects), and the ZooKeeper client's close is bounded (see ``KafkaZkClient.close``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import logging
import socket
import threading
import time
import uuid
from dataclasses import replace
from pathlib import Path

from kazoo.exceptions import ConnectionLoss

from tidelog.controller.channel import ControllerChannel
from tidelog.controller.controller import Controller
from tidelog.controller.election import without_lost_replica
from tidelog.controller.requests import (
    PartitionLeadership,
    ReplicaToStop,
    inter_broker_endpoint,
)
from tidelog.controller.zk_brokers import BrokerIdTakenError
from tidelog.controller.zk_client import KafkaZkClient, TopicExistsError
from tidelog.controller.zk_configs import config_change_number
from tidelog.controller.zk_data import (
    DEFAULT_ENTITY,
    BrokerRegistration,
    PartitionState,
    TopicAssignment,
    new_uuid,
)
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
from tidelog.replication.quota import (
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    ReplicationQuota,
)
from tidelog.replication.replica_manager import AppendResult, ReplicaManager
from tidelog.server.config import BrokerConfig, ConfigError
from tidelog.server.controlled_shutdown import shut_down_controlled
from tidelog.server.dispatch import RequestDispatcher
from tidelog.server.fetch_sessions import FetchSessionCache
from tidelog.server.handlers.create_topics import TopicRequestError, plan_topic
from tidelog.server.metadata_cache import MetadataCache, PartitionMetadata
from tidelog.server.network import SocketServer
from tidelog.storage.cleaner import CleanerConfig
from tidelog.storage.config import LogConfig, LogConfigError
from tidelog.storage.errors import KafkaStorageError
from tidelog.storage.log import Log
from tidelog.storage.log_manager import LogManager

__all__ = ["Broker"]

logger = logging.getLogger(__name__)

# How long a stopping controller waits for its last requests to reach the brokers.
CONTROLLER_FLUSH_TIMEOUT_S = 5.0
# Rounds of reading and conditionally writing the ISRs this broker leaves at start-up.
ISR_LEAVE_ATTEMPTS = 5


class Broker:
    def __init__(self, config: BrokerConfig):
        self.config = config
        self.broker_id = config.broker_id
        self.advertised_versions: list = []
        self.dispatcher = RequestDispatcher(self)
        self.bound_listeners: list[tuple[str, str, int]] = []
        self._controller_epoch = 0
        # LeaderAndIsr and StopReplica one at a time (Kafka's replicaStateChangeLock): one
        # waits in a worker thread for file work that another must not interleave with.
        self._replica_state_change = asyncio.Lock()
        self._tasks: list[asyncio.Task] = []
        self.stopped = asyncio.Event()
        # Set when the broker is stopped during start-up: the wait for ZooKeeper ends.
        self._stop_starting = threading.Event()
        # Listeners are bound before registration (a port 0 listener must be known to
        # register it), but requests wait until the controller election has run, so a
        # client never learns an empty cluster from a broker that is starting.
        self.ready = asyncio.Event()
        # Each topic's overrides as last read from /config/topics/<topic>.
        self._topic_overrides: dict[str, dict[str, str]] = {}
        self._last_config_change = -1
        self._config_changed = asyncio.Event()
        # Replication throttles (seed 003 修改主题限速): rates from the broker configs
        # (``_apply_quota_rates``), throttled replicas from each topic's overrides
        # (``_throttle_replicas``); the log-dir mover's copy rate too.
        self.leader_quota = self._replication_quota()
        self.follower_quota = self._replication_quota()
        self.alter_log_dirs_quota = self._replication_quota()
        self.fetch_sessions = FetchSessionCache(config["max.incremental.fetch.session.cache.slots"])

    # -- life cycle ----------------------------------------------------------------------

    def stop_starting(self) -> None:
        """A stop asked while the broker starts: a start still waiting for ZooKeeper gives
        up at once (ZooKeeperStartStopped), since nothing is loaded or registered yet."""
        self._stop_starting.set()

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        config = self.config
        self.zk = KafkaZkClient(
            config["zookeeper.connect"],
            session_timeout_ms=config["zookeeper.session.timeout.ms"],
            connection_timeout_ms=config["zookeeper.connection.timeout.ms"],
            give_up=self._stop_starting,
        )
        await asyncio.to_thread(self.zk.start)
        cluster_id = await asyncio.to_thread(self.zk.get_or_create_cluster_id)
        if self.broker_id < 0:
            self.broker_id = await asyncio.to_thread(self.zk.generate_broker_id)
        await self._load_dynamic_config()
        self._apply_quota_rates()
        config = self.config
        self.metadata = MetadataCache(cluster_id)
        self.log_manager = LogManager(
            config.log_dirs,
            config.log_config(),
            broker_id=self.broker_id,
            cluster_id=cluster_id,
            topic_configs=await asyncio.to_thread(self._topic_configs),
            on_dir_failure=self._log_dir_failed,
            cleaner_config=CleanerConfig(
                log_cleaner_enable=config["log.cleaner.enable"],
                log_cleaner_threads=config["log.cleaner.threads"],
                log_cleaner_dedupe_buffer_size=config["log.cleaner.dedupe.buffer.size"],
                log_cleaner_backoff_ms=config["log.cleaner.backoff.ms"],
            ),
        )
        await asyncio.to_thread(self.log_manager.startup)
        for topic, overrides in self._topic_overrides.items():
            self._throttle_replicas(topic, overrides)
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
            ),
            num_fetchers=config["num.replica.fetchers"],
            endpoint_of=self._inter_broker_endpoint,
            isr_writer=self._write_isrs,
            follower_quota=self.follower_quota,
            known_to_cluster=lambda topic, index: self.metadata.partition(topic, index) is not None,
        )
        self.log_dir_mover = LogDirMover(self.replica_manager, quota=self.alter_log_dirs_quota)
        self.log_manager.set_draining_dirs(config["log.dirs.draining"])
        self.group_coordinator = GroupCoordinator(
            self.replica_manager, CoordinatorConfig.from_broker(config)
        )
        self._creating_offsets_topic: asyncio.Task | None = None
        self._offsets_topic_wait_logged: int | None = None  # alive brokers last logged
        self.producer_ids = ProducerIdManager(
            lambda: self.zk.allocate_producer_id_block(self.broker_id)
        )
        self.network = SocketServer(
            self.dispatcher,
            max_request_bytes=config["socket.request.max.bytes"],
            idle_timeout_ms=config["connections.max.idle.ms"],
            send_buffer_bytes=config["socket.send.buffer.bytes"],
            receive_buffer_bytes=config["socket.receive.buffer.bytes"],
            bursts=self.dispatcher,
        )
        try:
            for name, host, port in config.listeners:
                bound = await self.network.listen(name, host, port)
                self.bound_listeners.append((name, host, bound))
            await asyncio.to_thread(self._leave_isrs_of_lost_replicas)
            await asyncio.to_thread(self.zk.register_broker, self._registration())
        except BaseException:
            await self.network.close()
            await asyncio.to_thread(self.log_manager.shutdown)
            await asyncio.to_thread(self.zk.close)
            raise
        self.controller = Controller(
            self.broker_id,
            self.zk,
            ControllerChannel(
                self.broker_id,
                self,
                config["inter.broker.listener.name"],
                request_timeout_ms=config["controller.socket.timeout.ms"],
                connect_timeout_ms=config["socket.connection.setup.timeout.ms"],
            ),
            unclean_leader_election=lambda: self.config["unclean.leader.election.enable"],
        )
        self.controller.start()
        # Queued behind the election: once it ran, an elected controller has sent us
        # our metadata; a broker that lost the election serves what it knows.
        await self.controller.enqueue(self._election_done)
        self.zk.on_session_change(self._session_lost, self._session_renewed)
        self._config_changed.set()  # the first pass arms the watch
        self.log_dir_mover.start()
        self._tasks += [
            asyncio.create_task(self._follow_config_changes(), name="config-changes"),
            asyncio.create_task(
                self._every(
                    config["log.retention.check.interval.ms"], self.log_manager.cleanup_logs
                )
            ),
            asyncio.create_task(self._shrink_isrs(), name="isr-shrink"),
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
        if config["auto.leader.rebalance.enable"]:
            self._tasks.append(
                self.controller.start_leader_rebalance(
                    config["leader.imbalance.check.interval.seconds"],
                    config["leader.imbalance.per.broker.percentage"],
                )
            )
        logger.info(
            "broker %d started, listening on %s",
            self.broker_id,
            ", ".join(f"{n}://{h or '0.0.0.0'}:{p}" for n, h, p in self.bound_listeners),
        )

    async def _election_done(self) -> None:
        self.ready.set()

    def _topic_configs(self) -> dict[str, LogConfig]:
        configs = {}
        for topic in self.zk.topics():
            overrides = self.zk.entity_config("topics", topic)
            self._topic_overrides[topic] = overrides
            if overrides:
                configs[topic] = self._log_config_for(topic, overrides)
        return configs

    # -- dynamic configuration ----------------------------------------------------------------

    async def _load_dynamic_config(self) -> None:
        """Start-up: layer the dynamic broker configs over the static ones. Notifications
        already in ZooKeeper are covered by this read, so following starts after them."""
        changes = await asyncio.to_thread(self.zk.config_changes)
        if changes:
            self._last_config_change = config_change_number(changes[-1])
        cluster, mine = await asyncio.to_thread(self.zk.broker_configs, self.broker_id)
        if cluster or mine:
            self.config = self._with_dynamic(cluster, mine) or self.config

    def _log_config_for(self, topic: str, overrides: dict[str, str]) -> LogConfig:
        base = self.config.log_config()
        try:
            return LogConfig.from_properties(overrides, base=base)
        except LogConfigError as error:
            logger.error("ignoring the config overrides of topic %s: %s", topic, error)
            return base

    def _config_changes_watch(self, _event=None) -> None:
        """kazoo's thread: hand over to the event loop, nothing else."""
        with contextlib.suppress(RuntimeError):  # a closed loop: the broker has stopped
            self._loop.call_soon_threadsafe(self._config_changed.set)

    async def _follow_config_changes(self) -> None:
        while True:
            await self._config_changed.wait()
            self._config_changed.clear()
            try:
                await self._process_config_changes()
            except ConnectionLoss:  # kazoo holds the next try until it has reconnected
                self._config_changed.set()
            except SESSION_ERRORS:
                logger.warning("following /config/changes: ZooKeeper session lost until a new one")
            except Exception:
                logger.exception("processing /config/changes failed; retrying")
                await asyncio.sleep(1)
                self._config_changed.set()

    async def _process_config_changes(self) -> None:
        names = await asyncio.to_thread(self.zk.config_changes, self._config_changes_watch)
        entities: list[tuple[str, str]] = []
        for name in names:
            try:
                number = config_change_number(name)
            except ValueError:
                continue
            if number <= self._last_config_change:
                continue
            entity = await asyncio.to_thread(self.zk.config_change, name)
            self._last_config_change = number
            if entity is not None and entity not in entities:
                entities.append(entity)
        for entity_type, entity_name in entities:
            if entity_type == "topics":
                await self.apply_topic_config_change(entity_name)
            elif entity_type == "brokers" and entity_name in (DEFAULT_ENTITY, str(self.broker_id)):
                await self.apply_broker_config_change()
        if names:
            now_ms = int(time.time() * 1000)
            await asyncio.to_thread(self.zk.purge_config_changes, names, now_ms)

    async def apply_topic_config_change(self, topic: str, *, announced: bool = True) -> None:
        """Re-read a topic's overrides and apply them to its logs."""
        overrides = await asyncio.to_thread(self.zk.entity_config, "topics", topic)
        self._topic_overrides[topic] = overrides
        self.log_manager.set_topic_config(topic, self._log_config_for(topic, overrides))
        self._throttle_replicas(topic, overrides)
        if announced:
            logger.info("topic %s: config overrides now %s", topic, overrides)

    def _with_dynamic(self, cluster: dict[str, str], mine: dict[str, str]) -> BrokerConfig | None:
        """The static config under the dynamic ones read from ZooKeeper; None (logged)
        when they are invalid. Draining entries of directories this broker no longer has
        are left out with a warning (:meth:`BrokerConfig.without_stale_draining`)."""
        mine, stale = self.config.without_stale_draining(mine)
        if stale:
            logger.warning("log.dirs.draining: %s not among log.dirs any more; ignored", stale)
        try:
            return self.config.with_dynamic(cluster, mine)
        except ConfigError as error:
            logger.error("ignoring the dynamic broker configs in ZooKeeper: %s", error)
            return None

    async def apply_broker_config_change(self) -> None:
        """Re-read the dynamic broker configs (this broker's and ``<default>``) and apply
        them; topics follow the new defaults where they have no override."""
        cluster, mine = await asyncio.to_thread(self.zk.broker_configs, self.broker_id)
        config = self._with_dynamic(cluster, mine)
        if config is None:
            return
        self.with_config(config)
        self._apply_quota_rates()
        hosted = {topic for topic, _ in self.log_manager.logs}
        for topic in sorted(hosted | set(self._topic_overrides)):
            overrides = self._topic_overrides.get(topic, {})
            self.log_manager.set_topic_config(topic, self._log_config_for(topic, overrides))
        logger.info("dynamic broker configs now: cluster-wide %s, broker %s", cluster, mine)

    def _replication_quota(self) -> ReplicationQuota:
        """An unthrottled quota with the configured windows (read-only keys)."""
        return ReplicationQuota(
            samples=self.config["replication.quota.window.num"],
            window_ms=self.config["replication.quota.window.size.seconds"] * 1000,
        )

    def _apply_quota_rates(self) -> None:
        config = self.config
        self.leader_quota.set_rate(config["leader.replication.throttled.rate"])
        self.follower_quota.set_rate(config["follower.replication.throttled.rate"])
        self.alter_log_dirs_quota.set_rate(config["replica.alter.log.dirs.io.max.bytes.per.second"])

    def _throttle_replicas(self, topic: str, overrides: dict[str, str]) -> None:
        """The topic's replicas that the leader and follower quotas throttle on this
        broker: the entries of its throttled-replicas lists that name this broker."""
        for quota, name in (
            (self.leader_quota, LEADER_THROTTLED_REPLICAS),
            (self.follower_quota, FOLLOWER_THROTTLED_REPLICAS),
        ):
            quota.follow_topic_config(topic, name, overrides.get(name, ""), self.broker_id)

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
        self._config_changed.set()

    def _registration(self) -> BrokerRegistration:
        bound = {name: port for name, _, port in self.bound_listeners}
        endpoints = []
        for name, host, port in self.config.advertised_listeners:
            # Like Kafka: an empty host advertises the machine's name.
            endpoints.append((name, host or socket.getfqdn(), port or bound.get(name, port)))
        return BrokerRegistration(self.broker_id, tuple(endpoints), self.config["broker.rack"])

    async def _every(self, interval_ms: int, work, arguments=lambda: ()) -> None:
        """Run blocking ``work`` in a worker thread every ``interval_ms``."""
        while True:
            await asyncio.sleep(interval_ms / 1000)
            try:
                await asyncio.to_thread(work, *arguments())
            except Exception:
                logger.exception("periodic task %r failed", work)

    # -- the ISR of the partitions this broker leads ----------------------------------------------

    async def _shrink_isrs(self) -> None:
        """Kafka checks every half of replica.lag.time.max.ms."""
        while True:
            await asyncio.sleep(self.config["replica.lag.time.max.ms"] / 2000)
            try:
                self.replica_manager.shrink_isrs(self.config["replica.lag.time.max.ms"])
            except Exception:
                logger.exception("shrinking ISRs failed")

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

    async def _write_isrs(self, changes: list[tuple[object, list[int]]]) -> list[int | None]:
        """Leaders' ISR changes: the partition states in ZooKeeper, each conditional on
        the version it holds, written together, then one /isr_change_notification for
        the controller naming them; each new version, or None where the state changed
        meanwhile (a controller decision wins) or ZooKeeper is away (a later check tries
        again)."""
        states = {
            (p.topic, p.index): PartitionState(
                p.leader, p.leader_epoch, isr, p.controller_epoch, p.zk_version
            )
            for p, isr in changes
        }
        try:
            versions = await asyncio.to_thread(self.zk.update_partition_states, states)
        except SESSION_ERRORS as error:
            logger.warning(
                "ISRs of %d partitions not written: no ZooKeeper (%r)", len(states), error
            )
            return [None] * len(changes)
        for key, version in versions.items():
            if version is None:
                logger.info(
                    "%s-%d: ISR %s not written: the state changed meanwhile", *key, states[key].isr
                )
        written = [key for key, version in versions.items() if version is not None]
        if written:
            await asyncio.to_thread(self.zk.announce_isr_changes, written)
        return [versions[(p.topic, p.index)] for p, _ in changes]

    def _leave_isrs_of_lost_replicas(self) -> None:
        """Before it registers (so before any controller can elect it): the ISRs that list
        this broker for a partition it holds no log of lose it, and so does the leadership
        where it led. Its disks were replaced, the directory failed, or it crashed before
        creating the log: either way it has none of the records the ISR vouches for, and
        elected it would have the other replicas truncate theirs. Each state gets a new
        leader epoch (as the controller's removal of a replica from an ISR does: the
        replicas learn it by LeaderAndIsr), is written conditionally on its version,
        announced under /isr_change_notification like a leader's ISR change, and read
        again on a conflict (blocking: runs in a thread)."""
        hosted = set(self.log_manager.logs)
        for _ in range(ISR_LEAVE_ATTEMPTS):
            lacking = [
                (topic, partition)
                for topic, assignment in self.zk.topic_assignments(self.zk.topics()).items()
                for partition, replicas in assignment.partitions.items()
                if self.broker_id in replicas and (topic, partition) not in hosted
            ]
            proposals = {}
            for key, state in self.zk.partition_states(lacking).items():
                if self.broker_id in state.isr:
                    leader, isr = without_lost_replica(state.leader, state.isr, self.broker_id)
                    epoch = state.leader_epoch + 1  # the controller tells the replicas
                    proposals[key] = replace(state, leader=leader, leader_epoch=epoch, isr=isr)
            if not proposals:
                return
            versions = self.zk.update_partition_states(proposals)
            written = sorted(key for key, version in versions.items() if version is not None)
            if written:
                logger.warning(
                    "broker %d holds no log of %d partitions whose ISR listed it (its disks "
                    "were replaced?): it left those ISRs, e.g. %s",
                    self.broker_id,
                    len(written),
                    [f"{topic}-{partition}" for topic, partition in written[:10]],
                )
                self.zk.announce_isr_changes(written)
            if len(written) == len(proposals):
                return
        raise RuntimeError(
            f"broker {self.broker_id} could not leave the ISRs of the partitions it holds "
            f"no log of: their states kept changing ({ISR_LEAVE_ATTEMPTS} attempts)"
        )

    def _inter_broker_endpoint(self, broker_id: int) -> tuple[str, int] | None:
        registration = self.metadata.brokers.get(broker_id)
        if registration is None:
            return None
        return inter_broker_endpoint(registration, self.config["inter.broker.listener.name"])

    async def shutdown(self) -> None:
        """Controlled shutdown first (while this broker still serves, so it can become a
        follower or stop its replicas as the controller says), then the rest."""
        logger.info("broker %d shutting down", self.broker_id)
        if self.config["controlled.shutdown.enable"]:
            await shut_down_controlled(self)
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

    # -- requests from the controller --------------------------------------------------------

    def _fenced(self, controller_epoch: int) -> bool:
        """A request of an older controller epoch comes from a deposed controller."""
        if controller_epoch < self._controller_epoch:
            logger.warning(
                "ignoring a request of controller epoch %d < %d",
                controller_epoch,
                self._controller_epoch,
            )
            return True
        self._controller_epoch = controller_epoch
        return False

    async def handle_leader_and_isr(
        self, controller_id: int, controller_epoch: int, states: list[PartitionLeadership]
    ) -> tuple[ErrorCode, dict[tuple[str, int], ErrorCode]]:
        """Become leader or follower of each partition; the error of the request and of
        each partition (a partition at a newer leader epoch refuses an older one). The
        file work (new logs; new leaders' epoch checkpoints, two fsyncs each) runs in a
        worker thread, so a broker taking the lead of many partitions keeps answering;
        the request is answered once it is done."""
        async with self._replica_state_change:
            if self._fenced(controller_epoch):
                return ErrorCode.STALE_CONTROLLER_EPOCH, {}
            for topic in sorted({s.topic for s in states} - set(self._topic_overrides)):
                # A topic new to this broker: its logs start with its configs.
                await self.apply_topic_config_change(topic, announced=False)
            hosted = self.replica_manager.partitions
            new = [s for s in states if (s.topic, s.partition) not in hosted]
            if new:
                await asyncio.to_thread(self._create_logs, new)
            errors = {}
            unwritten_epochs: dict[tuple[str, int], Log] = {}
            for state in states:
                key = (state.topic, state.partition)
                errors[key] = self.replica_manager.become_leader_or_follower(
                    state.topic,
                    state.topic_id,
                    state.partition,
                    leader=state.leader,
                    leader_epoch=state.leader_epoch,
                    replicas=list(state.replicas),
                    isr=list(state.isr),
                    zk_version=state.zk_version,
                    controller_epoch=state.controller_epoch,
                    unwritten_epochs=unwritten_epochs,
                )
                if state.topic == OFFSETS_TOPIC and errors[key] == ErrorCode.NONE:
                    self._coordinate(state.partition)
            if unwritten_epochs:
                write = self.replica_manager.write_leader_epochs
                for key in await asyncio.to_thread(write, unwritten_epochs):
                    errors[key] = ErrorCode.KAFKA_STORAGE_ERROR
            return ErrorCode.NONE, errors

    def _create_logs(self, states: list[PartitionLeadership]) -> None:
        """Create the logs of partitions new to this broker (in a worker thread: a
        directory, index files and checkpoints each). A log that cannot be created is
        left for become_leader_or_follower to report."""
        for state in states:
            with contextlib.suppress(KafkaStorageError):
                self.log_manager.get_or_create_log(
                    state.topic, state.partition, topic_id=state.topic_id
                )

    def _coordinate(self, partition: int) -> None:
        """Coordinate the groups of an offsets partition this broker leads, and only those."""
        replica = self.replica_manager.partitions.get((OFFSETS_TOPIC, partition))
        if replica is not None and replica.is_leader:
            self.group_coordinator.elected(partition, replica.log)
        else:
            self.group_coordinator.resigned(partition)

    async def handle_update_metadata(
        self,
        controller_id: int,
        controller_epoch: int,
        brokers: dict[int, BrokerRegistration],
        states: list[PartitionLeadership],
    ) -> ErrorCode:
        """The controller's view: live brokers, the controller, partition states; the
        committed offsets of partitions it deletes go from the groups coordinated here."""
        if self._fenced(controller_epoch):
            return ErrorCode.STALE_CONTROLLER_EPOCH
        self.metadata.update_brokers(brokers)
        self.metadata.controller_id = controller_id
        deleted: set[tuple[str, int]] = set()
        for state in states:
            if state.deleted:
                self.metadata.remove_partition(state.topic, state.partition)
                deleted.add((state.topic, state.partition))
                continue
            self.metadata.update_partition(
                state.topic,
                state.topic_id,
                PartitionMetadata(
                    state.partition,
                    state.leader,
                    state.leader_epoch,
                    list(state.replicas),
                    list(state.isr),
                    list(state.offline_replicas),
                ),
            )
        if deleted:
            self.group_coordinator.partitions_deleted(deleted)
        return ErrorCode.NONE

    def replica_log_end(
        self, topic: str, partition: int, leader_epoch: int
    ) -> tuple[ErrorCode, int, int]:
        """Where this broker's replica stands, for its own controller's recovery (the other
        brokers answer it as OffsetForLeaderEpoch from the debugging replica id)."""
        return self.replica_manager.replica_log_end(topic, partition, leader_epoch)

    async def handle_stop_replica(
        self, controller_id: int, controller_epoch: int, replicas: list[ReplicaToStop]
    ) -> ErrorCode:
        async with self._replica_state_change:
            if self._fenced(controller_epoch):
                return ErrorCode.STALE_CONTROLLER_EPOCH
            for replica in replicas:
                # On the event loop, which owns the partitions and their waiting fetches.
                self.replica_manager.stop_replica(replica.topic, replica.partition, replica.delete)
                if replica.topic == OFFSETS_TOPIC:
                    self.group_coordinator.resigned(replica.partition)
            # A topic of that name made later reads its configs afresh.
            hosted = {topic for topic, _ in self.log_manager.logs}
            for topic in {r.topic for r in replicas if r.delete} - hosted:
                self._topic_overrides.pop(topic, None)
            return ErrorCode.NONE

    # -- helpers for handlers ------------------------------------------------------------------

    async def auto_create_topic(self, name: str) -> ErrorCode:
        """Metadata's auto-creation with the broker defaults, from whichever broker is
        asked (as Kafka's): the assignment is written to ZooKeeper here, and the
        controller brings the topic online. NONE once written (or written already by
        someone else); the topic has leaders a moment later."""
        try:
            plan = plan_topic(self, name, -1, -1, [], {})
        except TopicRequestError as error:
            return error.code
        try:
            await self._write_new_topic(TopicAssignment(name, new_uuid(), plan), {})
        except TopicExistsError:
            return ErrorCode.NONE
        except Exception:
            logger.exception("auto-creating topic %s failed", name)
            return ErrorCode.LEADER_NOT_AVAILABLE
        logger.info("created topic %s on a client's Metadata request", name)
        return ErrorCode.NONE

    async def _write_new_topic(self, assignment: TopicAssignment, configs: dict[str, str]) -> None:
        """A topic the broker creates itself: through the controller's queue on the
        controller, else straight into ZooKeeper, whose watch brings it to the
        controller. Raises TopicExistsError when the topic exists already."""
        if not self.controller.is_active:
            await asyncio.to_thread(self.zk.create_topic, assignment, configs)
            return
        topic = assignment.topic
        failure = (await self.controller.add_topics([assignment], {topic: configs}))[topic]
        if failure is not None:
            raise failure

    async def create_offsets_topic(self) -> str | None:
        """``__consumer_offsets``, on the first FindCoordinator: compacted, with
        ``offsets.topic.replication.factor`` replicas. As in Kafka (KAFKA-3959), it is
        not created while fewer brokers are alive than that: a factor capped by the
        brokers up at that moment would stay too low for good, and the group offsets
        acknowledged on it would hang on one disk. Returns why it is not created yet
        (None: created, or being created). Any broker may write it to ZooKeeper; the
        controller brings it online."""
        factor = self.config["offsets.topic.replication.factor"]
        alive = len(self.metadata.brokers)
        if alive < factor:
            reason = (
                f"the offsets topic needs {factor} alive brokers "
                f"(offsets.topic.replication.factor), {alive} are alive"
            )
            if self._offsets_topic_wait_logged != alive:
                logger.info("not creating %s yet: %s", OFFSETS_TOPIC, reason)
                self._offsets_topic_wait_logged = alive
            return reason
        if self._creating_offsets_topic is None or self._creating_offsets_topic.done():
            self._creating_offsets_topic = asyncio.create_task(self._create_offsets_topic(factor))
        await asyncio.shield(self._creating_offsets_topic)
        return None

    async def _create_offsets_topic(self, factor: int) -> None:
        config = self.config
        configs = {
            "cleanup.policy": "compact",
            "compression.type": "producer",
            "segment.bytes": str(config["offsets.topic.segment.bytes"]),
        }
        try:
            plan = plan_topic(
                self, OFFSETS_TOPIC, config["offsets.topic.num.partitions"], factor, [], configs
            )
        except TopicRequestError as error:
            if error.code != ErrorCode.TOPIC_ALREADY_EXISTS:
                logger.error("cannot create %s: %s", OFFSETS_TOPIC, error)
            return
        assignment = TopicAssignment(OFFSETS_TOPIC, new_uuid(), plan)
        try:
            await self._write_new_topic(assignment, configs)
        except TopicExistsError:
            return
        except Exception:
            logger.exception("creating %s failed", OFFSETS_TOPIC)
            return
        logger.info("created %s with replication factor %d", OFFSETS_TOPIC, factor)

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
