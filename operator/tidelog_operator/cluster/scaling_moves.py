"""What the scaler observes and does (``scaling.decide_scale`` decides): reassignments
through the planner with the throttle that ``kafka-reassign-partitions.sh --throttle``
sets, preferred-leader elections, their progress and outcome on the Cluster's status,
and the StatefulSet's shrink (seed 003: 分区重分配, 修改主题限速, C Preferred领导者选举).

The status keys it owns:

* ``spreadBrokers``: how many brokers (ids ``0 ..``) the data was last spread over;
* ``rebalance``: the last movement of replicas: ``operation`` (``AddBrokers``,
  ``RemoveBrokers``, ``Rebalance``, ``DrainFailedDirs``), ``brokers``, ``state``
  (``Running``, ``Done``, ``Refused``), ``partitions`` and ``partitionsDone``,
  ``replicas`` (replicas created), ``bytes`` and ``bytesDone`` (their bytes),
  ``imbalanceBefore`` and ``imbalanceAfter`` (replica spread over the brokers, the
  latter as planned), ``throttleBytesPerSecond`` (0: none), ``startedAt``,
  ``finishedAt``, ``message``;
* ``leaderElection``: the last preferred-leader election: ``trigger`` (``Schedule``,
  ``Request``), ``at``, ``leadersMoved``, ``imbalanceBefore``, ``imbalanceAfter``
  (leader spread over the brokers).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.groups import TopicPartition
from tidelog.admin.moves import BROKER_THROTTLE_RATES, FOLLOWER_REPLICAS, LEADER_REPLICAS
from tidelog.admin.planner import (
    ClusterState,
    Plan,
    plan_add_brokers,
    plan_rebalance_replicas,
    plan_remove_brokers,
    plan_replace_replicas,
)
from tidelog.admin.topics import ElectionType
from tidelog.cli.reassignment_file import throttled_replicas
from tidelog.protocol.errors import ProtocolError
from tidelog_operator import kube, names
from tidelog_operator.cluster.balance import election_due, replicas_of, spread
from tidelog_operator.cluster.scaling import ScaleDecision, ScaleObservation, decide_scale
from tidelog_operator.spec import ClusterSpec

__all__ = ["LEADERS", "MOVE", "SPREAD", "ScaleStep", "scale_once", "statefulset_replicas"]

logger = logging.getLogger(__name__)

SPREAD = "spreadBrokers"
MOVE = "rebalance"
LEADERS = "leaderElection"
_OPERATIONS = {
    "add-brokers": "AddBrokers",
    "remove-brokers": "RemoveBrokers",
    "rebalance-replicas": "Rebalance",
    "replace-lost-replicas": "DrainFailedDirs",
}


def _plan(
    action: str,
    state: ClusterState,
    brokers: tuple[int, ...],
    lost: Mapping[TopicPartition, frozenset[int]],
) -> Plan:
    if action == "add-brokers":
        return plan_add_brokers(state, brokers)
    if action == "remove-brokers":
        return plan_remove_brokers(state, brokers)
    if action == "replace-lost-replicas":
        return plan_replace_replicas(state, lost)
    return plan_rebalance_replicas(state)


def _failed_dirs(admin: AdminClient) -> tuple[str, ...]:
    """``broker B: DIR`` of each offline log dir of a live broker (DescribeLogDirs)."""
    return tuple(
        f"broker {broker}: {d.path}"
        for broker, dirs in sorted(admin.describe_log_dirs(topics=[]).items())
        for d in dirs
        if d.error is not None
    )


def _lost_replicas(
    admin: AdminClient, live: Mapping[int, Any]
) -> dict[TopicPartition, frozenset[int]]:
    """Partition → live brokers whose replica of it is on a failed log dir (Metadata's
    offline replicas; those of brokers that are down are not lost to a dir)."""
    return {
        TopicPartition(name, p.partition): frozenset(b for b in p.offline_replicas if b in live)
        for name, topic in admin.describe_topics().items()
        for p in topic.partitions
        if any(b in live for b in p.offline_replicas)
    }


@dataclass(frozen=True)
class ScaleStep:
    """The decision taken, the status keys it sets (None: removes the key), and whether
    it carried out the annotation's request (which then goes)."""

    decision: ScaleDecision
    status: dict[str, Any] = field(default_factory=dict)
    handled: bool = False


