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
waiting for its session to expire (:meth:`.BrokerChanges._on_broker_refusing`); and the
other brokers watch the controller's endpoint the same way, so a controller that died
is replaced at once too (:meth:`Controller._on_controller_refusing`). A
partition whose ISR emptied, because its last member came back without its log, is
recovered from the replica with the most recent log (:meth:`Controller._recover_leader`).
Every request carries the controller epoch, so brokers ignore a deposed controller.
Controlled shutdown and preferred leader election are in :mod:`.leader_moves`,
reassignment in :mod:`.reassignment`, brokers joining and leaving in
:mod:`.broker_changes`, ISR changes and failed log directories in
:mod:`.broker_notifications`, topics created and deleted in :mod:`.topic_changes`; where
each partition and replica stands is kept by the state machines of :mod:`.state_machines`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import replace

from tidelog.controller.broker_changes import BrokerChanges
from tidelog.controller.broker_notifications import BrokerNotifications
from tidelog.controller.channel import ControllerChannel
from tidelog.controller.election import NO_LEADER, next_leadership, recovery_leader
from tidelog.controller.leader_moves import LeaderMoves, Leadership, Proposal
from tidelog.controller.reassignment import Reassignments
from tidelog.controller.refusal_watch import RefusalWatch
from tidelog.controller.requests import PartitionLeadership
from tidelog.controller.state_machines import PartitionState as PartitionPhase
from tidelog.controller.state_machines import ReplicaState, StateMachines
from tidelog.controller.topic_changes import TopicChanges
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


class Controller(LeaderMoves, Reassignments, BrokerChanges, BrokerNotifications, TopicChanges):
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

    def _read_topic(self, topic: str) -> tuple[TopicAssignment | None, dict]:
        """A topic's assignment and partition states (blocking: runs in a worker thread)."""
        assignment = self.zk.topic_assignment(topic)
        states = {}
        for partition in assignment.partitions if assignment else ():
            state = self.zk.partition_state(topic, partition)
            if state is not None:
                states[(topic, partition)] = state
        return assignment, states

    # -- partition state ------------------------------------------------------------------------

    def _replicas(self, key: TopicPartition) -> list[int]:
        topic, partition = key
        return self.assignments[topic].partitions[partition]

    def _offline_on(self, key: TopicPartition) -> set[int]:
        """The brokers whose replica of ``key`` is on a failed log directory."""
        return {broker for broker, keys in self.offline_replicas.items() if key in keys}

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
