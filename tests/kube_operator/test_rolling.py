"""The roller (``cluster/rolling.py``), table-driven: observations of the brokers and
partitions in, a node state per broker and one action out; then whole rolls simulated
pass by pass."""

from __future__ import annotations

import pytest

from tidelog_operator.cluster.rolling import (
    BrokerObservation,
    NodeState,
    PartitionState,
    RollAction,
    RollDecision,
    RollLimits,
    classify,
    decide_roll,
    preferred_to_elect,
)

NOTHING, WAIT, RESTART = RollAction.NOTHING, RollAction.WAIT, RollAction.RESTART
ELECT, GIVE_UP = RollAction.ELECT_PREFERRED, RollAction.GIVE_UP
DONE = RollDecision(NOTHING, reason="every broker runs the current revision")

# what the pod shows in each state: pod_exists, running, started, ready (LAGGING is a
# ready broker out of an ISR, which the partitions tell)
POD = {
    "no pod": (False, False, False, False),
    "not running": (True, False, False, False),
    "recovering": (True, True, False, False),
    "not ready": (True, True, True, False),
    "ready": (True, True, True, True),
}


def broker(id_: int, pod: str = "ready", stale: bool = True, **facts) -> BrokerObservation:
    return BrokerObservation(id_, stale, *POD[pod], **facts)


def current(id_: int, pod: str = "ready", **facts) -> BrokerObservation:
    return broker(id_, pod, stale=False, **facts)


def restarted(id_: int, pod: str, since: float, attempts: int = 1, **facts):
    """A broker this roll restarted (so on the current revision), ``since`` s ago."""
    return current(id_, pod, restarted=True, attempts=attempts, since_restart_s=since, **facts)


def lacking(id_: int, pod: str = "ready", controller: bool = False) -> BrokerObservation:
    """A stale broker whose pod lacks a volume the StatefulSet's templates added."""
    return broker(id_, pod, lacks_volumes=True, controller=controller)


def partition(replicas, isr, min_isr=2, leader=None, name=("t", 0)) -> PartitionState:
    leader = isr[0] if leader is None else leader
    return PartitionState(*name, tuple(replicas), tuple(isr), leader, min_isr)


FULL = [
    partition([i, (i + 1) % 3, (i + 2) % 3], [0, 1, 2], leader=i, name=("t", i)) for i in range(3)
]


@pytest.mark.parametrize(
    ("observed", "partitions", "expected"),
    [
        (broker(0, "no pod"), FULL, NodeState.NOT_RUNNING),
        (broker(0, "not running"), FULL, NodeState.NOT_RUNNING),
        (broker(0, "recovering"), FULL, NodeState.RECOVERING),
        (broker(0, "not ready"), FULL, NodeState.NOT_READY),
        (broker(0), FULL, NodeState.READY),
        # ready, but out of one ISR among those it holds
        (broker(0), [*FULL, partition([2, 0], [2], name=("u", 5))], NodeState.LAGGING),
        # out of the ISR of a partition it holds no replica of: that is no lag
        (broker(0), [partition([1, 2], [1, 2])], NodeState.READY),
        # not ready wins over lagging: the pod tells first
        (broker(0, "not ready"), [partition([0, 1], [1])], NodeState.NOT_READY),
    ],
)
def test_each_broker_is_classified(observed, partitions, expected):
    assert classify(observed, partitions) == expected


def test_the_partitions_to_elect_are_those_the_broker_prefers_leads_not_and_is_in_sync_for():
    partitions = [
        partition([1, 0], [0, 1], leader=0, name=("t", 3)),  # to elect
        partition([1, 0], [0, 1], leader=1, name=("t", 4)),  # leads it already
        partition([0, 1], [0, 1], leader=0, name=("t", 5)),  # not its preferred
        partition([1, 0], [0], leader=0, name=("t", 6)),  # out of its ISR
        partition([1, 2], [2, 1], leader=2, name=("a", 1)),  # to elect
    ]
    assert preferred_to_elect(1, partitions) == (("a", 1), ("t", 3))


