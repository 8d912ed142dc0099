"""The controller: one broker, elected through the ephemeral ``/controller`` node.

Its work runs as one event queue (seed 003: a single thread and an event queue):
ZooKeeper watches only enqueue events, and one coroutine handles them in order, so no
two decisions interleave. Every broker takes part in the election: it watches
``/controller`` and runs for the role whenever the node disappears (seed 000). A new
controller bumps ``/controller_epoch`` with a conditional write, loads every topic's
assignment and partition state from ZooKeeper, elects leaders where they are missing,
and tells every live broker (LeaderAndIsr to the replicas, a full UpdateMetadata to
all). Then it follows ``/brokers/ids``: a broker that leaves loses its leaderships and
its ISR memberships, a broker that (re)joins gets the metadata and its replicas back. A
broker whose endpoint refuses the controller's connection leaves at once, without
waiting for its session to expire (:meth:`Controller._on_broker_refusing`); and the
other brokers watch the controller's endpoint the same way, so a controller that died
is replaced at once too (:meth:`Controller._on_controller_refusing`). A
partition whose ISR emptied, because its last member came back without its log, is
recovered from the replica with the most recent log (:meth:`Controller._recover_leader`).
Every request carries the controller epoch, so brokers ignore a deposed controller.
Controlled shutdown and preferred leader election are in :mod:`.leader_moves`,
reassignment in :mod:`.reassignment`; where each partition and replica stands is kept
by the state machines of :mod:`.state_machines`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import replace

from tidelog.controller.channel import ControllerChannel
from tidelog.controller.election import NO_LEADER, next_leadership, recovery_leader
from tidelog.controller.leader_moves import LeaderMoves, Leadership, Proposal
from tidelog.controller.reassignment import Reassignments
from tidelog.controller.refusal_watch import RefusalWatch
from tidelog.controller.requests import LEADER_DURING_DELETE, PartitionLeadership
from tidelog.controller.state_machines import PartitionState as PartitionPhase
from tidelog.controller.state_machines import ReplicaState, StateMachines
from tidelog.controller.zk_brokers import REGISTRATION_WAIT_FACTOR
from tidelog.controller.zk_client import KafkaZkClient, StalePartitionStateError
from tidelog.controller.zk_data import BrokerRegistration, PartitionState, TopicAssignment
from tidelog.controller.zk_session import SESSION_ERRORS, until_answered, worth_handling

__all__ = ["Controller"]

logger = logging.getLogger(__name__)

Event = Callable[[], Awaitable[None]]
TopicPartition = tuple[str, int]
UNCLEAN_LEADER_ELECTION = "unclean.leader.election.enable"
# Conditional writes of one partition's state before the controller gives up on it.
STATE_WRITE_ATTEMPTS = 5


class Controller(LeaderMoves, Reassignments):
    def __init__(
        self,
        broker_id: int,
        zk: KafkaZkClient,
        channel: ControllerChannel,
        *,
        unclean_leader_election: Callable[[], bool] = lambda: False,
    ):
        self.broker_id = broker_id
        self.zk = zk
        self.channel = channel
        self._unclean_default = unclean_leader_election
        self.epoch = 0
        self.is_active = False
        self._queue: asyncio.Queue[tuple[Event, asyncio.Future | None]] = asyncio.Queue()
        self._loop = asyncio.get_running_loop()
        self._runner: asyncio.Task | None = None
        self.brokers: dict[int, BrokerRegistration] = {}  # the live ones
        self.assignments: dict[str, TopicAssignment] = {}
        self.states: dict[TopicPartition, PartitionState] = {}
        self._shutting_down: dict[int, int] = {}  # see LeaderMoves
        self._zk_reassigning: dict[TopicPartition, list[int]] = {}  # see Reassignments
        # Replicas that live brokers report on a failed log directory (KIP-112): they
        # lead nothing and leave the ISR until their broker registers anew.
        self.offline_replicas: dict[int, set[TopicPartition]] = {}
        # Registrations of brokers whose endpoint refused a connection: not live, though
        # still in ZooKeeper (see _on_broker_refusing).
        self._refusing: dict[int, BrokerRegistration] = {}
        self._controller_watch: RefusalWatch | None = None  # while another one is active
        self.machines = StateMachines()
        channel.on_offline_replicas(self._offline_replicas_reported)
        channel.on_broker_refusing(self._broker_refusing_reported)
        # One callable per watch: kazoo keeps watches in sets, so re-arming one that is
        # still armed does not make it fire twice.
        self._watch_controller = self._watch(self._elect)
        self._watch_brokers = self._watch(self._brokers_changed)
        self._watch_topics = self._watch(self._topics_changed)
        self._watch_isr_changes = self._watch(self._isr_changed)
        self._watch_log_dir_events = self._watch(self._log_dir_events)
        self._watch_zk_reassignments = self._watch(self._zk_reassignments_changed)

    # -- the event queue --------------------------------------------------------------------

    def start(self) -> None:
        self._runner = asyncio.create_task(self._run(), name="controller-events")
        self.elect()

    async def stop(self) -> None:
        self._stop_watching_controller()
        if self._runner is not None:
            self._runner.cancel()
            await asyncio.gather(self._runner, return_exceptions=True)
        await self.channel.close()

    def enqueue(self, event: Event) -> asyncio.Future:
        done = self._loop.create_future()
        self._queue.put_nowait((event, done))
        return done

    def elect(self) -> asyncio.Future:
        """Run for controller (start-up, and again on a new ZooKeeper session, which
        also re-arms the watches the old session lost)."""
        return self.enqueue(self._elect)

    def resign(self) -> asyncio.Future:
        """The ZooKeeper session expired: ``/controller`` went with it."""
        return self.enqueue(self._resign)

    def _watch(self, event: Event) -> Callable:
        """A kazoo watch callback (kazoo's thread): it only enqueues. A dropped connection
        enqueues too, since kazoo forgets its watches then: the event arms its watch anew
        once kazoo has reconnected. A session that ended is left to the broker, which
        calls :meth:`resign` and :meth:`elect`."""

        def watch(watched_event=None) -> None:
            if not worth_handling(watched_event):
                return
            with contextlib.suppress(RuntimeError):  # a closed loop: the broker stopped
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
                name = getattr(event, "__name__", event)
                if isinstance(error, SESSION_ERRORS):  # the new session runs the election
                    logger.warning("controller event %s: ZooKeeper session lost", name)
                else:
                    logger.exception("controller event %s failed", name)
                if done is not None and not done.done():
                    done.set_exception(error)

    async def _zk(self, function, *args):
        """``function(*args)`` in a worker thread, asked again when the connection drops
        meanwhile (:func:`until_answered`): an event that gave up then would leave the
        cluster without its decision, and the watch it arms unarmed."""
        return await asyncio.to_thread(until_answered, function, *args)

    # -- election and failover ----------------------------------------------------------------

    async def _elect(self) -> None:
        current = await self._zk(self.zk.controller_id, self._watch_controller)
        while current is None:
            epoch = await self._zk(self.zk.try_become_controller, self.broker_id)
            current = await self._zk(self.zk.controller_id, self._watch_controller)
            if epoch is not None:
                self._stop_watching_controller()
                await self._become_controller(epoch)
                return
        if self.is_active and current != self.broker_id:
            await self._resign()
        logger.info("broker %s is the controller", current)
        if current != self.broker_id:
            await self._watch_controller_endpoint(current)

    async def _watch_controller_endpoint(self, controller: int) -> None:
        """Another broker is the controller: a :class:`RefusalWatch` on its endpoint."""
        watched = self._controller_watch
        if watched is not None and watched.registration.broker_id == controller:
            return
        self._stop_watching_controller()
        registration = (await self._zk(self.zk.live_brokers)).get(controller)
        if registration is not None:
            self._controller_watch = self.channel.watch(
                registration, self._controller_refusing_reported
            )

    def _stop_watching_controller(self) -> None:
        if self._controller_watch is not None:
            self._controller_watch.close()
            self._controller_watch = None

    def _controller_refusing_reported(self, registration: BrokerRegistration) -> None:
        """The watch's report (on the event loop): handled as an event in the queue."""
        self.enqueue(lambda: self._on_controller_refusing(registration))

    async def _on_controller_refusing(self, registration: BrokerRegistration) -> None:
        """The controller's endpoint refused a connection: its process is gone, but
        ``/controller`` stays until its session expires, and until then no broker can
        take over. Deleting the node (as an operator forcing an election would) lets the
        brokers run for controller now; the new controller finds the dead broker refusing
        too and moves its partitions (:meth:`_on_broker_refusing`)."""
        watched = self._controller_watch
        if watched is not None and watched.registration == registration:
            self._controller_watch = None  # it ended with its report
        if await self._zk(self.zk.delete_controller, registration.broker_id):
            logger.warning(
                "controller %d refuses connections: /controller deleted so that a live "
                "broker takes over without waiting for its ZooKeeper session to expire",
                registration.broker_id,
            )

    async def _resign(self) -> None:
        if self.is_active:
            logger.info("broker %d is no longer the controller", self.broker_id)
        self.is_active = False
        self.brokers, self.assignments, self.states = {}, {}, {}
        self._zk_reassigning = {}
        self.offline_replicas = {}
        self._refusing = {}
        self.machines.clear()
        await self.channel.close()

    async def _become_controller(self, epoch: int) -> None:
        self.epoch, self.is_active = epoch, True
        logger.info("broker %d is the controller (epoch %d)", self.broker_id, epoch)
        self.brokers = await self._zk(self.zk.live_brokers, self._watch_brokers)
        self.channel.set_brokers(self.brokers)
        self.assignments, self.states = {}, {}
        for topic in await self._zk(self.zk.topics, self._watch_topics):
            assignment, states = await self._zk(self._read_topic, topic)
            if assignment is not None:
                self.assignments[topic] = assignment
                self.states.update(states)
        await self._initialize_partitions(  # their creator died before writing them
            (topic, partition)
            for topic, assignment in self.assignments.items()
            for partition in assignment.partitions
            if (topic, partition) not in self.states
        )
        live = set(self.brokers)
        for key, state in list(self.states.items()):
            if state.leader not in live or not live.issuperset(state.isr):
                await self._elect_leader(key, live)
        self._record_states(self.states)
        await self._send_update_metadata(self._leaderships(self.states))
        await self._send_leader_and_isr(list(self.states))
        pending = await self._zk(self.zk.topics_marked_for_deletion)
        if pending:  # deletions a previous controller did not finish
            await self._delete_topics(pending)
        for key in self.ongoing_reassignments():  # moves a previous controller began
            await self._resume_reassignment(key)
        await self._zk_reassignments_changed()
        await self._isr_changed()
        await self._log_dir_events()

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

    def _offline_on(self, key: TopicPartition) -> set[int]:
        """The brokers whose replica of ``key`` is on a failed log directory."""
        return {broker for broker, keys in self.offline_replicas.items() if key in keys}

    def _read_topic(self, topic: str) -> tuple[TopicAssignment | None, dict]:
        """A topic's assignment and partition states (blocking: runs in a worker thread)."""
        assignment = self.zk.topic_assignment(topic)
        states = {}
        for partition in assignment.partitions if assignment else ():
            state = self.zk.partition_state(topic, partition)
            if state is not None:
                states[(topic, partition)] = state
        return assignment, states

    # -- brokers joining and leaving ----------------------------------------------------------

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

    # -- partition state ------------------------------------------------------------------------

    def _replicas(self, key: TopicPartition) -> list[int]:
        topic, partition = key
        return self.assignments[topic].partitions[partition]

    def _record_states(self, keys: Iterable[TopicPartition]) -> None:
        """The state machines follow the partitions' leaders and the brokers' liveness:
        a partition with a live leader is online, else offline; a replica on a live broker
        is online (a replica a reassignment adds stays new until the move completes),
        else offline."""
        machines = self.machines
        for key in keys:
            if key not in self.states:
                continue
            if machines.partition_state(key) == PartitionPhase.NON_EXISTENT:
                machines.move_partitions([key], PartitionPhase.NEW)
            online = self.states[key].leader in self.brokers
            machines.move_partitions(
                [key], PartitionPhase.ONLINE if online else PartitionPhase.OFFLINE
            )
            adding = self.assignments[key[0]].adding.get(key[1], ())
            offline = self._offline_on(key)
            for broker in self._replicas(key):
                replica, live = (*key, broker), broker in self.brokers and broker not in offline
                state = machines.replica_state(replica)
                if state == ReplicaState.NON_EXISTENT:
                    machines.move_replicas([replica], ReplicaState.NEW)
                    state = ReplicaState.NEW
                if state == ReplicaState.NEW and broker in adding and live:
                    continue
                machines.move_replicas(
                    [replica], ReplicaState.ONLINE if live else ReplicaState.OFFLINE
                )

    async def _initialize_partitions(self, keys: Iterable[TopicPartition]) -> None:
        """New partitions: the first live replica of each leads, its live replicas are
        the ISR. A state an earlier controller already wrote is taken as it is."""
        by_topic: dict[str, dict[int, PartitionState]] = {}
        for topic, partition in keys:
            replicas = self._replicas((topic, partition))
            live = [b for b in replicas if b in self.brokers]
            leader = live[0] if live else NO_LEADER
            proposed = PartitionState(leader, 0, live or [replicas[0]], self.epoch)
            by_topic.setdefault(topic, {})[partition] = proposed
        for topic, proposals in by_topic.items():
            created = await self._zk(self.zk.create_partition_states, topic, proposals)
            for partition, state in created.items():
                self.states[(topic, partition)] = state

    async def _elect_leader(self, key: TopicPartition, live: Collection[int]) -> bool:
        """Move the partition to the leader and ISR the live brokers allow (an out-of-sync
        leader only where unclean.leader.election.enable says so; an emptied ISR through
        :meth:`_recover_leader`); True when it changed."""
        replicas = self._replicas(key)
        state = self.states[key]
        live = set(live) - self._offline_on(key)
        if not state.isr:
            return await self._recover_leader(key, live)
        leader, _ = next_leadership(replicas, state.leader, state.isr, live, unclean_allowed=False)
        unclean = (
            leader == NO_LEADER
            and any(b in live for b in replicas)
            and await self._unclean_allowed(key[0])
        )
        if unclean:
            logger.warning("%s-%d: no live in-sync replica; unclean election", *key)

        def propose(current: PartitionState) -> Leadership | None:
            if not current.isr:
                return None  # emptied meanwhile: recovered below
            return next_leadership(
                replicas, current.leader, current.isr, live, unclean_allowed=unclean
            )

        moved = await self._move_leader(key, propose)
        if not self.states[key].isr:
            return await self._recover_leader(key, live) or moved
        return moved

    async def _recover_leader(self, key: TopicPartition, live: set[int]) -> bool:
        """The partition's ISR emptied: its last member came back without its log (see
        :mod:`.election`). Once every replica not on a failed directory is live, each is
        asked where its log stands and the most recent leads, with an ISR of itself; until
        then the partition stays offline (a replica that is down may hold more). True
        when it changed."""
        replicas = [b for b in self._replicas(key) if b not in self._offline_on(key)]
        if not live.issuperset(replicas):
            logger.warning(
                "%s-%d: its ISR is empty; recovery waits for replicas %s",
                *key,
                sorted(set(replicas) - live),
            )
            return False
        log_ends = await self.channel.replica_log_ends(key, replicas, self.states[key].leader_epoch)
        leader = recovery_leader(replicas, log_ends)
        if leader is None:
            return False
        logger.warning(
            "%s-%d: its ISR is empty; replica %d leads, the most recent of the replicas' "
            "(latest leader epoch, log end offset) %s",
            *key,
            leader,
            log_ends,
        )
        return await self._move_leader(
            key, lambda current: None if current.isr else (leader, [leader])
        )

    async def _move_leader(
        self, key: TopicPartition, propose: Proposal, *, always: bool = False
    ) -> bool:
        """Write the proposed leader and ISR with leader epoch +1, conditionally on the
        state's version; on a conflict (a leader changed the ISR) read it and propose
        again. True when it changed, also when the state read on a conflict has a new
        leader epoch (a starting broker left the ISR of a replica it lost: the replicas
        must hear of it). ``always`` bumps the epoch even when the proposal is the
        current leader and ISR (the replicas learn a new replica set)."""
        topic, partition = key
        state = self.states[key]
        known_epoch = state.leader_epoch
        for _ in range(STATE_WRITE_ATTEMPTS):
            proposal = propose(state)
            if proposal is None or (not always and proposal == (state.leader, state.isr)):
                return state.leader_epoch != known_epoch
            leader, isr = proposal
            new = PartitionState(leader, state.leader_epoch + 1, isr, self.epoch, state.zk_version)
            try:
                version = await self._zk(self.zk.update_partition_state, topic, partition, new)
            except StalePartitionStateError:
                state = await self._zk(self.zk.partition_state, topic, partition)
                if state is None:
                    return False
                self.states[key] = state
                continue
            self.states[key] = replace(new, zk_version=version)
            log = logger.warning if leader == NO_LEADER else logger.info
            log("%s-%d: leader %d, ISR %s, leader epoch %d", *key, leader, isr, new.leader_epoch)
            return True
        logger.error("%s-%d: its state kept changing; leader not moved", topic, partition)
        return False

    async def _unclean_allowed(self, topic: str) -> bool:
        """The topic's override of unclean.leader.election.enable, else the broker's."""
        overrides = await self._zk(self.zk.entity_config, "topics", topic)
        value = overrides.get(UNCLEAN_LEADER_ELECTION)
        if value is None:
            return self._unclean_default()
        return value.strip().lower() == "true"

    def _leaderships(self, keys: Iterable[TopicPartition]) -> list[PartitionLeadership]:
        found = []
        for topic, partition in keys:
            state = self.states[(topic, partition)]
            replicas = self.assignments[topic].partitions[partition]
            found.append(
                PartitionLeadership(
                    topic,
                    self.assignments[topic].topic_id,
                    partition,
                    state.leader,
                    state.leader_epoch,
                    tuple(replicas),
                    tuple(state.isr),
                    state.controller_epoch,
                    state.zk_version,
                    tuple(
                        b
                        for b in replicas
                        if b not in self.brokers
                        or (topic, partition) in self.offline_replicas.get(b, ())
                    ),
                )
            )
        return found

    async def _send_leader_and_isr(
        self, keys: Iterable[TopicPartition], to: Collection[int] | None = None
    ) -> None:
        """LeaderAndIsr to the live replicas of each partition (those in ``to``)."""
        by_broker: dict[int, list[PartitionLeadership]] = {}
        for leadership in self._leaderships(keys):
            for replica in leadership.replicas:
                if replica in self.brokers and (to is None or replica in to):
                    by_broker.setdefault(replica, []).append(leadership)
        for broker, states in sorted(by_broker.items()):
            await self.channel.leader_and_isr(broker, self.epoch, states)

    async def _send_update_metadata(
        self, states: list[PartitionLeadership], to: Collection[int] | None = None
    ) -> None:
        """UpdateMetadata (every live broker, and these partitions) to ``to``, by default
        every live broker."""
        for broker in sorted(self.brokers if to is None else to):
            await self.channel.update_metadata(broker, self.epoch, states)

    # -- topics -----------------------------------------------------------------------------------

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
