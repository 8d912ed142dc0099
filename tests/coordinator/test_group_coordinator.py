"""The group coordinator (seed 003, 三.7-10 and 四.3) over real storage: broker 1 alone,
with a real ``LogManager`` and ``ReplicaManager``, leads ``__consumer_offsets`` with ISR
[1], so every group write is appended and acknowledged as in the broker.

Session and rebalance timers run on the event loop; the timeouts here are short, and
the tests wait for what must happen, never assert how fast it happened. Wall time, which
offset retention counts in, is the coordinator's ``clock_ms``: a :class:`Clock` a test can
move forward. A test that must tell "before a timer" from "after it" schedules the
coordinator's timers on :class:`HandTimers`, which fire only when the test moves them on.
"""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from tidelog.coordinator.committed_offsets import CommitRequest, OffsetCommit
from tidelog.coordinator.group import GroupState, JoinResult, SyncResult
from tidelog.coordinator.group_coordinator import (
    OFFSETS_TOPIC,
    CoordinatorConfig,
    GroupCoordinator,
    java_string_hash,
    partition_for,
)
from tidelog.coordinator.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetValue,
    encode_group_value,
    encode_key,
    encode_offset_value,
)
from tidelog.protocol.errors import ErrorCode
from tidelog.records.batch import iter_batch_headers
from tidelog.records.builder import build_batch
from tidelog.replication.replica_manager import ReplicaManager
from tidelog.storage.cleaner import CleanerConfig
from tidelog.storage.log_manager import LogManager
from waiting import wait_until_async

E = ErrorCode
S = GroupState

NUM_PARTITIONS = 3
TOPIC_ID = uuid.uuid4()
SESSION_MS = 10_000  # long enough never to end by itself during a test
REBALANCE_MS = 10_000
SHORT_MS = 150  # a timeout a test waits out
DAY_MS = 24 * 3600 * 1000
RETENTION_MS = 7 * DAY_MS
WAIT_S = 5  # the longest any test waits for something that must happen


def subscription(*topics: str, user_data: bytes = b"") -> bytes:
    """ConsumerProtocolSubscription v0: int16 version, [string topics], bytes user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic.encode())) + topic.encode()
    return out + struct.pack(">i", len(user_data)) + user_data


RANGE = [("range", subscription("orders"))]


class Clock:
    """The coordinator's wall clock: real time, plus however far a test moved it."""

    def __init__(self) -> None:
        self.skew_ms = 0

    def __call__(self) -> int:
        return int(time.time() * 1000) + self.skew_ms

    def advance(self, ms: int) -> None:
        self.skew_ms += ms


@dataclass
class HandTimer:
    """A timer of :class:`HandTimers`: what ``loop.call_later`` returns, as far as the
    coordinator uses it."""

    due: float
    callback: Callable[..., object]
    args: tuple
    cancelled: bool = False

    def when(self) -> float:
        return self.due

    def cancel(self) -> None:
        self.cancelled = True


class HandTimers:
    """The coordinator's timer scheduler (``GroupCoordinator(scheduler=...)``), moved
    forward only by :meth:`advance`: a timer fires when the test says its time came,
    however long the event loop took meanwhile."""

    def __init__(self) -> None:
        self.now = 0.0
        self._pending: list[HandTimer] = []

    def call_later(self, delay: float, callback, *args) -> HandTimer:
        timer = HandTimer(self.now + delay, callback, args)
        self._pending.append(timer)
        return timer

    def advance(self, seconds: float) -> None:
        """Move the clock on by ``seconds``, firing each timer due by then in the order
        they fall due (a timer that a callback schedules fires too, if due)."""
        self.now += seconds
        while due := [t for t in self._pending if not t.cancelled and t.due <= self.now]:
            timer = min(due, key=HandTimer.when)
            self._pending.remove(timer)
            timer.callback(*timer.args)
        self._pending = [t for t in self._pending if not t.cancelled]


@dataclass
class Formed:
    """A group as a test formed it: its generation, leader and members (leader first)."""

    group: str
    generation: int
    leader: str
    members: list[str]


