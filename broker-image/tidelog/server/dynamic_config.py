"""Dynamic configuration (seed 003, 动态配置): the configs kept in ZooKeeper, layered over
the static ones at start-up and followed while the broker runs.

Precedence, as in Kafka: per-broker (``/config/brokers/<id>``) > cluster-wide
(``/config/brokers/<default>``) > static > default (:class:`BrokerConfig`); a topic's
overrides (``/config/topics/<topic>``) over the broker's log defaults. Start-up reads
the broker configs (:func:`load_broker_config`) and every topic's overrides
(:func:`read_topic_overrides`) before the logs load; notifications already in ZooKeeper
are covered by that read, so following (:class:`DynamicConfig`) starts after them.

Following ``/config/changes``: the kazoo watch only hands over to the event loop, which
reads the announced entity (ZooKeeper calls in worker threads) and applies it, a
topic's overrides to its logs and its throttled replicas, a broker change (this
broker's or ``<default>``) to the broker's configuration, its replication rates, and the
defaults of every topic without an override of its own, a user's or client's
(``users/alice``, ``users/alice/clients/app``, ``clients/app``) to the
:class:`~.entity_configs.EntityConfigs`.

Replication throttles (seed 003 修改主题限速): the rates come from the broker configs,
the throttled replicas from each topic's overrides (:class:`ReplicationThrottles`).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable

from kazoo.exceptions import ConnectionLoss

from tidelog.controller.zk_client import KafkaZkClient
from tidelog.controller.zk_configs import config_change_number
from tidelog.controller.zk_data import DEFAULT_ENTITY
from tidelog.controller.zk_session import SESSION_ERRORS
from tidelog.replication.quota import (
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    ReplicationQuota,
)
from tidelog.security.password_encoder import decode_passwords
from tidelog.server.config import BrokerConfig, ConfigError
from tidelog.server.entity_configs import CLIENTS, USERS, EntityConfigs
from tidelog.storage.config import LogConfig, LogConfigError
from tidelog.storage.log_manager import LogManager

__all__ = [
    "DynamicConfig",
    "ReplicationThrottles",
    "load_broker_config",
    "log_config_for",
    "read_topic_overrides",
]

logger = logging.getLogger(__name__)

# How long the follower waits after an unexpected failure before it reads again.
RETRY_AFTER_FAILURE_S = 1


class ReplicationThrottles:
    """The broker's replication quotas: the leader's (replica fetches it answers), the
    follower's (its own fetches) and the log-dir mover's copy rate. Unthrottled, with
    the configured windows (read-only keys), until rates are set."""

    def __init__(self, config: BrokerConfig):
        self.leader = self._unthrottled(config)
        self.follower = self._unthrottled(config)
        self.alter_log_dirs = self._unthrottled(config)

    @staticmethod
    def _unthrottled(config: BrokerConfig) -> ReplicationQuota:
        return ReplicationQuota(
            samples=config["replication.quota.window.num"],
            window_ms=config["replication.quota.window.size.seconds"] * 1000,
        )

    def set_rates(self, config: BrokerConfig) -> None:
        self.leader.set_rate(config["leader.replication.throttled.rate"])
        self.follower.set_rate(config["follower.replication.throttled.rate"])
        self.alter_log_dirs.set_rate(config["replica.alter.log.dirs.io.max.bytes.per.second"])

    def follow_topic(self, topic: str, overrides: dict[str, str], broker_id: int) -> None:
        """The topic's replicas that the leader and follower quotas throttle on broker
        ``broker_id``: the entries of its throttled-replicas lists that name it."""
        for quota, name in (
            (self.leader, LEADER_THROTTLED_REPLICAS),
            (self.follower, FOLLOWER_THROTTLED_REPLICAS),
        ):
            quota.follow_topic_config(topic, name, overrides.get(name, ""), broker_id)


def layered(config: BrokerConfig, cluster: dict[str, str], mine: dict[str, str]):
    """``config``'s static settings under the dynamic ones read from ZooKeeper (their
    passwords decoded); None (logged) when they are invalid. Draining entries of
    directories this broker no longer has are left out with a warning
    (:meth:`BrokerConfig.without_stale_draining`)."""
    mine, stale = config.without_stale_draining(mine)
    if stale:
        logger.warning("log.dirs.draining: %s not among log.dirs any more; ignored", stale)
    try:
        return config.with_dynamic(
            decode_passwords(config, cluster), decode_passwords(config, mine)
        )
    except ConfigError as error:
        logger.error("ignoring the dynamic broker configs in ZooKeeper: %s", error)
        return None


async def load_broker_config(
    zk: KafkaZkClient, broker_id: int, config: BrokerConfig
) -> tuple[BrokerConfig, int]:
    """Start-up: ``config`` with the dynamic broker configs layered over it, and the
    number of the last config change notification that read covers (-1: none)."""
    changes = await asyncio.to_thread(zk.config_changes)
    last_change = config_change_number(changes[-1]) if changes else -1
    cluster, mine = await asyncio.to_thread(zk.broker_configs, broker_id)
    if cluster or mine:
        config = layered(config, cluster, mine) or config
    return config, last_change


def read_topic_overrides(zk: KafkaZkClient) -> dict[str, dict[str, str]]:
    """Start-up: every topic's overrides (blocking: runs in a thread)."""
    return {topic: zk.entity_config("topics", topic) for topic in zk.topics()}


def log_config_for(config: BrokerConfig, topic: str, overrides: dict[str, str]) -> LogConfig:
    """The topic's log config: its overrides over the broker's defaults, or the defaults
    alone (logged) when the overrides do not parse."""
    base = config.log_config()
    try:
        return LogConfig.from_properties(overrides, base=base)
    except LogConfigError as error:
        logger.error("ignoring the config overrides of topic %s: %s", topic, error)
        return base