@pytest.mark.parametrize(
    ("brokers", "partitions", "expected"),
    [
        # nothing stale: nothing to do, whatever the brokers' states
        ([current(0), current(1, "not ready")], FULL, DONE),
        # a broker the roll did not restart is not elected for
        ([current(0), current(1)], [partition([1, 0], [0, 1], leader=0)], DONE),
        # a restarted broker back and leading what it prefers: done
        ([restarted(0, "ready", since=60), current(1), current(2)], FULL, DONE),
        # the lowest id first, the controller last
        (
            [broker(0, controller=True), broker(1), broker(2)],
            FULL,
            RollDecision(RESTART, 1, "broker 1 runs an old revision"),
        ),
        (
            [current(0), current(1), broker(2, controller=True)],
            FULL,
            RollDecision(RESTART, 2, "broker 2 runs an old revision"),
        ),
        # an unready stale broker serves nothing: restarted first, whatever else
        (
            [broker(0), broker(1), broker(2, "not running")],
            [partition([0, 1, 2], [0, 1])],
            RollDecision(RESTART, 2, "broker 2 is stale and not running"),
        ),
        (
            [broker(0), broker(1, "not ready"), broker(2)],
            FULL,
            RollDecision(RESTART, 1, "broker 1 is stale and not ready"),
        ),
        # ... the controller last among them too
        (
            [broker(0, "not ready", controller=True), broker(1, "not running")],
            FULL,
            RollDecision(RESTART, 1, "broker 1 is stale and not running"),
        ),
        # ... even while a restarted broker is still coming back
        (
            [restarted(0, "not ready", since=10), broker(1), broker(2, "not running")],
            FULL,
            RollDecision(RESTART, 2, "broker 2 is stale and not running"),
        ),
        # never a broker recovering its logs: waited for, however stale; an unready
        # stale one after it goes first
        (
            [broker(0, "recovering"), broker(1), broker(2)],
            FULL,
            RollDecision(WAIT, 0, "waiting for broker 0: it is recovering its logs"),
        ),
        (
            [broker(0, "recovering"), broker(1, "not running"), broker(2)],
            FULL,
            RollDecision(RESTART, 1, "broker 1 is stale and not running"),
        ),
        # a pod being deleted (its controlled shutdown under way) is restarting already:
        # not deleted again though stale and unready, and no other broker meanwhile
        (
            [broker(0, "not ready", going=True), broker(1), broker(2)],
            FULL,
            RollDecision(WAIT, 0, "waiting for broker 0's pod to go"),
        ),
        (
            [current(0), broker(1, going=True), broker(2, "not running")],
            FULL,
            RollDecision(WAIT, 1, "waiting for broker 1's pod to go"),
        ),
        # a broker not ready, lagging, or without a pod: waited for before the next restart
        (
            [current(0, "not ready"), broker(1), broker(2)],
            FULL,
            RollDecision(WAIT, 0, "waiting for broker 0: it is not ready"),
        ),
        (
            [current(0), broker(1), broker(2)],
            [partition([0, 1, 2], [1, 2], name=("orders", 3))],
            RollDecision(
                WAIT,
                0,
                "waiting for broker 0: it is out of the ISR of 1 partitions (e.g. orders-3)",
            ),
        ),
        (
            [current(0, "no pod"), broker(1), broker(2)],
            FULL,
            RollDecision(WAIT, 0, "waiting for broker 0: it has no pod yet"),
        ),
        # never below min.insync.replicas: broker 1 is one of the two in sync
        (
            [current(0), broker(1), broker(2)],
            [partition([1, 2, 3], [1, 2], min_isr=2, name=("t", 7))],
            RollDecision(WAIT, 1, "restarting broker 1 would leave t-7 below min.insync.replicas"),
        ),
        # ... an unready broker still in an ISR neither
        (
            [broker(0), broker(1, "not ready"), broker(2)],
            [partition([1, 2, 3], [1, 2], min_isr=2, name=("t", 7))],
            RollDecision(WAIT, 1, "restarting broker 1 would leave t-7 below min.insync.replicas"),
        ),
        # min.insync.replicas 1 allows it
        (
            [current(0), broker(1), broker(2)],
            [partition([1, 2], [1, 2], min_isr=1)],
            RollDecision(RESTART, 1, "broker 1 runs an old revision"),
        ),
        # after a restart: waited for while it comes back, recovering however long
        (
            [restarted(0, "not running", since=299), broker(1), broker(2)],
            FULL,
            RollDecision(
                WAIT,
                0,
                "waiting for broker 0 to be ready and in every ISR: its container is "
                "not running",
            ),
        ),
        (
            [restarted(0, "recovering", since=86400, attempts=3), broker(1), broker(2)],
            FULL,
            RollDecision(WAIT, 0, "waiting for broker 0: it is recovering its logs"),
        ),
        # ... restarted again once not ready within the timeout
        (
            [restarted(0, "not ready", since=300), broker(1), broker(2)],
            FULL,
            RollDecision(
                RESTART,
                0,
                "broker 0 is not ready 300 s after its restart (it is not ready): "
                "restarting it again",
            ),
        ),
        # ... but one catching up (ready, out of an ISR) is waited for, however long:
        # a restart would only make it start catching up again
        (
            [restarted(0, "ready", since=86400, attempts=2), broker(1), broker(2)],
            [partition([0, 1, 2], [1, 2], min_isr=1, leader=1, name=("t", 8))],
            RollDecision(
                WAIT,
                0,
                "waiting for broker 0: it is out of the ISR of 1 partitions (e.g. t-8)",
            ),
        ),
        # ... unless its pod is yet to be made
        (
            [restarted(0, "no pod", since=400), broker(1), broker(2)],
            FULL,
            RollDecision(WAIT, 0, "waiting for broker 0's pod to be made"),
        ),
        # ... and given up on once restarted max_attempts (3) times
        (
            [restarted(0, "not running", since=300, attempts=3), broker(1), broker(2)],
            FULL,
            RollDecision(
                GIVE_UP,
                0,
                "giving up on broker 0: this roll restarted it 3 times, and its container is "
                "not running",
            ),
        ),
        (
            [broker(0, "not ready", restarted=True, attempts=3, since_restart_s=5), broker(1)],
            FULL,
            RollDecision(
                GIVE_UP,
                0,
                "giving up on broker 0: this roll restarted it 3 times, and it is not " "ready",
            ),
        ),
        # back: a preferred-leader election for it, before the next restart
        (
            [restarted(0, "ready", since=120), broker(1), broker(2, controller=True)],
            [
                partition([0, 1, 2], [0, 1, 2], leader=1, name=("t", 0)),
                partition([0, 2], [2, 0], leader=2, name=("orders", 2)),
                partition([1, 0], [0, 1], leader=1, name=("t", 1)),
            ],
            RollDecision(
                ELECT,
                0,
                "broker 0 is back: electing it leader of the 2 partitions it is the preferred "
                "leader of",
                (("orders", 2), ("t", 0)),
            ),
        ),
        # ... after the last one too
        (
            [current(0), current(1), restarted(2, "ready", since=30, controller=True)],
            [partition([2, 0, 1], [0, 1, 2], leader=0, name=("t", 2))],
            RollDecision(
                ELECT,
                2,
                "broker 2 is back: electing it leader of the 1 partitions it is the preferred "
                "leader of",
                (("t", 2),),
            ),
        ),
    ],
)
def test_the_roller_decides(brokers, partitions, expected):
    assert decide_roll(brokers, partitions) == expected