class Broker:
    """Broker 1, alone in its cluster: leader of the ``__consumer_offsets`` partitions
    ``lead`` with ISR [1], and their group coordinator."""

    def __init__(
        self,
        root: Path,
        config: CoordinatorConfig,
        lead: list[int],
        scheduler: HandTimers | None = None,
    ):
        self.root = root
        self.config = config
        self.lead = lead
        self.scheduler = scheduler  # None: the timers run on the event loop
        self.clock = Clock()
        self.leader_epoch = 0

    # -- the broker's life -----------------------------------------------------------------

    async def start(self, *, wait_for_load: bool = True) -> None:
        # No cleaner: nothing here needs compaction, and its offset map is 128 MiB.
        self.logs = LogManager(
            [self.root], broker_id=1, cleaner_config=CleanerConfig(log_cleaner_enable=False)
        )
        self.logs.startup()
        self.replicas = ReplicaManager(1, self.logs)
        self.coordinator = GroupCoordinator(
            self.replicas, self.config, clock_ms=self.clock, scheduler=self.scheduler
        )
        for partition in self.lead:
            error = self.replicas.become_leader_or_follower(
                OFFSETS_TOPIC,
                TOPIC_ID,
                partition,
                leader=1,
                leader_epoch=self.leader_epoch,
                replicas=[1],
                isr=[1],
            )
            assert error == E.NONE
            log = self.replicas.partitions[(OFFSETS_TOPIC, partition)].log
            self.coordinator.elected(partition, log)
        if wait_for_load:
            await wait_until_async(
                lambda: not self.coordinator.loading, "the offsets partition loaded", WAIT_S
            )

    async def stop(self) -> None:
        await self.coordinator.shutdown()
        await self.replicas.shutdown()
        self.logs.shutdown()

    async def restart(self, *, wait_for_load: bool = True) -> None:
        """Everything anew over the same log directory; leader again, one epoch on."""
        await self.stop()
        self.leader_epoch += 1
        await self.start(wait_for_load=wait_for_load)

    # -- a client's requests ---------------------------------------------------------------

    async def join(
        self,
        group: str,
        member_id: str = "",
        instance: str | None = None,
        *,
        protocols: list[tuple[str, bytes]] = RANGE,
        protocol_type: str = "consumer",
        session_ms: int = SESSION_MS,
        rebalance_ms: int = REBALANCE_MS,
        require_known_member_id: bool = False,
    ) -> JoinResult:
        return await self.coordinator.join(
            group,
            member_id,
            instance,
            client_id="client",
            client_host="/127.0.0.1",
            session_timeout_ms=session_ms,
            rebalance_timeout_ms=rebalance_ms,
            protocol_type=protocol_type,
            protocols=protocols,
            require_known_member_id=require_known_member_id,
        )

    async def sync(
        self,
        group: str,
        generation: int,
        member_id: str,
        instance: str | None = None,
        assignments: dict[str, bytes] | None = None,
        *,
        protocol_name: str | None = None,
    ) -> SyncResult:
        return await self.coordinator.sync(
            group, generation, member_id, instance, "consumer", protocol_name, assignments or {}
        )

    def heartbeat(self, group: str, generation: int, member_id: str, instance=None) -> E:
        return self.coordinator.heartbeat(group, generation, member_id, instance)

    async def commit(
        self, group: str, offsets: dict[tuple[str, int], int], generation=-1, member_id=""
    ) -> dict[tuple[str, int], E]:
        commits = {key: OffsetCommit(offset) for key, offset in offsets.items()}
        return await self.commit_request(group, generation, member_id, None, commits)

    async def commit_request(self, *request, **options) -> dict[tuple[str, int], E]:
        """The results of one OffsetCommit request (the fields of a ``CommitRequest``)."""
        (results,) = await self.coordinator.commit_offsets([CommitRequest(*request, **options)])
        return results

    def committed(self, group: str) -> dict[tuple[str, int], int]:
        error, found = self.coordinator.fetch_offsets(group, None)
        assert error == E.NONE
        return {key: value.offset for key, value in found.items()}

    def state(self, group: str) -> GroupState | None:
        error, found = self.coordinator.describe(group)
        assert error == E.NONE
        return None if found is None else found.state

    # -- forming groups ------------------------------------------------------------------------

    async def join_together(self, group: str, *joins: dict) -> list[JoinResult]:
        """New members that join at once (in one turn of the event loop, so before the
        initial rebalance delay of 0 ms ends): one generation for all of them."""
        return list(await asyncio.gather(*(self.join(group, **join) for join in joins)))

    async def form(
        self, group: str, count: int = 2, *, instances: list[str] | None = None, **join
    ) -> Formed:
        """A Stable group of ``count`` new members, joined in that order; the i-th member
        of the leader's JoinGroup answer (join order) is assigned ``b"to-<i>"``."""
        instances = instances or [None] * count
        results = await self.join_together(group, *({"instance": i, **join} for i in instances))
        assert {r.error for r in results} == {E.NONE}
        generation, leader = results[0].generation, results[0].leader
        assert all((r.generation, r.leader) == (generation, leader) for r in results)
        by_id = {r.member_id: r for r in results}
        members = [m for m, _, _ in by_id[leader].members]
        assert sorted(members) == sorted(by_id)
        assignments = {m: f"to-{i}".encode() for i, m in enumerate(members)}
        instance_of = {r.member_id: i for r, i in zip(results, instances, strict=True)}
        followers = [m for m in members if m != leader]
        synced = await asyncio.gather(
            *(self.sync(group, generation, m, instance_of[m]) for m in followers),
            self.sync(group, generation, leader, instance_of[leader], assignments),
        )
        assert [s.error for s in synced] == [E.NONE] * count
        assert self.state(group) == S.STABLE
        return Formed(group, generation, leader, [leader, *followers])


async def within(awaitable: Awaitable):
    async with asyncio.timeout(WAIT_S):
        return await awaitable


@pytest.fixture
def run(tmp_path):
    """Run ``scenario(broker)`` on a fresh broker, on an event loop of its own (its
    coordinator's timers on ``scheduler``, if given, else on that loop)."""

    def run(
        scenario,
        *,
        lead: list[int] | None = None,
        scheduler: HandTimers | None = None,
        **settings,
    ) -> None:
        config = CoordinatorConfig(
            **{
                "num_partitions": NUM_PARTITIONS,
                "initial_rebalance_delay_ms": 0,
                "min_session_timeout_ms": 10,
                "max_session_timeout_ms": 60_000,
                "retention_ms": RETENTION_MS,
                **settings,
            }
        )
        broker = Broker(
            tmp_path / "logs",
            config,
            list(range(NUM_PARTITIONS)) if lead is None else lead,
            scheduler,
        )

        async def main() -> None:
            await broker.start()
            try:
                async with asyncio.timeout(2 * WAIT_S):
                    await scenario(broker)
            finally:
                await broker.stop()

        asyncio.run(main())

    return run


def group_on(partition: int, prefix: str = "group") -> str:
    """A group id whose offsets partition is ``partition``."""
    return next(
        name
        for name in (f"{prefix}-{i}" for i in range(1000))
        if partition_for(name, NUM_PARTITIONS) == partition
    )


# -- where a group lives ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "java_hash"),
    [
        # Values printed by Java 17's String.hashCode.
        ("", 0),
        ("hello", 99162322),
        ("Aa", 2112),
        ("BB", 2112),
        ("é", 233),
        ("日本", 835047),
        ("🚀", 1773027),  # a surrogate pair: two UTF-16 code units
        ("grüppe-日本-🚀", 630390736),
        ("my-group", -1906497762),
        ("polygenelubricants", -(2**31)),
        ("GydZG_", -(2**31)),
    ],
)
def test_java_string_hash(text, java_hash):
    assert java_string_hash(text) == java_hash


@pytest.mark.parametrize(
    ("group", "partition"),
    [
        # abs(hashCode) % 50, as Kafka's Utils.abs, computed in Java 17.
        ("hello", 22),
        ("my-group", 12),  # a negative hash
        ("console-consumer-12345", 6),
        ("🚀", 27),
        ("polygenelubricants", 0),  # Integer.MIN_VALUE: Utils.abs gives 0
        ("GydZG_", 0),
    ],
)
def test_partition_for_a_group_as_kafka_computes_it(group, partition):
    assert partition_for(group, 50) == partition


