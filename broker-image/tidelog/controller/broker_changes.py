"""The controller's events for brokers joining and leaving the cluster (seed 003): a
broker that leaves loses its leaderships and its ISR memberships, a broker that (re)joins
gets the metadata and its replicas back, and a broker whose endpoint refuses the
controller's connection leaves at once, without waiting for its session to expire
(:meth:`BrokerChanges._on_broker_refusing`). Mixed into
:class:`~tidelog.controller.controller.Controller`, whose state and senders they use;
like every controller decision they run as events in its queue.
"""

from __future__ import annotations

import logging

from tidelog.controller.zk_brokers import REGISTRATION_WAIT_FACTOR
from tidelog.controller.zk_data import BrokerRegistration

__all__ = ["BrokerChanges"]

logger = logging.getLogger(__name__)


class BrokerChanges:
    """Uses the controller's ``is_active``, ``brokers``, ``states``, ``channel``, ``zk``,
    ``offline_replicas``, ``enqueue``, ``_loop``, ``_zk``, ``_watch_brokers``,
    ``_replicas``, ``_elect_leader``, ``_record_states``, ``_leaderships``,
    ``_send_leader_and_isr``, ``_send_update_metadata``, ``shutting_down_brokers`` and
    ``_retry_deletions``; ``_refusing`` holds the registrations of brokers whose endpoint
    refused a connection: not live, though still in ZooKeeper."""

    _refusing: dict[int, BrokerRegistration]

    async def _brokers_changed(self) -> None:
        """The registrations changed; those of refusing brokers (:meth:`_on_broker_refusing`)
        count as gone until they go or change."""
        if not self.is_active:
            return
        registered = await self._zk(self.zk.live_brokers, self._watch_brokers)
        self._refusing = {b: r for b, r in self._refusing.items() if registered.get(b) == r}
        live = {b: r for b, r in registered.items() if self._refusing.get(b) != r}
        # A broker registered with a new epoch restarted meanwhile: gone, then back.
        gone = {b for b, known in self.brokers.items() if b not in live or live[b] != known}
        started = {b for b in live if b not in self.brokers or b in gone}
        self.brokers = live
        self.channel.set_brokers(live)
        for broker in gone | started:  # a broker registered anew reports its dirs again
            self.offline_replicas.pop(broker, None)
        if gone:
            await self._on_brokers_gone(gone)
        if started:
            await self._on_brokers_started(started)

    async def _on_brokers_gone(self, gone: set[int]) -> None:
        """Each partition the brokers led gets a new leader; they leave every ISR."""
        logger.info("brokers %s left the cluster", sorted(gone))
        alive = set(self.brokers) - gone - self.shutting_down_brokers()
        affected = [key for key in self.states if gone.intersection(self._replicas(key))]
        changed = [key for key in affected if await self._elect_leader(key, alive)]
        self._record_states(affected)
        await self._send_leader_and_isr(changed, to=alive)
        await self._send_update_metadata(self._leaderships(affected), to=alive)

    async def _on_brokers_started(self, started: set[int]) -> None:
        """A (re)joining broker gets the whole metadata and its replicas; a partition
        without a leader may get one among them."""
        logger.info("brokers %s joined the cluster", sorted(started))
        live = set(self.brokers)
        hosted = [key for key in self.states if started.intersection(self._replicas(key))]
        changed = [
            key
            for key in hosted
            if self.states[key].leader not in live and await self._elect_leader(key, live)
        ]
        await self._send_update_metadata(self._leaderships(self.states), to=started)
        await self._send_update_metadata(self._leaderships(hosted), to=live - started)
        self._record_states(hosted)
        await self._send_leader_and_isr(changed)
        await self._send_leader_and_isr([k for k in hosted if k not in changed], to=started)
        await self._retry_deletions(started)

    def _broker_refusing_reported(self, registration: BrokerRegistration) -> None:
        """The channel's report (on the event loop): handled as an event in the queue."""
        self.enqueue(lambda: self._on_broker_refusing(registration))

    async def _on_broker_refusing(self, registration: BrokerRegistration) -> None:
        """The broker's endpoint refused a connection: no process listens there (kill -9,
        a crash, an out-of-memory kill), but its registration stays in ZooKeeper until its
        session expires, ``zookeeper.session.timeout.ms`` later. Kafka's controller waits
        for that; this one takes the broker out now, as if its session had ended: its
        partitions get new leaders and it leaves every ISR. Its registration is set aside
        until it goes or changes (a restarted broker registers anew). Should it outlive the
        bound a restarted broker waits for its predecessor's registration, its session
        lives, and so does its process: :meth:`_recheck_refusing` takes it back unless it
        still refuses connections."""
        broker = registration.broker_id
        if not self.is_active or self.brokers.get(broker) != registration:
            return
        # A broker that shut down in a controlled way closes its listeners as it exits.
        log = logger.info if broker in self.shutting_down_brokers() else logger.warning
        log(
            "broker %d refuses connections: it leaves the cluster without waiting for its "
            "ZooKeeper session to expire",
            broker,
        )
        self._refusing[broker] = registration
        self.brokers = {b: r for b, r in self.brokers.items() if b != broker}
        self.channel.set_brokers(self.brokers)
        self.offline_replicas.pop(broker, None)
        await self._on_brokers_gone({broker})
        self._recheck_refusing_later(registration)

    def _recheck_refusing_later(self, registration: BrokerRegistration) -> None:
        delay = REGISTRATION_WAIT_FACTOR * self.zk.session_timeout_s
        self._loop.call_later(delay, self.enqueue, lambda: self._recheck_refusing(registration))

    async def _recheck_refusing(self, registration: BrokerRegistration) -> None:
        """A refusing broker's registration outlived the bound: its session lives. It
        rejoins unless its endpoint still refuses connections; then it is checked again
        after another bound (a broker nobody can reach should lead nothing)."""
        broker = registration.broker_id
        if not self.is_active or self._refusing.get(broker) != registration:
            return
        if await self.channel.refuses_connections(registration):
            logger.warning(
                "broker %d still refuses connections, though its ZooKeeper session lives",
                broker,
            )
            self._recheck_refusing_later(registration)
            return
        logger.warning("broker %d accepts connections again: it rejoins the cluster", broker)
        del self._refusing[broker]
        await self._brokers_changed()