def test_a_pod_the_statefulset_has_yet_to_make_is_waited_for():
    decision = decide_roll([current(0), broker(2)], FULL, missing=frozenset({1}))
    assert decision == RollDecision(WAIT, 1, "waiting for broker 1's pod to be made")


def test_the_limits_are_the_callers():
    brokers = [restarted(0, "not ready", since=61, attempts=1), broker(1)]
    limits = RollLimits(max_attempts=1, ready_timeout_s=60)
    assert decide_roll(brokers, FULL, limits=limits).action == GIVE_UP
    assert decide_roll(brokers, FULL).action == WAIT  # 3 attempts, 300 s by default


@pytest.mark.parametrize(
    ("brokers", "partitions", "missing", "expected"),
    [
        # a volume added: lowest id first, the controller included
        (
            [lacking(0, controller=True), lacking(1), lacking(2)],
            FULL,
            frozenset(),
            RollDecision(RESTART, 0, "broker 0 runs an old revision"),
        ),
        # ... and not before the last restarted is back in sync
        (
            [current(0), lacking(1), lacking(2)],
            [partition([0, 1, 2], [1, 2], name=("t", 4))],
            frozenset(),
            RollDecision(
                WAIT, 0, "waiting for broker 0: it is out of the ISR of 1 partitions (e.g. t-4)"
            ),
        ),
        # an unready stale broker after the lowest lacking one waits its turn (its pod,
        # once deleted, would not come back)
        (
            [lacking(0), lacking(1), lacking(2, "not running")],
            FULL,
            frozenset(),
            RollDecision(RESTART, 0, "broker 0 runs an old revision"),
        ),
        # a pod gone past the lowest lacking one comes back only after it: restart it now,
        # even below min.insync.replicas
        (
            [lacking(0, controller=True), lacking(2)],
            [partition([0, 1, 2], [0, 2])],
            frozenset({1}),
            RollDecision(
                RESTART, 0, "broker 0 lacks a new volume, and no pod after it is made before"
            ),
        ),
        # ... an observed broker without a pod counts as missing
        (
            [lacking(0), broker(1, "no pod"), lacking(2)],
            [partition([0, 1, 2], [0, 2])],
            frozenset(),
            RollDecision(
                RESTART, 0, "broker 0 lacks a new volume, and no pod after it is made before"
            ),
        ),
        # ... but not while it recovers its logs
        (
            [lacking(0, "recovering"), lacking(2)],
            FULL,
            frozenset({1}),
            RollDecision(
                WAIT,
                0,
                "broker 0 lacks a new volume but is recovering its logs: waiting for it before "
                "restarting it",
            ),
        ),
    ],
)
def test_a_volume_added_restarts_the_brokers_lowest_id_first(
    brokers, partitions, missing, expected
):
    assert decide_roll(brokers, partitions, missing) == expected


