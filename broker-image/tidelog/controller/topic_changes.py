"""The controller's events for topics: CreateTopics, CreatePartitions and DeleteTopics
asked of it, and topics that appear in or vanish from ZooKeeper. Mixed into
:class:`~tidelog.controller.controller.Controller`, whose state and senders they use;
like every controller decision they run as events in its queue.
"""

from __future__ import annotations

from tidelog.controller.requests import LEADER_DURING_DELETE, PartitionLeadership
from tidelog.controller.state_machines import PartitionState as PartitionPhase
from tidelog.controller.zk_data import TopicAssignment

__all__ = ["TopicChanges"]


class TopicChanges:
    """Uses the controller's ``is_active``, ``assignments``, ``states``, ``machines``,
    ``epoch``, ``zk``, ``enqueue``, ``_zk``, ``_watch_topics``, ``_zk_reassigning``,
    ``_initialize_partitions``, ``_record_states``, ``_leaderships``,
    ``_send_leader_and_isr``, ``_send_update_metadata`` and ``_delete_replicas``."""

    async def _topics_changed(self) -> None:
        if not self.is_active:
            return
        topics = await self._zk(self.zk.topics, self._watch_topics)
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
            assignment = self.assignments.pop(topic)
            for partition in assignment.partitions:
                self.states.pop((topic, partition), None)

    async def _start_partitions(self, assignment: TopicAssignment, partitions: list[int]) -> None:
        """Online-partition transition: reuse a recorded state, or elect the first live
        replica and record it; then tell the replicas and every broker."""
        keys = [(assignment.topic, index) for index in partitions]
        await self._initialize_partitions(key for key in keys if key not in self.states)
        self._record_states(keys)
        await self._send_leader_and_isr(keys)
        await self._send_update_metadata(self._leaderships(keys))

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
        """Stop and delete every replica, then remove the znodes, then tell every broker
        (leader -2 marks a partition being deleted)."""
        for topic in topics:
            await self._zk(self.zk.mark_topic_for_deletion, topic)
        deleted: list[PartitionLeadership] = []
        for topic in topics:
            assignment = self.assignments.pop(topic, None)
            if assignment is not None:
                keys = [(topic, index) for index in sorted(assignment.partitions)]
                known = [
                    k
                    for k in keys
                    if self.machines.partition_state(k) != PartitionPhase.NON_EXISTENT
                ]
                self.machines.move_partitions(known, PartitionPhase.OFFLINE)
                self.machines.move_partitions(known, PartitionPhase.NON_EXISTENT)
                for index, replicas in sorted(assignment.partitions.items()):
                    self.states.pop((topic, index), None)
                    self._zk_reassigning.pop((topic, index), None)
                    deleted.append(
                        PartitionLeadership(
                            topic,
                            assignment.topic_id,
                            index,
                            LEADER_DURING_DELETE,
                            0,
                            tuple(replicas),
                            (),
                            self.epoch,
                        )
                    )
                await self._delete_replicas(
                    [(t, p, b) for t, p in keys for b in assignment.partitions[p]]
                )
            await self._zk(self.zk.delete_topic_znodes, topic)
        await self._send_update_metadata(deleted)

    async def _add_topics(self, assignments, configs, results) -> None:
        for assignment in assignments:
            try:
                await self._zk(self.zk.create_topic, assignment, configs.get(assignment.topic, {}))
                results[assignment.topic] = None
            except Exception as error:
                results[assignment.topic] = error
        await self._topics_changed()