def test_groups_of_partitions_led_elsewhere_are_not_coordinated_here(run):
    here, elsewhere = group_on(0), group_on(1)

    async def scenario(broker: Broker) -> None:
        c = broker.coordinator
        assert c.check(here) == E.NONE
        assert c.check(elsewhere) == E.NOT_COORDINATOR
        assert (await broker.join(elsewhere)).error == E.NOT_COORDINATOR
        assert broker.heartbeat(elsewhere, 1, "m") == E.NOT_COORDINATOR
        assert await broker.commit(elsewhere, {("t", 0): 1}) == {("t", 0): E.NOT_COORDINATOR}
        assert c.fetch_offsets(elsewhere, None) == (E.NOT_COORDINATOR, {})
        assert await c.delete_groups([elsewhere]) == {elsewhere: E.NOT_COORDINATOR}
        assert c.check("") == E.INVALID_GROUP_ID
        assert (await broker.join("")).error == E.INVALID_GROUP_ID

    run(scenario, lead=[0])


# -- JoinGroup -------------------------------------------------------------------------------


def test_member_id_required_then_the_member_joins_with_that_id(run):
    async def scenario(broker: Broker) -> None:
        first = await broker.join("g", require_known_member_id=True)
        assert first.error == E.MEMBER_ID_REQUIRED
        assert first.member_id.startswith("client-")
        assert broker.state("g") == S.EMPTY  # a reservation only: no rebalance yet

        joined = await within(broker.join("g", first.member_id, require_known_member_id=True))
        assert joined.error == E.NONE
        assert (joined.member_id, joined.leader, joined.generation) == (
            first.member_id,
            first.member_id,
            1,
        )
        assert (joined.protocol_type, joined.protocol_name) == ("consumer", "range")
        assert joined.members == [(first.member_id, None, RANGE[0][1])]
        assert broker.state("g") == S.COMPLETING_REBALANCE

        # A member id handed out but never used can be given back with LeaveGroup.
        other = await broker.join("g", require_known_member_id=True)
        assert other.error == E.MEMBER_ID_REQUIRED
        assert broker.coordinator.leave("g", [(other.member_id, None)]) == (E.NONE, [E.NONE])
        assert broker.coordinator.leave("g", [(other.member_id, None)]) == (
            E.NONE,
            [E.UNKNOWN_MEMBER_ID],
        )

    run(scenario)


def test_a_member_id_never_used_expires_with_its_session_and_leaves_nothing(run):
    async def scenario(broker: Broker) -> None:
        unused = [
            await broker.join("g", require_known_member_id=True, session_ms=20) for _ in range(5)
        ]
        assert {r.error for r in unused} == {E.MEMBER_ID_REQUIRED}
        assert broker.coordinator.timer_count == 5
        await wait_until_async(lambda: broker.coordinator.timer_count == 0, "no timer left", WAIT_S)
        for reservation in unused:
            late = await broker.join("g", reservation.member_id, require_known_member_id=True)
            assert late.error == E.UNKNOWN_MEMBER_ID

    run(scenario, min_session_timeout_ms=10)


def test_a_full_group_takes_no_new_member(run):
    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 2)
        assert (await broker.join("g")).error == E.GROUP_MAX_SIZE_REACHED
        assert broker.state("g") == S.STABLE
        # Its members still rejoin.
        again = await within(
            asyncio.gather(*(broker.join("g", member) for member in formed.members))
        )
        assert {r.error for r in again} == {E.NONE}

    run(scenario, max_group_size=2)


def test_a_member_id_the_group_never_gave_is_unknown(run):
    async def scenario(broker: Broker) -> None:
        assert (await broker.join("nobody-here", "made-up")).error == E.UNKNOWN_MEMBER_ID
        formed = await broker.form("g", 1)
        assert (await broker.join("g", "made-up")).error == E.UNKNOWN_MEMBER_ID
        assert broker.state("g") == S.STABLE and formed.generation == 1

    run(scenario)


def test_members_joining_together_form_one_generation_with_a_protocol_all_support(run):
    sticky_a, range_a, range_b = b"a/sticky", b"a/range", b"b/range"

    async def scenario(broker: Broker) -> None:
        a, b, _ = await within(
            broker.join_together(
                "g",
                {"protocols": [("cooperative-sticky", sticky_a), ("range", range_a)]},
                {"protocols": [("range", range_b), ("cooperative-sticky", b"b/sticky")]},
                # b's second choice is a's first, but c has only range:
                {"protocols": [("range", b"c/range")]},
            )
        )
        results = [a, b]
        assert [r.error for r in results] == [E.NONE, E.NONE]
        assert {r.generation for r in results} == {1}
        assert {r.protocol_name for r in results} == {"range"}
        assert a.leader == b.leader == a.member_id  # the first to join leads
        assert a.member_id != b.member_id
        # The leader gets every member's metadata of the chosen protocol; others none.
        metadata = {m: data for m, _, data in a.members}
        assert metadata[a.member_id] == range_a
        assert metadata[b.member_id] == range_b
        assert len(metadata) == 3
        assert b.members == []

    run(scenario)


def test_inconsistent_group_protocol(run):
    async def scenario(broker: Broker) -> None:
        await broker.form("g", 1)
        other_type = await broker.join("g", protocol_type="connect")
        assert other_type.error == E.INCONSISTENT_GROUP_PROTOCOL
        nothing_shared = await broker.join("g", protocols=[("roundrobin", b"")])
        assert nothing_shared.error == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await broker.join("fresh", protocols=[])).error == E.INCONSISTENT_GROUP_PROTOCOL
        assert (await broker.join("fresh", protocol_type="")).error == (
            E.INCONSISTENT_GROUP_PROTOCOL
        )
        assert broker.state("g") == S.STABLE

    run(scenario)


def test_session_timeout_outside_the_brokers_bounds_is_refused(run):
    async def scenario(broker: Broker) -> None:
        for session_ms in (9, 60_001):
            result = await broker.join("g", session_ms=session_ms)
            assert result.error == E.INVALID_SESSION_TIMEOUT
        assert broker.state("g") is None  # no group was made
        assert (await within(broker.join("g", session_ms=10))).error == E.NONE

    run(scenario, min_session_timeout_ms=10, max_session_timeout_ms=60_000)


# -- SyncGroup -------------------------------------------------------------------------------


