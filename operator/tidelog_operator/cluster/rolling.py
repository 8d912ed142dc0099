"""Rolling restarts of a Cluster's brokers (their StatefulSet updates ``OnDelete``), in
the shape of the "Kafka Roller 2.0" proposal of Strimzi (strimzi/proposals): a finite
state machine, observations in, each broker classified into a :class:`NodeState`, one
:class:`RollAction` out by the table below; pure, no I/O, importable on its own.

A broker is *stale* when its pod runs an older revision of the pod template than the
StatefulSet's (a change of config, image or resources).

Node states (:func:`classify`), from the pod and the partitions:

=============  ===========================================================================
NOT_RUNNING    no pod, or the pod is not Running, or its container is not running
RECOVERING     the container runs but has not *started*: its startupProbe has not yet
               succeeded, the broker is loading and recovering its logs
NOT_READY      started, but not ready (it has no metadata from the controller yet)
LAGGING        ready, but out of the ISR of a partition it holds a replica of
READY          ready, and in the ISR of every partition it holds a replica of
=============  ===========================================================================

The table, read top to bottom; the first row that matches decides. "Restarted" means
restarted by this roll (the caller remembers which, and how often: ``attempts``,
``since_restart_s``); among several brokers a row takes the lowest id, or where it says
so the controller last.

====  ==========================================  =======================  ===============
row   brokers                                     their NodeState          action
====  ==========================================  =======================  ===============
1     none stale; every restarted one READY and   any                      NOTHING
      none with a partition to elect
2     one whose pod is going (being deleted)      any                      WAIT
3     the lowest stale one lacking a volume,      RECOVERING               WAIT
      while a pod past it is missing              any other                RESTART (below
                                                                           min ISR too)
4     stale, not ready (controller last; only     NOT_RUNNING, NOT_READY   RESTART
      the lowest lacking a volume, if any lacks)
5     restarted, not READY                        RECOVERING, LAGGING      WAIT
                                                  other, within timeout    WAIT
                                                  other, timed out         RESTART again
6     restarted, not leading some partitions it   READY                    ELECT_PREFERRED
      is the preferred leader of (and in the ISR
      of)
7     any (but an unready stale one behind a      not READY, or no pod     WAIT
      lacking one: row 8 reaches it in turn)
8     the next stale one (controller last; only   READY                    RESTART
      the lowest lacking a volume, if any lacks)
====  ==========================================  =======================  ===============

Every RESTART is checked, and becomes:

* WAIT when the broker is in the ISR of a partition that would fall below its
  ``min.insync.replicas`` without it (the reason names the partition); except row 3,
  whose missing pod cannot come back before this one is made again;
* GIVE_UP when the broker is not READY and this roll has restarted it
  ``RollLimits.max_attempts`` times already (row 5 gets there once the last restart
  timed out): the reason names the broker and its state, the caller stops rolling;
* WAIT when the broker has no pod to delete (the StatefulSet has yet to make it).

Why these rows:

* a pod going (deleted, its controlled shutdown under way; the roller's own restart or
  anyone's) is restarting already: deleting it again restarts nothing, and another
  restart meanwhile would take two brokers down at once;
* an unready stale broker serves nothing, so it is restarted first, without waiting for
  the others; one recovering its logs is never restarted (its recovery would start over):
  it is waited for, however long;
* after each restart the broker is waited for until READY, back in every ISR, then a
  preferred-leader election gives it back the partitions whose first replica it is, then
  the roll goes on; a restarted broker not READY within ``ready_timeout_s`` is restarted
  again, up to ``max_attempts`` restarts, then the roll gives up;
* the controller goes last, so that the roll moves the controller role once.

A volume added to the StatefulSet changes the order: its controller goes through the
pods by ordinal and stops at the first that lacks the new volume (it tries to add the
volume to the running pod, which Kubernetes forbids), so it makes no pod after that one.
The brokers then restart lowest id first, the controller included; and one whose pod is
gone past that broker makes its restart due at once (row 3: that pod cannot come back
before).

One broker at a time: the caller acts on the decision (deletes the pod of a RESTART,
runs the election of an ELECT_PREFERRED) and looks again on its next pass.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from enum import StrEnum

__all__ = [
    "DEFAULT_LIMITS",
    "BrokerObservation",
    "NodeState",
    "PartitionState",
    "RollAction",
    "RollDecision",
    "RollLimits",
    "classify",
    "decide_roll",
    "preferred_to_elect",
]


class NodeState(StrEnum):
    NOT_RUNNING = "not running"
    RECOVERING = "recovering"
    NOT_READY = "not ready"
    LAGGING = "lagging"
    READY = "ready"


class RollAction(StrEnum):
    NOTHING = "nothing"  # nothing stale, nothing to elect: the roll is done
    WAIT = "wait"  # observe again
    RESTART = "restart"  # delete the broker's pod
    ELECT_PREFERRED = "elect preferred"  # preferred-leader election of ``partitions``
    GIVE_UP = "give up"  # attempts exhausted: stop rolling until the spec changes


@dataclass(frozen=True)
class BrokerObservation:
    """One broker as its pod and the cluster show it.

    ``pod_exists``/``running``/``started``/``ready``: the pod, its phase Running with the
    broker container running, the container's ``started`` (its startupProbe succeeded),
    its Ready condition. ``going``: the pod is being deleted. ``lacks_volumes``: the pod
    lacks a volume of the StatefulSet's claim templates (one was added). ``controller``:
    the broker is the cluster's controller. ``restarted``: this roll restarted it,
    ``attempts`` times, the last ``since_restart_s`` seconds ago (None: never).
    """

    id: int
    stale: bool
    pod_exists: bool
    running: bool
    started: bool
    ready: bool
    going: bool = False
    lacks_volumes: bool = False
    controller: bool = False
    restarted: bool = False
    attempts: int = 0
    since_restart_s: float | None = None


@dataclass(frozen=True)
class PartitionState:
    """A partition as the metadata shows it; ``replicas[0]`` is its preferred leader."""

    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int
    min_isr: int

    @property
    def name(self) -> str:
        return f"{self.topic}-{self.partition}"


@dataclass(frozen=True)
class RollLimits:
    """A restarted broker not READY within ``ready_timeout_s`` is restarted again, up to
    ``max_attempts`` restarts in one roll; then the roll gives up."""

    max_attempts: int = 3
    ready_timeout_s: float = 300


DEFAULT_LIMITS = RollLimits()


@dataclass(frozen=True)
class RollDecision:
    """``reason`` is a sentence for the Cluster's status and events; ``partitions``
    (topic, partition) are those of an ELECT_PREFERRED."""

    action: RollAction
    broker: int | None = None
    reason: str = ""
    partitions: tuple[tuple[str, int], ...] = ()


# the states in which a stale broker is restarted without waiting for the others
UNREADY = frozenset({NodeState.NOT_RUNNING, NodeState.NOT_READY})


def _holds(broker: int, partitions: Iterable[PartitionState]) -> list[PartitionState]:
    return [p for p in partitions if broker in p.replicas]


def _out_of_sync(broker: int, partitions: Iterable[PartitionState]) -> list[str]:
    return [p.name for p in _holds(broker, partitions) if broker not in p.isr]


def classify(broker: BrokerObservation, partitions: Sequence[PartitionState]) -> NodeState:
    """The broker's :class:`NodeState` (see the module's docstring)."""
    if not (broker.pod_exists and broker.running):
        return NodeState.NOT_RUNNING
    if not broker.started:
        return NodeState.RECOVERING
    if not broker.ready:
        return NodeState.NOT_READY
    if _out_of_sync(broker.id, partitions):
        return NodeState.LAGGING
    return NodeState.READY


def preferred_to_elect(
    broker: int, partitions: Iterable[PartitionState]
) -> tuple[tuple[str, int], ...]:
    """The partitions whose preferred leader (first replica) is ``broker``, which it does
    not lead, and whose ISR it is in: those a preferred-leader election gives it back."""
    return tuple(
        sorted(
            (p.topic, p.partition)
            for p in partitions
            if p.replicas and p.replicas[0] == broker and p.leader != broker and broker in p.isr
        )
    )


def _would_break(broker: int, partitions: Iterable[PartitionState]) -> str | None:
    for p in partitions:
        if broker in p.isr and len(p.isr) - 1 < p.min_isr:
            return p.name
    return None


def _why_not_ready(
    broker: BrokerObservation, state: NodeState, partitions: Sequence[PartitionState]
) -> str:
    """How the broker falls short of READY, as the end of a sentence."""
    if not broker.pod_exists:
        return "it has no pod yet"
    if state is NodeState.NOT_RUNNING:
        return "its container is not running"
    if state is NodeState.RECOVERING:
        return "it is recovering its logs"
    if state is NodeState.NOT_READY:
        return "it is not ready"
    lagging = _out_of_sync(broker.id, partitions)
    return f"it is out of the ISR of {len(lagging)} partitions (e.g. {lagging[0]})"


def _restart(
    broker: BrokerObservation,
    state: NodeState,
    partitions: Sequence[PartitionState],
    limits: RollLimits,
    reason: str,
    *,
    keep_min_isr: bool = True,
) -> RollDecision:
    """A RESTART of ``broker``, unless one of the checks every restart passes stops it."""
    if state is not NodeState.READY and broker.attempts >= limits.max_attempts:
        return RollDecision(
            RollAction.GIVE_UP,
            broker.id,
            f"giving up on broker {broker.id}: this roll restarted it {broker.attempts} times, "
            f"and {_why_not_ready(broker, state, partitions)}",
        )
    if not broker.pod_exists:
        return RollDecision(
            RollAction.WAIT, broker.id, f"waiting for broker {broker.id}'s pod to be made"
        )
    blocked = _would_break(broker.id, partitions) if keep_min_isr else None
    if blocked is not None:
        return RollDecision(
            RollAction.WAIT,
            broker.id,
            f"restarting broker {broker.id} would leave {blocked} below min.insync.replicas",
        )
    return RollDecision(RollAction.RESTART, broker.id, reason)


def _order(brokers: Iterable[BrokerObservation]) -> list[BrokerObservation]:
    """Lowest id first, the controller last."""
    return sorted(brokers, key=lambda b: (b.controller, b.id))


def decide_roll(
    brokers: Sequence[BrokerObservation],
    partitions: Sequence[PartitionState],
    missing: frozenset[int] = frozenset(),
    limits: RollLimits = DEFAULT_LIMITS,
) -> RollDecision:
    """The roll's next action, by the module docstring's table.

    ``missing``: the brokers whose pods the StatefulSet has yet to make (an observed
    broker without a pod counts as missing too).
    """
    by_id = sorted(brokers, key=lambda b: b.id)
    state = {b.id: classify(b, partitions) for b in by_id}
    stale = [b for b in by_id if b.stale]
    restarted = [b for b in by_id if b.restarted]
    unready_restarted = [b for b in restarted if state[b.id] is not NodeState.READY]
    back = [b for b in restarted if state[b.id] is NodeState.READY]
    electing = [(b, chosen) for b in back if (chosen := preferred_to_elect(b.id, partitions))]
    # row 1
    if not stale and not unready_restarted and not electing:
        return RollDecision(RollAction.NOTHING, reason="every broker runs the current revision")
    # row 2
    going = next((b for b in by_id if b.going), None)
    if going is not None:
        return RollDecision(RollAction.WAIT, going.id, f"waiting for broker {going.id}'s pod to go")
    # row 3
    missing = missing | {b.id for b in by_id if not b.pod_exists}
    lacking = next((b for b in stale if b.lacks_volumes), None)
    if lacking is not None and any(m > lacking.id for m in missing):
        if state[lacking.id] is NodeState.RECOVERING:
            return RollDecision(
                RollAction.WAIT,
                lacking.id,
                f"broker {lacking.id} lacks a new volume but is recovering its logs: "
                "waiting for it before restarting it",
            )
        reason = f"broker {lacking.id} lacks a new volume, and no pod after it is made before"
        return _restart(lacking, state[lacking.id], partitions, limits, reason, keep_min_isr=False)
    candidates = [lacking] if lacking is not None else stale
    # row 4
    for broker in _order(candidates):
        if broker.pod_exists and state[broker.id] in UNREADY:
            reason = f"broker {broker.id} is stale and {state[broker.id]}"
            return _restart(broker, state[broker.id], partitions, limits, reason)
    # row 5
    for broker in unready_restarted:
        why = _why_not_ready(broker, state[broker.id], partitions)
        since = broker.since_restart_s
        if state[broker.id] in (NodeState.RECOVERING, NodeState.LAGGING) or since is None:
            return RollDecision(
                RollAction.WAIT, broker.id, f"waiting for broker {broker.id}: {why}"
            )
        if since < limits.ready_timeout_s:
            return RollDecision(
                RollAction.WAIT,
                broker.id,
                f"waiting for broker {broker.id} to be ready and in every ISR: {why}",
            )
        reason = (
            f"broker {broker.id} is not ready {limits.ready_timeout_s:g} s after its restart "
            f"({why}): restarting it again"
        )
        return _restart(broker, state[broker.id], partitions, limits, reason)
    # row 6
    if electing:
        broker, chosen = electing[0]
        return RollDecision(
            RollAction.ELECT_PREFERRED,
            broker.id,
            f"broker {broker.id} is back: electing it leader of the {len(chosen)} partitions "
            "it is the preferred leader of",
            chosen,
        )
    # row 7 (an unready stale broker still here waits its turn behind a lacking one:
    # restarted in it, not waited for)
    for broker in by_id:
        if broker.stale and broker.pod_exists and state[broker.id] in UNREADY:
            continue
        if state[broker.id] is not NodeState.READY:
            why = _why_not_ready(broker, state[broker.id], partitions)
            return RollDecision(
                RollAction.WAIT, broker.id, f"waiting for broker {broker.id}: {why}"
            )
    observed = {b.id for b in by_id}
    absent = min(missing - observed, default=None)
    if absent is not None:
        return RollDecision(
            RollAction.WAIT, absent, f"waiting for broker {absent}'s pod to be made"
        )
    # row 8
    broker = _order(candidates)[0]
    reason = f"broker {broker.id} runs an old revision"
    return _restart(broker, state[broker.id], partitions, limits, reason)
