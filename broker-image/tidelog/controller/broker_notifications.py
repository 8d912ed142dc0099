"""The controller's events for what brokers announce in ZooKeeper: ISR changes their
leaders made (``/isr_change_notification``) and log directories that failed
(``/log_dir_event_notification``, KIP-112), with the replicas a broker then reports
lost. Mixed into :class:`~tidelog.controller.controller.Controller`, whose state and
senders they use; like every controller decision they run as events in its queue.
"""

from __future__ import annotations

import logging

__all__ = ["BrokerNotifications"]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class BrokerNotifications:
    """Uses the controller's ``is_active``, ``brokers``, ``states``, ``zk``,
    ``offline_replicas``, ``enqueue``, ``_zk``, ``_watch_isr_changes``,
    ``_watch_log_dir_events``, ``_replicas``, ``_elect_leader``, ``_record_states``,
    ``_leaderships``, ``_send_leader_and_isr``, ``_send_update_metadata``,
    ``shutting_down_brokers`` and ``_check_reassignments``."""

    # -- ISR changes announced by leaders ------------------------------------------------------

    async def _isr_changed(self) -> None:
        """Leaders change ISRs themselves and announce it under /isr_change_notification,
        and so does a starting broker that left the ISRs of replicas it lost: re-read those
        partitions' states, tell the replicas of those whose leader epoch moved
        (LeaderAndIsr, after electing a leader where none is live), and every broker
        (UpdateMetadata)."""
        if not self.is_active:
            return
        names = await self._zk(self.zk.isr_change_notifications, self._watch_isr_changes)
        changed = set()
        for name in names:
            changed.update(await self._zk(self.zk.isr_change_partitions, name))
        known = [key for key in sorted(changed) if key in self.states]
        epochs = {key: self.states[key].leader_epoch for key in known}
        self.states.update(await self._zk(self.zk.partition_states, known))
        # A leader's ISR change keeps the leader epoch. A starting broker that lost its
        # replicas left their ISRs (and leaderships) with a new one: the replicas learn it
        # by LeaderAndIsr, and a partition left without a live leader gets one.
        moved = [key for key in known if self.states[key].leader_epoch != epochs[key]]
        alive = set(self.brokers) - self.shutting_down_brokers()
        for key in moved:
            if self.states[key].leader not in self.brokers:
                await self._elect_leader(key, alive)
        self._record_states(moved)
        await self._send_leader_and_isr(moved)
        if known:
            await self._send_update_metadata(self._leaderships(known))
        await self._zk(self.zk.delete_isr_change_notifications, names)
        await self._check_reassignments(known)

    # -- log directories that failed (KIP-112) -------------------------------------------------

    async def _log_dir_events(self) -> None:
        """A broker announces under /log_dir_event_notification that one of its log
        directories failed: it gets LeaderAndIsr for every replica it holds, and answers
        KAFKA_STORAGE_ERROR for those it lost (:meth:`_on_replicas_offline`)."""
        if not self.is_active:
            return
        names = await self._zk(self.zk.log_dir_event_notifications, self._watch_log_dir_events)
        failed = set()
        for name in names:
            broker = await self._zk(self.zk.log_dir_failure_broker, name)
            if broker is not None:
                failed.add(broker)
        await self._zk(self.zk.delete_log_dir_event_notifications, names)
        for broker in sorted(failed & set(self.brokers)):
            logger.warning("broker %d reports a failed log directory", broker)
            hosted = [key for key in self.states if broker in self._replicas(key)]
            await self._send_leader_and_isr(hosted, to={broker})

    def _offline_replicas_reported(self, broker: int, partitions: list[TopicPartition]) -> None:
        """The channel's report (on the event loop): handled as an event in the queue."""
        self.enqueue(lambda: self._on_replicas_offline(broker, partitions))

    async def _on_replicas_offline(self, broker: int, partitions: list[TopicPartition]) -> None:
        """Kafka's onReplicasBecomeOffline: the broker's replicas of ``partitions`` are
        on a failed log directory. Where it led, another in-sync replica leads; it leaves
        each ISR; every broker learns them as offline replicas (Metadata shows them)."""
        if not self.is_active or broker not in self.brokers:
            return
        known = self.offline_replicas.setdefault(broker, set())
        new = [key for key in sorted(set(partitions) - known) if key in self.states]
        if not new:
            return
        known.update(new)
        logger.warning("broker %d lost its replicas of %s", broker, new[:20])
        alive = set(self.brokers) - self.shutting_down_brokers()
        changed = [key for key in new if await self._elect_leader(key, alive)]
        self._record_states(new)
        await self._send_leader_and_isr(changed, to=alive - {broker})
        await self._send_update_metadata(self._leaderships(new))