def test_sync_gives_every_member_the_leaders_assignment_and_the_group_is_stable(run):
    async def scenario(broker: Broker) -> None:
        a, b = await within(broker.join_together("g", {}, {}))
        leader, follower = a.member_id, b.member_id
        assert broker.state("g") == S.COMPLETING_REBALANCE
        # The follower asks first: its answer waits for the leader's assignment.
        waiting = asyncio.create_task(broker.sync("g", 1, follower))
        _, group = broker.coordinator.describe("g")
        await wait_until_async(
            lambda: group.members[follower].awaiting_sync is not None,
            "the follower's SyncGroup held",
            WAIT_S,
        )
        assert not waiting.done()
        mine = await within(broker.sync("g", 1, leader, None, {leader: b"L", follower: b"F"}))
        theirs = await within(waiting)
        assert (mine.error, mine.assignment) == (E.NONE, b"L")
        assert (theirs.error, theirs.assignment) == (E.NONE, b"F")
        assert (theirs.protocol_type, theirs.protocol_name) == ("consumer", "range")
        assert broker.state("g") == S.STABLE
        # Asked again once Stable: the same assignment, at once.
        assert (await broker.sync("g", 1, follower)).assignment == b"F"
        assert (await broker.sync("g", 0, follower)).error == E.ILLEGAL_GENERATION
        assert (await broker.sync("g", 1, "stranger")).error == E.UNKNOWN_MEMBER_ID
        wrong = await broker.sync("g", 1, follower, protocol_name="roundrobin")
        assert wrong.error == E.INCONSISTENT_GROUP_PROTOCOL

    run(scenario)


# -- Heartbeat -------------------------------------------------------------------------------


def test_heartbeat_answers(run):
    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 2)
        leader, follower = formed.members
        assert broker.heartbeat("g", 1, follower) == E.NONE
        assert broker.heartbeat("g", 0, follower) == E.ILLEGAL_GENERATION
        assert broker.heartbeat("g", 1, "stranger") == E.UNKNOWN_MEMBER_ID
        assert broker.heartbeat("unknown-group", 1, follower) == E.UNKNOWN_MEMBER_ID

        # A new member: a rebalance, which the others learn from their heartbeats.
        newcomer = asyncio.create_task(broker.join("g"))
        await wait_until_async(
            lambda: broker.state("g") == S.PREPARING_REBALANCE, "g preparing a rebalance", WAIT_S
        )
        assert broker.heartbeat("g", 1, leader) == E.REBALANCE_IN_PROGRESS
        assert broker.heartbeat("g", 1, follower) == E.REBALANCE_IN_PROGRESS
        assert (await broker.sync("g", 1, follower)).error == E.REBALANCE_IN_PROGRESS

        rejoined = await within(
            asyncio.gather(broker.join("g", leader), broker.join("g", follower), newcomer)
        )
        assert {r.generation for r in rejoined} == {2}
        assert broker.state("g") == S.COMPLETING_REBALANCE
        assert broker.heartbeat("g", 2, follower) == E.NONE
        assert broker.heartbeat("g", 1, follower) == E.ILLEGAL_GENERATION

    run(scenario)


# -- timers: sessions and rebalances -----------------------------------------------------


def test_a_member_whose_session_ends_is_removed_and_the_group_rebalances(run):
    async def scenario(broker: Broker) -> None:
        alive, silent = await within(
            broker.join_together("g", {"session_ms": SESSION_MS}, {"session_ms": SHORT_MS})
        )
        generation = alive.generation
        await within(
            asyncio.gather(
                broker.sync("g", generation, silent.member_id),
                broker.sync("g", generation, alive.member_id, None, {}),
            )
        )
        # Only the live member heartbeats; the silent one's session ends.
        await wait_until_async(
            lambda: broker.heartbeat("g", generation, alive.member_id) == E.REBALANCE_IN_PROGRESS,
            "the silent member's session ended (a rebalance)",
            WAIT_S,
        )
        again = await within(broker.join("g", alive.member_id))
        assert again.generation == generation + 1
        assert [m for m, _, _ in again.members] == [alive.member_id]
        assert broker.heartbeat("g", generation, silent.member_id) == E.UNKNOWN_MEMBER_ID

    run(scenario)


def test_a_member_that_does_not_rejoin_is_dropped_at_the_rebalance_timeout(run):
    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 2, rebalance_ms=SHORT_MS)
        leader, follower = formed.members
        # The leader rejoins (a rebalance); the follower never does.
        result = await within(broker.join("g", leader, rebalance_ms=SHORT_MS))
        assert result.error == E.NONE and result.generation == 2
        assert [m for m, _, _ in result.members] == [leader]
        assert broker.heartbeat("g", 2, follower) == E.UNKNOWN_MEMBER_ID

    run(scenario)


def test_a_static_member_that_does_not_rejoin_keeps_its_place(run):
    """KIP-345: a static member leaves the group with its session, not with a rebalance."""

    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 2, instances=["i-1", "i-2"], rebalance_ms=SHORT_MS)
        leader, follower = formed.members
        result = await within(broker.join("g", leader, "i-1", rebalance_ms=SHORT_MS))
        assert result.error == E.NONE and result.generation == 2
        assert {m for m, _, _ in result.members} == {leader, follower}

    run(scenario)


def test_a_member_that_sends_no_sync_group_is_dropped_at_the_rebalance_timeout(run):
    async def scenario(broker: Broker) -> None:
        a, b = await within(
            broker.join_together("g", {"rebalance_ms": SHORT_MS}, {"rebalance_ms": SHORT_MS})
        )
        # a leads but never sends its assignment; b waits for it in vain.
        answer = await within(broker.sync("g", 1, b.member_id))
        assert answer.error == E.REBALANCE_IN_PROGRESS
        assert broker.heartbeat("g", 1, a.member_id) == E.UNKNOWN_MEMBER_ID

    run(scenario)


# -- LeaveGroup ------------------------------------------------------------------------------


def test_dynamic_members_leaving_rebalance_the_group_then_empty_it(run):
    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 2)
        leader, follower = formed.members
        assert broker.coordinator.leave("g", [(follower, None)]) == (E.NONE, [E.NONE])
        assert broker.state("g") == S.PREPARING_REBALANCE
        again = await within(broker.join("g", leader))
        assert again.generation == 2 and [m for m, _, _ in again.members] == [leader]

        assert broker.coordinator.leave("g", [(leader, None), ("stranger", None)]) == (
            E.NONE,
            [E.NONE, E.UNKNOWN_MEMBER_ID],
        )
        _, group = broker.coordinator.describe("g")
        assert (group.state, group.generation, group.members) == (S.EMPTY, 3, {})
        assert broker.coordinator.leave("unknown-group", [("m", None)]) == (
            E.NONE,
            [E.UNKNOWN_MEMBER_ID],
        )

    run(scenario)