class DynamicConfig:
    """Follows ``/config/changes`` for broker ``broker_id`` and applies what changed:
    topic overrides to ``log_manager`` and ``throttles``, users' and clients' configs
    (quotas, SCRAM credentials) to ``entity_configs``, broker configs through
    ``apply_broker_config`` (which installs the new :class:`BrokerConfig`; ``current``
    returns the one in force). Made on the event loop, after the logs have loaded with
    ``overrides`` (:func:`read_topic_overrides`)."""

    def __init__(
        self,
        zk: KafkaZkClient,
        broker_id: int,
        log_manager: LogManager,
        throttles: ReplicationThrottles,
        entity_configs: EntityConfigs,
        *,
        overrides: dict[str, dict[str, str]],
        last_change: int,
        current: Callable[[], BrokerConfig],
        apply_broker_config: Callable[[BrokerConfig], None],
    ):
        self._zk = zk
        self._broker_id = broker_id
        self._log_manager = log_manager
        self._throttles = throttles
        self._entity_configs = entity_configs
        self._current = current
        self._apply_broker_config = apply_broker_config
        self._reconfigurables: list[Callable[[BrokerConfig], object]] = []
        # Each topic's overrides as last read from /config/topics/<topic>.
        self._topic_overrides = overrides
        self._last_change = last_change
        self._changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()
        for topic, topic_overrides in overrides.items():
            throttles.follow_topic(topic, topic_overrides, broker_id)

    def on_broker_config(self, reconfigure: Callable[[BrokerConfig], object]) -> None:
        """Have ``reconfigure`` called with each new broker config once it is installed
        (the listeners' TLS stores); a ConfigError it raises is logged, and what it
        reconfigures stays as it was."""
        self._reconfigurables.append(reconfigure)

    def knows(self, topic: str) -> bool:
        """Whether the topic's overrides have been read."""
        return topic in self._topic_overrides

    def forget(self, topic: str) -> None:
        """A deleted topic: one made later under its name reads its configs afresh."""
        self._topic_overrides.pop(topic, None)

    def read_again(self) -> None:
        """Read ``/config/changes`` (again) and arm its watch: the first time, and on a
        new ZooKeeper session (which has none of the old one's watches)."""
        self._changed.set()

    async def follow(self) -> None:
        """Forever: apply each change announced, from the first :meth:`read_again` on."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            try:
                await self._process_changes()
            except ConnectionLoss:  # kazoo holds the next try until it has reconnected
                self._changed.set()
            except SESSION_ERRORS:
                logger.warning("following /config/changes: ZooKeeper session lost until a new one")
            except Exception:
                logger.exception("processing /config/changes failed; retrying")
                await asyncio.sleep(RETRY_AFTER_FAILURE_S)
                self._changed.set()

    def _watch(self, _event=None) -> None:
        """kazoo's thread: hand over to the event loop, nothing else."""
        with contextlib.suppress(RuntimeError):  # a closed loop: the broker has stopped
            self._loop.call_soon_threadsafe(self._changed.set)

    async def _process_changes(self) -> None:
        zk = self._zk
        names = await asyncio.to_thread(zk.config_changes, self._watch)
        entities: list[tuple[str, str]] = []
        for name in names:
            try:
                number = config_change_number(name)
            except ValueError:
                continue
            if number <= self._last_change:
                continue
            entity = await asyncio.to_thread(zk.config_change, name)
            self._last_change = number
            if entity is not None and entity not in entities:
                entities.append(entity)
        for entity_type, entity_name in entities:
            if entity_type == "topics":
                await self.apply_topic_change(entity_name)
            elif entity_type == "brokers" and entity_name in (
                DEFAULT_ENTITY,
                str(self._broker_id),
            ):
                await self._apply_broker_change()
            elif entity_type in (USERS, CLIENTS):
                await self._entity_configs.refresh(entity_type, entity_name)
        if names:
            now_ms = int(time.time() * 1000)
            await asyncio.to_thread(zk.purge_config_changes, names, now_ms)

    async def apply_topic_change(self, topic: str, *, announced: bool = True) -> None:
        """Re-read a topic's overrides and apply them to its logs (``announced``: it
        changed, and is logged; else the topic is new to this broker)."""
        overrides = await asyncio.to_thread(self._zk.entity_config, "topics", topic)
        self._topic_overrides[topic] = overrides
        self._log_manager.set_topic_config(topic, log_config_for(self._current(), topic, overrides))
        self._throttles.follow_topic(topic, overrides, self._broker_id)
        if announced:
            logger.info("topic %s: config overrides now %s", topic, overrides)

    async def _apply_broker_change(self) -> None:
        """Re-read the dynamic broker configs (this broker's and ``<default>``) and apply
        them; topics follow the new defaults where they have no override."""
        cluster, mine = await asyncio.to_thread(self._zk.broker_configs, self._broker_id)
        config = layered(self._current(), cluster, mine)
        if config is None:
            return
        self._apply_broker_config(config)
        for reconfigure in self._reconfigurables:
            try:
                reconfigure(config)
            except ConfigError as error:
                logger.error("dynamic broker config not applied: %s", error)
        self._throttles.set_rates(config)
        hosted = {topic for topic, _ in self._log_manager.logs}
        for topic in sorted(hosted | set(self._topic_overrides)):
            overrides = self._topic_overrides.get(topic, {})
            self._log_manager.set_topic_config(topic, log_config_for(config, topic, overrides))
        logger.info("dynamic broker configs now: cluster-wide %s, broker %s", cluster, mine)