# A restarted broker goes through these, one per pass of the simulations below.
COMING_BACK = ("going", "not running", "recovering", "not ready", "lagging", "ready")


class Simulation:
    """Three brokers (0 the controller), partition ``t-i`` preferring broker ``i``, with
    replication factor 3 and min.insync.replicas 2. A restarted broker's pod goes
    through ``phases`` (stopping at the last), one per pass of ``pass_s`` seconds; its
    partitions' leadership moves to the next replica in sync while it is out."""

    def __init__(self, phases=COMING_BACK, pass_s: float = 30):
        self.phases, self.pass_s = phases, pass_s
        self.stale = {0, 1, 2}
        self.phase: dict[int, int] = {}  # index into phases, for brokers restarted
        self.attempts: dict[int, int] = {}
        self.since: dict[int, float] = {}
        self.leaders = {i: i for i in range(3)}
        self.log: list[tuple[RollAction, int | None]] = []

    def _pod(self, id_: int) -> str:
        return self.phases[self.phase[id_]] if id_ in self.phase else "ready"

    def partitions(self) -> list[PartitionState]:
        result = []
        for i in range(3):
            replicas = (i, (i + 1) % 3, (i + 2) % 3)
            isr = tuple(r for r in replicas if self._pod(r) == "ready")
            if self.leaders[i] not in isr:
                self.leaders[i] = isr[0]
            result.append(PartitionState("t", i, replicas, isr, self.leaders[i], 2))
        return result

    def observe(self) -> list[BrokerObservation]:
        brokers = []
        for i in range(3):
            pod = self._pod(i)
            brokers.append(
                BrokerObservation(
                    i,
                    i in self.stale,
                    *POD["ready" if pod in ("going", "lagging") else pod],
                    going=pod == "going",
                    controller=i == 0,
                    restarted=i in self.attempts,
                    attempts=self.attempts.get(i, 0),
                    since_restart_s=self.since.get(i),
                )
            )
        return brokers

    def run(self, passes: int = 100) -> RollDecision:
        for _ in range(passes):
            partitions = self.partitions()
            decision = decide_roll(self.observe(), partitions)
            self.log.append((decision.action, decision.broker))
            if decision.action in (NOTHING, GIVE_UP):
                return decision
            for i in self.phase:
                self.phase[i] = min(self.phase[i] + 1, len(self.phases) - 1)
                self.since[i] += self.pass_s
            if decision.action == RESTART:
                assert all(
                    len(p.isr) - 1 >= p.min_isr for p in partitions if decision.broker in p.isr
                ), (decision, partitions)
                self.stale.discard(decision.broker)
                self.phase[decision.broker] = 0
                self.attempts[decision.broker] = self.attempts.get(decision.broker, 0) + 1
                self.since[decision.broker] = 0
            elif decision.action == ELECT:
                for _, index in decision.partitions:
                    self.leaders[index] = decision.broker
        raise AssertionError(f"the roll did not end: {self.log}")


def test_a_whole_roll_restarts_each_broker_once_elects_it_back_and_the_controller_last():
    simulation = Simulation()
    assert simulation.run().action == NOTHING
    acted = [entry for entry in simulation.log if entry[0] in (RESTART, ELECT)]
    assert acted == [(RESTART, 1), (ELECT, 1), (RESTART, 2), (ELECT, 2), (RESTART, 0), (ELECT, 0)]
    assert simulation.leaders == {0: 0, 1: 1, 2: 2}
    # each restart waited for through every state of the broker's return
    after_first = simulation.log[simulation.log.index((RESTART, 1)) + 1 :]
    assert after_first[: len(COMING_BACK) - 1] == [(WAIT, 1)] * (len(COMING_BACK) - 1)


def test_a_broker_that_does_not_come_back_is_restarted_max_attempts_times_then_given_up_on():
    simulation = Simulation(phases=("going", "not running"), pass_s=100)
    decision = simulation.run()
    assert decision == RollDecision(
        GIVE_UP,
        1,
        "giving up on broker 1: this roll restarted it 3 times, and its container is not running",
    )
    assert [entry for entry in simulation.log if entry[0] == RESTART] == [(RESTART, 1)] * 3