def test_static_members_leave_in_one_batch(run):
    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 2, instances=["i-1", "i-2"])
        first = formed.members[0]
        _, group = broker.coordinator.describe("g")
        assert group.static_members["i-1"] == first
        error, each = broker.coordinator.leave(
            "g",
            [
                ("not-its-member-id", "i-1"),
                (first, "i-1"),
                ("", "i-2"),  # by instance id alone
                ("", "i-never-joined"),
            ],
        )
        assert error == E.NONE
        assert each == [E.FENCED_INSTANCE_ID, E.NONE, E.NONE, E.UNKNOWN_MEMBER_ID]
        _, group = broker.coordinator.describe("g")
        assert (group.state, group.generation, group.members) == (S.EMPTY, 2, {})

    run(scenario)


def test_a_static_member_restarting_keeps_its_assignment_without_a_rebalance(run):
    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 2, instances=["i-1", "i-2"])
        leader, follower = formed.members
        instance_of = {leader: "i-1", follower: "i-2"}
        back = await within(broker.join("g", "", instance_of[follower]))
        assert back.error == E.NONE
        assert back.member_id not in (leader, follower)
        assert (back.generation, back.leader, back.skip_assignment) == (1, leader, False)
        assert broker.state("g") == S.STABLE
        assert (await broker.sync("g", 1, back.member_id, instance_of[follower])).assignment == (
            b"to-1"
        )
        # The old member id of that instance is fenced.
        assert broker.heartbeat("g", 1, follower, instance_of[follower]) == E.FENCED_INSTANCE_ID
        stale = await broker.sync("g", 1, follower, instance_of[follower])
        assert stale.error == E.FENCED_INSTANCE_ID
        stale_commit = await broker.commit_request(
            "g", 1, follower, instance_of[follower], {("orders", 0): OffsetCommit(5)}
        )
        assert stale_commit == {("orders", 0): E.FENCED_INSTANCE_ID}
        assert broker.heartbeat("g", 1, back.member_id, instance_of[follower]) == E.NONE

        # The leader restarts: it leads on and need not compute an assignment again.
        new_leader = await within(broker.join("g", "", instance_of[leader]))
        assert (new_leader.generation, new_leader.leader) == (1, new_leader.member_id)
        assert new_leader.skip_assignment
        assert broker.state("g") == S.STABLE

    run(scenario)


# -- OffsetCommit, OffsetFetch ---------------------------------------------------------------


def test_a_consumer_without_a_group_commits_with_generation_minus_one(run):
    async def scenario(broker: Broker) -> None:
        results = await broker.commit("simple", {("t", 0): 10, ("t", 1): 20})
        assert results == {("t", 0): E.NONE, ("t", 1): E.NONE}
        assert broker.committed("simple") == {("t", 0): 10, ("t", 1): 20}
        assert broker.state("simple") == S.EMPTY
        # Only generation -1 makes a group that way.
        made_up = await broker.commit("other", {("t", 0): 1}, generation=3, member_id="m")
        assert made_up == {("t", 0): E.ILLEGAL_GENERATION}
        assert broker.state("other") is None

    run(scenario)


def test_commits_of_a_group_are_checked_against_its_members_and_generation(run):
    async def scenario(broker: Broker) -> None:
        a, b = await within(broker.join_together("g", {}, {}))
        key = ("orders", 0)
        # Between JoinGroup and the assignment: no commits.
        assert await broker.commit("g", {key: 1}, 1, a.member_id) == {key: E.REBALANCE_IN_PROGRESS}
        await within(
            asyncio.gather(
                broker.sync("g", 1, b.member_id), broker.sync("g", 1, a.member_id, None, {})
            )
        )
        assert await broker.commit("g", {key: 1}, 1, "stranger") == {key: E.UNKNOWN_MEMBER_ID}
        assert await broker.commit("g", {key: 1}, 0, a.member_id) == {key: E.ILLEGAL_GENERATION}
        assert await broker.commit("g", {key: 1}, -1, "") == {key: E.UNKNOWN_MEMBER_ID}
        assert broker.committed("g") == {}
        assert await broker.commit("g", {key: 7}, 1, b.member_id) == {key: E.NONE}
        assert broker.committed("g") == {key: 7}

    run(scenario)


def test_members_may_commit_while_the_group_prepares_a_rebalance(run):
    """Seed 003 四.3: a rebalance gives members time to commit what they processed."""

    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 2)
        leader, follower = formed.members
        newcomer = asyncio.create_task(broker.join("g"))
        await wait_until_async(
            lambda: broker.state("g") == S.PREPARING_REBALANCE, "g preparing a rebalance", WAIT_S
        )
        assert await broker.commit("g", {("orders", 0): 42}, 1, follower) == {("orders", 0): E.NONE}
        assert broker.committed("g") == {("orders", 0): 42}
        await within(asyncio.gather(broker.join("g", leader), broker.join("g", follower)))
        await within(newcomer)

    run(scenario)


def test_offset_metadata_too_large_is_refused_for_that_partition_only(run):
    async def scenario(broker: Broker) -> None:
        offsets = {
            ("t", 0): OffsetCommit(1, metadata="x" * 10),
            ("t", 1): OffsetCommit(2, metadata="é" * 6),  # 6 characters, 12 bytes
            ("t", 2): OffsetCommit(3, metadata=None),
        }
        results = await broker.commit_request("g", -1, "", None, offsets)
        assert results == {
            ("t", 0): E.NONE,
            ("t", 1): E.OFFSET_METADATA_TOO_LARGE,
            ("t", 2): E.NONE,
        }
        error, found = broker.coordinator.fetch_offsets("g", None)
        assert {k: (v.offset, v.metadata) for k, v in found.items()} == {
            ("t", 0): (1, "x" * 10),
            ("t", 2): (3, ""),
        }

    run(scenario, max_metadata_bytes=10)


def batches_in(broker: Broker, partition: int) -> list:
    """The batch headers of an offsets partition's log, in order."""
    log = broker.replicas.partitions[(OFFSETS_TOPIC, partition)].log
    return [h for s in log.segments for h in iter_batch_headers(s.log_path.read_bytes())]


