"""Rolling restarts of a Cluster's brokers (their StatefulSet updates ``OnDelete``): the
roller as Strimzi's "Kafka Roller 2.0" proposal shapes it, observations in, one action
out, pure.

A broker is *stale* when its pod runs an older revision of the pod template than the
StatefulSet's (a change of config, image or resources). Each pass:

1. nothing stale: done;
2. a broker whose pod is going (deleted, its controlled shutdown under way, a
   restart of the roller's own or anyone's) is waited for: deleting it again would
   restart nothing, and another restart would take two brokers down at once;
3. a broker that is not ready, or not back in the ISR of every partition it holds (one
   restarted before, catching up), is waited for, unless it is stale itself and not
   ready: an unready stale broker serves nothing, so it is restarted first;
4. otherwise the next stale broker (by id, the controller last) is restarted, once no
   partition it is in sync for would fall below its ``min.insync.replicas`` without it;
   until then the roll waits, naming the partition.

A volume added to the StatefulSet changes the order: its controller goes through the
pods by ordinal and stops at the first that lacks the new volume (it tries to add the
volume to the running pod, which Kubernetes forbids), so it makes no pod after that one.
The brokers then restart lowest id first, the controller included; and one whose pod is
gone past that broker makes its restart due at once (that pod cannot come back before).

One broker at a time: the caller deletes the pod of a ``restart`` and looks again on its
next pass.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["BrokerState", "PartitionState", "RollDecision", "decide_roll"]


@dataclass(frozen=True)
class BrokerState:
    id: int
    stale: bool
    ready: bool
    controller: bool = False
    # its pod lacks a volume of the StatefulSet's claim templates (one was added)
    lacks_volumes: bool = False
    going: bool = False  # its pod is being deleted


@dataclass(frozen=True)
class PartitionState:
    name: str  # topic-partition
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    min_isr: int


@dataclass(frozen=True)
class RollDecision:
    action: str  # "done", "wait" or "restart"
    broker: int | None = None
    reason: str = ""


def _out_of_sync(broker: int, partitions: Sequence[PartitionState]) -> list[str]:
    return [p.name for p in partitions if broker in p.replicas and broker not in p.isr]


def _would_break(broker: int, partitions: Sequence[PartitionState]) -> str | None:
    for p in partitions:
        if broker in p.isr and len(p.isr) - 1 < p.min_isr:
            return p.name
    return None


def decide_roll(
    brokers: Sequence[BrokerState],
    partitions: Sequence[PartitionState],
    missing: frozenset[int] = frozenset(),
) -> RollDecision:
    """``missing``: the brokers whose pods the StatefulSet has yet to make."""
    stale = [b for b in brokers if b.stale]
    if not stale:
        return RollDecision("done")
    going = min((b.id for b in brokers if b.going), default=None)
    if going is not None:
        return RollDecision("wait", going, f"waiting for broker {going}'s pod to go")
    lacking = min((b for b in stale if b.lacks_volumes), key=lambda b: b.id, default=None)
    if lacking is not None:
        if any(m > lacking.id for m in missing):
            reason = f"broker {lacking.id} lacks a new volume, and no pod after it is made before"
            return RollDecision("restart", lacking.id, reason)
        stale = [lacking]
    unready_stale = [b for b in stale if not b.ready]
    if unready_stale:
        broker = min(unready_stale, key=lambda b: b.id)
        return RollDecision("restart", broker.id, f"broker {broker.id} is stale and not ready")
    for broker in sorted(brokers, key=lambda b: b.id):
        if broker.stale and not broker.ready:  # restarted in its turn, not waited for
            continue
        if not broker.ready:
            return RollDecision("wait", broker.id, f"waiting for broker {broker.id} to be ready")
        lagging = _out_of_sync(broker.id, partitions)
        if lagging:
            return RollDecision(
                "wait",
                broker.id,
                f"waiting for broker {broker.id} to be back in the ISR of {len(lagging)} "
                f"partitions (e.g. {lagging[0]})",
            )
    for broker in sorted(stale, key=lambda b: (b.controller, b.id)):
        blocked = _would_break(broker.id, partitions)
        if blocked is None:
            return RollDecision("restart", broker.id, f"broker {broker.id} runs an old revision")
        return RollDecision(
            "wait",
            broker.id,
            f"restarting broker {broker.id} would leave {blocked} below min.insync.replicas",
        )
    raise AssertionError("unreachable: stale brokers exist")