def statefulset_replicas(api: client.ApiClient, spec: ClusterSpec) -> int | None:
    """The brokers' StatefulSet's replicas; None while it does not exist."""
    statefulset = kube.found(
        client.AppsV1Api(api).read_namespaced_stateful_set,
        names.brokers_statefulset(spec.name),
        spec.namespace,
    )
    return None if statefulset is None else statefulset.spec.replicas


def scale_once(
    admin: AdminClient,
    spec: ClusterSpec,
    status: Mapping[str, Any],
    *,
    running: int | None,
    requested: str | None,
    now: datetime.datetime,
    shrink: Callable[[int], None],
) -> ScaleStep:
    """Observe, decide, act. ``running`` is the StatefulSet's replicas (None: not there
    yet), ``requested`` the balancing the annotation asks for, ``shrink(n)`` applies the
    StatefulSet with ``n`` brokers; the brokers are asked only when something is to move,
    has moved or is due."""
    if running is None:
        return ScaleStep(ScaleDecision("wait", reason="the brokers' StatefulSet is not there"))
    spread_over = status.get(SPREAD, running)
    move = dict(status.get(MOVE) or {})
    ours = move.get("state") == "Running"
    desired = spec.brokers.replicas
    last_election = (status.get(LEADERS) or {}).get("at")
    due = election_due(last_election, spec.rebalance.leader_interval_seconds, now)
    drain = spec.drain_failed_dirs
    if desired == running == spread_over and not (ours or requested or due or drain):
        withdrawn = {MOVE: None} if move.get("state") == "Refused" else {}
        return ScaleStep(ScaleDecision("done"), {SPREAD: running} | withdrawn)
    reassigning = admin.list_reassignments()
    state = admin.cluster_state()
    # The log dirs and the metadata are asked one after the other: a partition created
    # or deleted meanwhile is left for the next pass.
    lost = {
        tp: gone
        for tp, gone in (_lost_replicas(admin, state.brokers) if drain else {}).items()
        if tp in state.assignment
    }
    # a replacement needs a live broker that holds no replica of the partition yet
    stranded = {
        tp: gone
        for tp, gone in lost.items()
        if len(state.brokers) - len(state.assignment[tp]) < len(gone)
    }
    decision = decide_scale(
        ScaleObservation(
            desired=desired,
            running=running,
            spread=spread_over,
            live=frozenset(state.brokers),
            assignment=state.assignment,
            reassigning=len(reassigning),
            ours_in_progress=ours,
            requested=requested,
            election_due=due,
            lost={tp: gone for tp, gone in lost.items() if tp not in stranded},
            stranded=stranded,
            failed_dirs=_failed_dirs(admin),
        )
    )
    action, stamp = decision.action, _stamp(now)
    if action == "wait" and ours:
        left = sum(state.sizes.get(tp, 0) * len(r.adding) for tp, r in reassigning.items())
        move["partitionsDone"] = max(0, move["partitions"] - len(reassigning))
        move["bytesDone"] = max(0, move["bytes"] - left)
        return ScaleStep(decision, {MOVE: move})
    if action == "finish":
        admin.clear_throttles(state.brokers, sorted({t for t, _ in state.assignment}))
        admin.elect_leaders(ElectionType.PREFERRED)
        move.update(
            state="Done",
            partitionsDone=move["partitions"],
            bytesDone=move["bytes"],
            finishedAt=stamp,
        )
        updates: dict[str, Any] = {MOVE: move}
        added = set(move.get("brokers", []))
        if move.get("operation") == "AddBrokers" and any(
            added.intersection(replicas) for replicas in state.assignment.values()
        ):  # not when the move never started: the next pass spreads again
            updates[SPREAD] = running
        return ScaleStep(decision, updates)
    if action in ("refuse", "refuse-drain"):
        refused = {
            "operation": "RemoveBrokers" if action == "refuse" else "DrainFailedDirs",
            "brokers": list(decision.brokers),
            "state": "Refused",
            "message": decision.reason,
        }
        return ScaleStep(decision, {MOVE: refused})
    if action in _OPERATIONS:
        return _move(admin, spec, state, decision, running, stamp, lost)
    if action == "elect-leaders":
        trigger = "Request" if requested == "leaders" else "Schedule"
        election = _elect(admin, state, trigger, stamp)
        return ScaleStep(decision, {LEADERS: election}, handled=trigger == "Request")
    if action == "shrink":
        shrink(desired)
        return ScaleStep(decision, {SPREAD: desired})
    if action == "done":
        withdrawn = {MOVE: None} if move.get("state") == "Refused" else {}
        return ScaleStep(decision, {SPREAD: running} | withdrawn)
    return ScaleStep(decision)