def test_commits_read_together_are_checked_one_by_one_and_appended_as_one_batch(run):
    """A client's pipelined commits, handled as a burst: each request gets the answer it
    would get alone, and those accepted cost one batch per offsets partition."""

    async def scenario(broker: Broker) -> None:
        group, elsewhere = group_on(0), group_on(1)
        formed = await broker.form(group, 2)
        a, b = formed.members
        batches_before = {p: len(batches_in(broker, p)) for p in (0, 1)}
        key, other = ("orders", 0), ("orders", 1)
        requests = [
            CommitRequest(group, 1, a, None, {key: OffsetCommit(1)}),
            CommitRequest(group, 1, "stranger", None, {key: OffsetCommit(99)}),
            CommitRequest(group, 1, b, None, {key: OffsetCommit(2), other: OffsetCommit(3)}),
            CommitRequest(group, 0, a, None, {other: OffsetCommit(98)}),
            CommitRequest(group, 1, a, None, {other: OffsetCommit(4, metadata="x" * 11)}),
            CommitRequest(elsewhere, -1, "", None, {key: OffsetCommit(7)}),
            CommitRequest(group, 1, a, None, {other: OffsetCommit(5), key: OffsetCommit(6)}),
        ]
        results = await broker.coordinator.commit_offsets(requests)
        assert results == [
            {key: E.NONE},
            {key: E.UNKNOWN_MEMBER_ID},
            {key: E.NONE, other: E.NONE},
            {other: E.ILLEGAL_GENERATION},
            {other: E.OFFSET_METADATA_TOO_LARGE},
            {key: E.NONE},
            {other: E.NONE, key: E.NONE},  # in the request's order
        ]
        assert list(results[-1]) == [other, key]
        assert broker.committed(group) == {key: 6, other: 5}
        assert broker.committed(elsewhere) == {key: 7}
        # One batch on each partition, holding the accepted records in request order.
        added = {p: batches_in(broker, p)[batches_before[p] :] for p in (0, 1)}
        assert [h.records_count for h in added[0]] == [5]
        assert [h.records_count for h in added[1]] == [1]
        # Replayed from the log, the last commit of each partition counts.
        await broker.restart()
        assert broker.committed(group) == {key: 6, other: 5}
        assert broker.committed(elsewhere) == {key: 7}

    run(scenario, max_metadata_bytes=10)


def test_fetch_all_offsets_or_those_of_given_partitions(run):
    async def scenario(broker: Broker) -> None:
        before = broker.clock()
        offsets = {
            ("a", 0): OffsetCommit(5, leader_epoch=3, metadata="m"),
            ("b", 2): OffsetCommit(9),
        }
        await broker.commit_request("g", -1, "", None, offsets)
        error, everything = broker.coordinator.fetch_offsets("g", None)
        assert error == E.NONE and set(everything) == {("a", 0), ("b", 2)}
        value = everything[("a", 0)]
        assert (value.offset, value.leader_epoch, value.metadata) == (5, 3, "m")
        assert value.commit_timestamp >= before and value.expire_timestamp == -1

        error, some = broker.coordinator.fetch_offsets("g", [("b", 2), ("a", 1)])
        assert error == E.NONE
        assert some[("b", 2)].offset == 9 and some[("a", 1)] is None
        assert list(some) == [("b", 2), ("a", 1)]
        assert broker.coordinator.fetch_offsets("no-such-group", [("a", 0)]) == (
            E.NONE,
            {("a", 0): None},
        )
        assert broker.coordinator.fetch_offsets("no-such-group", None) == (E.NONE, {})

    run(scenario)


# -- OffsetDelete, DeleteGroups ----------------------------------------------------------


def test_offsets_of_topics_the_members_subscribe_to_are_not_deleted(run):
    async def scenario(broker: Broker) -> None:
        protocols = [("range", subscription("orders", "payments", user_data=b"rack-a"))]
        formed = await broker.form("g", 1, protocols=protocols)
        (member,) = formed.members
        committed = {("orders", 0): 1, ("audit", 0): 2, ("audit", 1): 3}
        assert set((await broker.commit("g", committed, 1, member)).values()) == {E.NONE}

        error, results = await broker.coordinator.delete_offsets(
            "g", [("orders", 0), ("audit", 0), ("audit", 7)]
        )
        assert error == E.NONE
        assert results == {
            ("orders", 0): E.GROUP_SUBSCRIBED_TO_TOPIC,
            ("audit", 0): E.NONE,
            ("audit", 7): E.NONE,  # nothing committed there: nothing to do
        }
        assert broker.committed("g") == {("orders", 0): 1, ("audit", 1): 3}

        # Once the group is Empty, its members subscribe to nothing.
        broker.coordinator.leave("g", [(member, None)])
        assert broker.state("g") == S.EMPTY
        error, results = await broker.coordinator.delete_offsets("g", [("orders", 0)])
        assert (error, results) == (E.NONE, {("orders", 0): E.NONE})
        assert broker.committed("g") == {("audit", 1): 3}

        assert await broker.coordinator.delete_offsets("no-such-group", [("t", 0)]) == (
            E.GROUP_ID_NOT_FOUND,
            {},
        )

    run(scenario)


def test_delete_groups(run):
    async def scenario(broker: Broker) -> None:
        await broker.form("busy", 1)
        await broker.commit("idle", {("t", 0): 5})
        results = await broker.coordinator.delete_groups(["busy", "idle", "never-was"])
        assert results == {
            "busy": E.NON_EMPTY_GROUP,
            "idle": E.NONE,
            "never-was": E.GROUP_ID_NOT_FOUND,
        }
        assert broker.state("idle") is None and broker.committed("idle") == {}
        assert broker.state("busy") == S.STABLE
        # Gone for good: the tombstones are what a new coordinator reads.
        await broker.restart()
        assert broker.state("idle") is None and broker.committed("idle") == {}
        _, listed = broker.coordinator.list_groups()
        assert [g.group_id for g in listed] == ["busy"]

    run(scenario)


# -- offset expiry -------------------------------------------------------------------------


