"""Topics the broker creates itself: a topic a client's Metadata request names
(``auto.create.topics.enable``), and ``__consumer_offsets`` on the first
FindCoordinator.

Any broker may create them, as in Kafka: the assignment is written to ZooKeeper (through
the controller's queue when this broker is the controller, else straight into ZooKeeper,
whose watch brings it to the controller), and the controller brings the topic online.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tidelog.controller.controller import Controller
from tidelog.controller.zk_client import KafkaZkClient, TopicExistsError
from tidelog.controller.zk_data import TopicAssignment, new_uuid
from tidelog.coordinator.group_coordinator import OFFSETS_TOPIC
from tidelog.protocol.errors import ErrorCode
from tidelog.server.config import BrokerConfig
from tidelog.server.handlers.create_topics import TopicRequestError, plan_topic
from tidelog.server.metadata_cache import MetadataCache

__all__ = ["InternalTopics"]

logger = logging.getLogger(__name__)


class InternalTopics:
    """Creates topics with the configuration in force (``current``), the live brokers
    and topics of ``metadata``, through ``controller`` or ``zk``. It reads as much of a
    broker as :func:`plan_topic` needs (``metadata`` and ``config``)."""

    def __init__(
        self,
        current: Callable[[], BrokerConfig],
        metadata: MetadataCache,
        zk: KafkaZkClient,
        controller: Controller,
    ):
        self._current = current
        self.metadata = metadata
        self._zk = zk
        self._controller = controller
        self._creating_offsets_topic: asyncio.Task | None = None
        self._offsets_topic_wait_logged: int | None = None  # alive brokers last logged

    @property
    def config(self) -> BrokerConfig:
        return self._current()

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
        if not self._controller.is_active:
            await asyncio.to_thread(self._zk.create_topic, assignment, configs)
            return
        topic = assignment.topic
        failure = (await self._controller.add_topics([assignment], {topic: configs}))[topic]
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
