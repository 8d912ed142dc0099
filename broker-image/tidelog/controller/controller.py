"""The controller: one broker, elected through the ephemeral ``/controller`` node.

Its work runs as one event queue (seed 003: a single thread and an event queue):
ZooKeeper watches only enqueue events, and one coroutine handles them in order, so no
two decisions interleave. It decides partition leadership (the first live replica of
the assignment that is in the ISR), records it in ZooKeeper under the partition state
node, and tells the brokers through a channel (LeaderAndIsr, UpdateMetadata,
StopReplica). Every message carries the controller epoch, bumped with a conditional
write at election, so a broker ignores a deposed controller.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tidelog.controller.zk_client import KafkaZkClient
from tidelog.controller.zk_data import PartitionState, TopicAssignment

__all__ = ["Controller", "ControllerChannel", "PartitionLeadership"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class PartitionLeadership:
    """What LeaderAndIsr and UpdateMetadata carry for one partition."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]


class ControllerChannel:
    """How the controller reaches brokers. The local broker is called directly; other
    brokers are reached over the Kafka protocol (issue 5 brings that path)."""

    def __init__(self, local_id: int, local: object):
        self.local_id = local_id
        self.local = local

    async def leader_and_isr(self, broker: int, epoch: int, states: list[PartitionLeadership]):
        if broker == self.local_id:
            await self.local.handle_leader_and_isr(epoch, states)

    async def update_metadata(
        self,
        broker: int,
        epoch: int,
        brokers: dict,
        states: list[PartitionLeadership],
        deleted: list[str],
    ):
        if broker == self.local_id:
            await self.local.handle_update_metadata(epoch, brokers, states, deleted)

    async def stop_replica(
        self, broker: int, epoch: int, partitions: list[tuple[str, int]], delete: bool
    ):
        if broker == self.local_id:
            await self.local.handle_stop_replica(epoch, partitions, delete)


Event = Callable[[], Awaitable[None]]