def _stamp(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")


def _move(
    admin: AdminClient,
    spec: ClusterSpec,
    state: ClusterState,
    decision: ScaleDecision,
    running: int,
    stamp: str,
    lost: Mapping[TopicPartition, frozenset[int]],
) -> ScaleStep:
    """Plan and start a movement of replicas; a plan without moves is done at once."""
    action = decision.action
    plan = _plan(action, state, decision.brokers, lost)
    handled = action == "rebalance-replicas"
    throttle = spec.rebalance.throttle_bytes_per_second
    record = _record(action, decision, plan, state, throttle, stamp)
    if not plan.moves:  # already balanced: nothing to copy
        record.update(state="Done", finishedAt=stamp)
        updates: dict[str, Any] = {SPREAD: running}
        if handled:
            updates[MOVE] = record
        return ScaleStep(ScaleDecision("done"), updates, handled=handled)
    try:
        _start(admin, plan, state.brokers, throttle)
    except (AdminError, OSError, ProtocolError) as error:
        # The throttles, the reassignment or both may be in place with the answer lost.
        # Recorded as ours all the same: the next passes wait for what runs, then finish
        # (the throttles go either way); a move that never started is planned again.
        logger.warning("%s %s: the start is unconfirmed: %s", action, decision.brokers, error)
        return ScaleStep(decision, {MOVE: record})
    return ScaleStep(decision, {MOVE: record}, handled=handled)


def _elect(admin: AdminClient, state: ClusterState, trigger: str, stamp: str) -> dict:
    """A preferred-leader election of every partition, and what it changed."""
    leaders = {
        TopicPartition(name, p.partition): p.leader
        for name, topic in admin.describe_topics().items()
        for p in topic.partitions
    }
    results = admin.elect_leaders(ElectionType.PREFERRED)
    elected = [tp for tp, error in results.items() if error is None and tp in state.assignment]
    after = leaders | {tp: state.assignment[tp][0] for tp in elected}
    return {
        "trigger": trigger,
        "at": stamp,
        "leadersMoved": len(elected),
        "imbalanceBefore": spread(leaders.values(), state.brokers),
        "imbalanceAfter": spread(after.values(), state.brokers),
    }


def _start(admin: AdminClient, plan: Plan, brokers: Mapping[int, Any], throttle: int) -> None:
    """Throttle the moving replicas (when ``throttle``), then start the reassignment."""
    if throttle:
        admin.set_throttles(
            {b: dict.fromkeys(BROKER_THROTTLE_RATES, throttle) for b in brokers},
            {
                topic: {LEADER_REPLICAS: leader, FOLLOWER_REPLICAS: follower}
                for topic, (leader, follower) in throttled_replicas(
                    plan.current, plan.moves
                ).items()
            },
        )
    failed = [e for e in admin.alter_partition_reassignments(plan.moves).values() if e]
    if failed:
        raise failed[0]


def _record(
    action: str,
    decision: ScaleDecision,
    plan: Plan,
    state: ClusterState,
    throttle: int,
    stamp: str,
) -> dict:
    """The status of a movement as it starts."""
    logger.info(
        "%s %s: %d partitions, %d bytes",
        action,
        decision.brokers,
        len(plan.moves),
        plan.bytes_moved,
    )
    staying = [b for b in state.brokers if action != "remove-brokers" or b not in decision.brokers]
    return {
        "operation": _OPERATIONS[action],
        "brokers": list(decision.brokers),
        "state": "Running",
        "partitions": len(plan.moves),
        "partitionsDone": 0,
        "replicas": plan.replicas_moved,
        "bytes": plan.bytes_moved,
        "bytesDone": 0,
        "imbalanceBefore": spread(replicas_of(plan.current), state.brokers),
        "imbalanceAfter": spread(replicas_of(plan.target), staying),
        "throttleBytesPerSecond": throttle,
        "startedAt": stamp,
        "message": decision.reason,
    }