def test_offsets_of_a_consumer_without_a_group_expire_after_retention_from_their_commit(run):
    async def scenario(broker: Broker) -> None:
        await broker.commit("simple", {("t", 0): 1})
        broker.clock.advance(RETENTION_MS // 2)
        await broker.commit("simple", {("t", 1): 2})
        broker.clock.advance(RETENTION_MS // 2)
        broker.coordinator.expire_offsets()
        await wait_until_async(
            lambda: ("t", 0) not in broker.committed("simple"), "the offset of t-0 expired", WAIT_S
        )
        assert broker.committed("simple") == {("t", 1): 2}

        broker.clock.advance(RETENTION_MS // 2)
        broker.coordinator.expire_offsets()
        await wait_until_async(
            lambda: broker.state("simple") is None, "the emptied group gone", WAIT_S
        )  # nothing left: gone
        assert broker.committed("simple") == {}
        await broker.restart()
        assert broker.state("simple") is None

    run(scenario)


def test_offsets_of_deleted_partitions_leave_every_group(run):
    """Kafka's onPartitionsDeleted: when the controller's UpdateMetadata deletes a
    topic, its offsets get tombstones in every group (a stable one too), kept after a
    restart; an Empty group left with none is deleted."""

    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 1)
        (member,) = formed.members
        await broker.commit("g", {("orders", 0): 5, ("gone", 0): 7, ("gone", 1): 8}, 1, member)
        await broker.commit("only-gone", {("gone", 0): 3})
        broker.coordinator.partitions_deleted({("gone", 0), ("gone", 1), ("other", 0)})
        await wait_until_async(
            lambda: broker.committed("g") == {("orders", 0): 5},
            "g's committed offsets {orders-0: 5}",
            WAIT_S,
        )
        await wait_until_async(
            lambda: broker.state("only-gone") is None, "only-gone removed", WAIT_S
        )
        assert broker.state("g") == S.STABLE
        await broker.restart()
        assert broker.committed("g") == {("orders", 0): 5}
        assert broker.state("only-gone") is None

    run(scenario)


def test_an_explicit_retention_time_of_a_commit_is_kept(run):
    async def scenario(broker: Broker) -> None:
        await broker.commit_request(
            "g", -1, "", None, {("t", 0): OffsetCommit(1)}, retention_ms=DAY_MS
        )
        await broker.commit("g", {("t", 1): 2})
        broker.clock.advance(DAY_MS)
        broker.coordinator.expire_offsets()
        await wait_until_async(
            lambda: broker.committed("g") == {("t", 1): 2}, "g's committed offsets {t-1: 2}", WAIT_S
        )

    run(scenario)


def test_a_stable_group_loses_only_offsets_of_topics_it_no_longer_subscribes_to(run):
    """KIP-496: while a consumer group is Stable, offsets of a topic none of its members
    subscribes to expire ``offsets.retention.minutes`` after their commit; those of
    subscribed topics never do."""

    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 1)  # subscribed to "orders"
        (member,) = formed.members
        await broker.commit("g", {("orders", 0): 5, ("old-topic", 0): 7}, 1, member)
        broker.coordinator.expire_offsets()
        await broker.coordinator.background_done()
        assert broker.committed("g") == {("orders", 0): 5, ("old-topic", 0): 7}

        broker.clock.advance(RETENTION_MS + 1)
        broker.heartbeat("g", 1, member)  # the member is alive throughout
        broker.coordinator.expire_offsets()
        await wait_until_async(
            lambda: broker.committed("g") == {("orders", 0): 5},
            "g's committed offsets {orders-0: 5}",
            WAIT_S,
        )
        assert broker.state("g") == S.STABLE

    run(scenario)


def test_offsets_of_a_group_expire_only_after_retention_from_when_it_became_empty(run):
    """Kafka 2.1+ (KIP-211): while a group has members its offsets never expire; once it is
    Empty, they expire ``offsets.retention.minutes`` after it became Empty, however old
    their commits are.
    An Empty group keeps its protocol type for this: without it, retention counted from
    each commit and a long-lived consumer's offsets went at its last member's leave."""

    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 1)
        (member,) = formed.members
        await broker.commit("g", {("orders", 0): 100}, 1, member)
        broker.clock.advance(RETENTION_MS + DAY_MS)  # a long-lived, idle consumer
        broker.coordinator.expire_offsets()  # not Empty: never expires
        broker.coordinator.leave("g", [(member, None)])
        assert broker.state("g") == S.EMPTY

        broker.coordinator.expire_offsets()  # Empty only just now
        await broker.coordinator.background_done()
        assert broker.committed("g") == {("orders", 0): 100}

        broker.clock.advance(RETENTION_MS)
        broker.coordinator.expire_offsets()
        await wait_until_async(lambda: broker.state("g") is None, "g gone", WAIT_S)

    run(scenario)


def test_an_empty_group_stored_without_a_state_time_counts_retention_from_commits(run):
    """GroupMetadataValue v0 and v1 (Kafka before 2.1) have no current_state_timestamp: Kafka
    then counts an Empty group's retention from each offset's commit time.
    Such a loaded group's state time is -1, which must not count as "Empty since"."""

    async def scenario(broker: Broker) -> None:
        now = broker.clock()
        stored = GroupMetadataValue("consumer", 5, None, None, -1, [])
        records = [
            (encode_key(GroupMetadataKey("old")), encode_group_value(stored, version=1)),
            (
                encode_key(OffsetKey("old", "t", 0)),
                encode_offset_value(OffsetValue(7, commit_timestamp=now)),
            ),
        ]
        partition = broker.coordinator.partition_for("old")
        appended = broker.replicas.append(
            OFFSETS_TOPIC, partition, build_batch(records, timestamp=now), acks=-1
        )
        assert appended.error == E.NONE
        await broker.restart()
        _, group = broker.coordinator.describe("old")
        assert (group.state, group.generation, group.protocol_type) == (S.EMPTY, 5, "consumer")

        broker.coordinator.expire_offsets()  # committed just now
        await broker.coordinator.background_done()
        assert broker.committed("old") == {("t", 0): 7}

        broker.clock.advance(RETENTION_MS)
        broker.coordinator.expire_offsets()
        await wait_until_async(lambda: broker.state("old") is None, "old gone", WAIT_S)

    run(scenario)


# -- losing and gaining the offsets partition -------------------------------------------


def test_resigning_answers_waiting_requests_with_not_coordinator(run):
    moving, staying = group_on(0), group_on(1)

    async def scenario(broker: Broker) -> None:
        formed = await broker.form(moving, 1)
        await broker.commit(staying, {("t", 0): 3})
        waiting = asyncio.create_task(broker.join(moving))  # held: the member must rejoin
        await wait_until_async(
            lambda: broker.state(moving) == S.PREPARING_REBALANCE,
            "the moving group preparing a rebalance",
            WAIT_S,
        )

        broker.coordinator.resigned(0)
        assert (await within(waiting)).error == E.NOT_COORDINATOR
        assert broker.coordinator.check(moving) == E.NOT_COORDINATOR
        assert broker.heartbeat(moving, 1, formed.leader) == E.NOT_COORDINATOR
        assert broker.coordinator.fetch_offsets(moving, None) == (E.NOT_COORDINATOR, {})
        # The other partition's groups are still here.
        assert broker.committed(staying) == {("t", 0): 3}

    run(scenario)