class Controller:
    def __init__(self, broker_id: int, zk: KafkaZkClient, channel: ControllerChannel):
        self.broker_id = broker_id
        self.zk = zk
        self.channel = channel
        self.epoch = 0
        self.is_active = False
        self._queue: asyncio.Queue[tuple[Event, asyncio.Future | None]] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._runner: asyncio.Task | None = None
        self.brokers: dict = {}  # live broker id -> BrokerRegistration
        self.assignments: dict[str, TopicAssignment] = {}
        self.leadership: dict[tuple[str, int], PartitionLeadership] = {}

    # -- the event queue --------------------------------------------------------------------

    def start(self) -> None:
        self._runner = asyncio.create_task(self._run(), name="controller-events")
        self.enqueue(self._elect)

    async def stop(self) -> None:
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)

    def enqueue(self, event: Event) -> asyncio.Future:
        done = self._loop.create_future()
        self._queue.put_nowait((event, done))
        return done

    def _enqueue_from_zookeeper(self, event: Event) -> Callable:
        """A kazoo watch callback (kazoo's thread): it only enqueues."""

        def watch(_watched_event=None) -> None:
            self._loop.call_soon_threadsafe(self.enqueue, event)

        return watch

    @property
    def live_brokers(self) -> set[int]:
        return set(self.brokers)

    async def _run(self) -> None:
        while True:
            event, done = await self._queue.get()
            try:
                await event()
                if done is not None and not done.done():
                    done.set_result(None)
            except Exception as error:
                logger.exception("controller event %s failed", getattr(event, "__name__", event))
                if done is not None and not done.done():
                    done.set_exception(error)

    async def _zk(self, function, *args):
        return await asyncio.to_thread(function, *args)

    # -- events -------------------------------------------------------------------------------

    async def _elect(self) -> None:
        epoch = await self._zk(self.zk.try_become_controller, self.broker_id)
        if epoch is None:
            current = await self._zk(
                self.zk.controller_id, self._enqueue_from_zookeeper(self._elect)
            )
            logger.info("broker %s is the controller", current)
            self.is_active = False
            return
        self.epoch, self.is_active = epoch, True
        logger.info("broker %d is the controller (epoch %d)", self.broker_id, epoch)
        await self._brokers_changed()
        await self._topics_changed()

    async def _brokers_changed(self) -> None:
        if not self.is_active:
            return
        self.brokers = await self._zk(
            self.zk.live_brokers, self._enqueue_from_zookeeper(self._brokers_changed)
        )
        await self._send_metadata(list(self.leadership.values()), [])

    async def _topics_changed(self) -> None:
        if not self.is_active:
            return
        topics = await self._zk(self.zk.topics, self._enqueue_from_zookeeper(self._topics_changed))
        for topic in topics:
            assignment = await self._zk(self.zk.topic_assignment, topic)
            if assignment is None:
                continue
            known = self.assignments.get(topic)
            new_partitions = sorted(
                set(assignment.partitions) - set(known.partitions if known else ())
            )
            self.assignments[topic] = assignment
            if new_partitions:
                await self._start_partitions(assignment, new_partitions)
        for topic in set(self.assignments) - set(topics):
            self.assignments.pop(topic)

    async def _start_partitions(self, assignment: TopicAssignment, partitions: list[int]) -> None:
        """Online-partition transition: reuse a recorded state, or elect the first live
        replica and record it."""
        states = []
        for index in partitions:
            replicas = assignment.partitions[index]
            state = await self._zk(self.zk.partition_state, assignment.topic, index)
            if state is None:
                live = [b for b in replicas if b in self.live_brokers]
                leader = live[0] if live else -1
                state = PartitionState(leader, 0, live or [replicas[0]], self.epoch)
                await self._zk(self.zk.create_partition_state, assignment.topic, index, state)
            leadership = PartitionLeadership(
                assignment.topic,
                assignment.topic_id,
                index,
                state.leader,
                state.leader_epoch,
                tuple(replicas),
                tuple(state.isr),
            )
            self.leadership[(assignment.topic, index)] = leadership
            states.append(leadership)
        for broker in sorted(self.live_brokers):
            mine = [s for s in states if broker in s.replicas]
            if mine:
                await self.channel.leader_and_isr(broker, self.epoch, mine)
        await self._send_metadata(states, [])

    async def _send_metadata(self, states: list[PartitionLeadership], deleted: list[str]) -> None:
        for broker in sorted(self.live_brokers):
            await self.channel.update_metadata(broker, self.epoch, self.brokers, states, deleted)

    async def delete_topics(self, topics: list[str]) -> None:
        """DeleteTopics on the controller, as an event in the queue."""
        await self.enqueue(lambda: self._delete_topics(topics))

    async def add_topics(
        self, assignments: list[TopicAssignment], configs: dict[str, dict[str, str]]
    ) -> dict[str, Exception | None]:
        """CreateTopics on the controller, as an event in the queue: write each topic,
        then bring its partitions online. Returns each topic's failure (or None)."""
        results: dict[str, Exception | None] = {}
        await self.enqueue(lambda: self._add_topics(assignments, configs, results))
        return results

    async def add_partitions(self, topic: str, new_partitions: dict[int, list[int]]) -> None:
        """CreatePartitions on the controller, as an event in the queue: extend the
        topic's assignment in ZooKeeper, then bring the new partitions online. Raises
        the ZooKeeper client's error when the topic changed meanwhile."""
        await self.enqueue(lambda: self._add_partitions(topic, new_partitions))

    async def _add_partitions(self, topic: str, new_partitions: dict[int, list[int]]) -> None:
        assignment = await self._zk(self.zk.add_topic_partitions, topic, new_partitions)
        self.assignments[topic] = assignment
        await self._start_partitions(assignment, sorted(new_partitions))

    async def _delete_topics(self, topics: list[str]) -> None:
        """Stop and delete every replica, then remove the znodes."""
        for topic in topics:
            await self._zk(self.zk.mark_topic_for_deletion, topic)
        for topic in topics:
            assignment = self.assignments.pop(topic, None)
            if assignment is None:
                continue
            for broker in sorted(self.live_brokers):
                partitions = [(topic, p) for p, r in assignment.partitions.items() if broker in r]
                if partitions:
                    await self.channel.stop_replica(broker, self.epoch, partitions, True)
            for index in assignment.partitions:
                self.leadership.pop((topic, index), None)
            await self._zk(self.zk.delete_topic_znodes, topic)
        await self._send_metadata([], topics)

    async def _add_topics(self, assignments, configs, results) -> None:
        for assignment in assignments:
            try:
                await self._zk(self.zk.create_topic, assignment, configs.get(assignment.topic, {}))
                results[assignment.topic] = None
            except Exception as error:
                results[assignment.topic] = error
        await self._topics_changed()