def test_staying_leader_under_a_new_leader_epoch_keeps_the_groups(run):
    """An ISR change bumps the leader epoch without moving the leader: the coordinator
    goes on with its groups as they are (no drop, no reload, no waiting request lost)."""

    staying = group_on(0)

    async def scenario(broker: Broker) -> None:
        formed = await broker.form(staying, 1)
        waiting = asyncio.create_task(broker.join(staying))  # a second member, held
        await wait_until_async(
            lambda: broker.state(staying) == S.PREPARING_REBALANCE,
            "the staying group preparing a rebalance",
            WAIT_S,
        )
        _, group = broker.coordinator.describe(staying)

        log = broker.replicas.partitions[(OFFSETS_TOPIC, 0)].log
        broker.coordinator.elected(0, log)
        assert not broker.coordinator.loading
        assert broker.coordinator.describe(staying) == (E.NONE, group)
        assert not waiting.done()
        assert broker.heartbeat(staying, 1, formed.leader) == E.REBALANCE_IN_PROGRESS

    run(scenario)


def test_a_new_coordinator_replays_groups_and_offsets_from_the_partition(run):
    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 3, instances=[None, "i-2", None])
        members = formed.members
        await broker.commit("g", {("orders", 0): 11, ("orders", 1): 12}, 1, members[1])
        await broker.commit("g", {("orders", 0): 13}, 1, members[2])  # the last one counts
        await broker.commit("simple", {("t", 0): 1, ("t", 1): 2})
        await broker.coordinator.delete_offsets("simple", [("t", 1)])
        await broker.commit("deleted", {("t", 0): 1})
        await broker.coordinator.delete_groups(["deleted"])
        _, before = broker.coordinator.describe("g")
        assignments = {m.member_id: m.assignment for m in before.members.values()}

        await broker.restart(wait_for_load=False)
        c = broker.coordinator
        assert c.check("g") == E.COORDINATOR_LOAD_IN_PROGRESS
        assert (await broker.join("g")).error == E.COORDINATOR_LOAD_IN_PROGRESS
        assert c.fetch_offsets("g", None) == (E.COORDINATOR_LOAD_IN_PROGRESS, {})
        assert c.list_groups() == (E.COORDINATOR_LOAD_IN_PROGRESS, [])
        await wait_until_async(lambda: not c.loading, "the offsets partition loaded", WAIT_S)

        _, group = c.describe("g")
        assert (group.state, group.generation, group.leader) == (S.STABLE, 1, formed.leader)
        assert (group.protocol_type, group.protocol) == ("consumer", "range")
        assert list(group.members) == members
        assert {m.member_id: m.assignment for m in group.members.values()} == assignments
        assert set(assignments.values()) == {b"to-0", b"to-1", b"to-2"}
        assert group.static_members == {"i-2": members[1]}
        assert broker.committed("g") == {("orders", 0): 13, ("orders", 1): 12}
        assert broker.committed("simple") == {("t", 0): 1}
        assert c.describe("deleted") == (E.NONE, None)
        # The members carry on where they were.
        assert broker.heartbeat("g", 1, members[0]) == E.NONE
        assert (await broker.sync("g", 1, members[2])).assignment == assignments[members[2]]

    run(scenario)


def test_a_loaded_member_that_sends_nothing_is_removed_at_its_session_timeout(run):
    async def scenario(broker: Broker) -> None:
        formed = await broker.form("g", 1, session_ms=SHORT_MS)
        (member,) = formed.members
        # Nothing yields to the event loop between the SyncGroup and the restart, so the
        # session can only end in the coordinator that loads the group.
        await broker.restart()
        await wait_until_async(lambda: broker.state("g") == S.EMPTY, "g empty", WAIT_S)
        _, group = broker.coordinator.describe("g")
        assert group.generation == 2 and not group.members
        assert broker.heartbeat("g", 1, member) == E.UNKNOWN_MEMBER_ID

    run(scenario)


def test_the_initial_rebalance_delay_gathers_members_that_join_during_it(run):
    """An Empty group's first rebalance waits group.initial.rebalance.delay.ms, longer
    while members keep coming (up to the rebalance timeout): members that join a little
    apart still form one generation, which the all-joined check alone would not wait for.
    The coordinator's timers are the test's: a delay ends when the test moves them on."""
    timers = HandTimers()
    delay_s = 1.0

    async def scenario(broker: Broker) -> None:
        def members() -> int:
            _, group = broker.coordinator.describe("g")
            return 0 if group is None else len(group.members)

        def still_joining() -> None:
            assert broker.state("g") == S.PREPARING_REBALANCE
            assert not any(task.done() for task in joins)

        joins = [asyncio.create_task(broker.join("g"))]
        await wait_until_async(lambda: members() == 1, "the first member in g", WAIT_S)
        timers.advance(delay_s / 2)
        joins.append(asyncio.create_task(broker.join("g")))  # inside the first delay
        await wait_until_async(lambda: members() == 2, "the second member in g", WAIT_S)
        timers.advance(delay_s / 2)
        # The first delay ended having seen a member come: it added another, where it
        # would otherwise have completed the join.
        still_joining()
        joins.append(asyncio.create_task(broker.join("g")))  # inside the second delay
        await wait_until_async(lambda: members() == 3, "the third member in g", WAIT_S)
        timers.advance(delay_s)
        still_joining()  # the second delay saw the third member come: a third delay
        timers.advance(delay_s * 0.75)
        still_joining()
        timers.advance(delay_s * 0.25)  # the third delay over, nobody came: joined
        results = [await within(task) for task in joins]
        assert {r.error for r in results} == {E.NONE}
        assert {r.generation for r in results} == {1}
        assert sum(1 for r in results if r.members) == 1  # the leader's answer
        assert len(next(r for r in results if r.members).members) == 3

    run(scenario, scheduler=timers, initial_rebalance_delay_ms=int(delay_s * 1000))
