"""What the scaler observes and does (``scaling.decide_scale`` decides): reassignments
through the planner with the throttle that ``kafka-reassign-partitions.sh --throttle``
sets, their progress and outcome on the Cluster's status, and the StatefulSet's shrink
(seed 003: 分区重分配, 修改主题限速, C Preferred领导者选举).

The status keys it owns:

* ``spreadBrokers``: how many brokers (ids ``0 ..``) the data was last spread over;
* ``rebalance``: the last movement: ``operation`` (``AddBrokers``, ``RemoveBrokers``),
  ``brokers``, ``state`` (``Running``, ``Done``, ``Refused``), ``partitions`` and
  ``partitionsDone``, ``bytes`` and ``bytesDone`` (bytes of the replicas created),
  ``throttleBytesPerSecond`` (0: none), ``startedAt``, ``finishedAt``, ``message``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog.admin import AdminClient
from tidelog.admin.moves import BROKER_THROTTLE_RATES, FOLLOWER_REPLICAS, LEADER_REPLICAS
from tidelog.admin.planner import Plan, plan_add_brokers, plan_remove_brokers
from tidelog.admin.topics import ElectionType
from tidelog.cli.reassignment_file import throttled_replicas
from tidelog_operator import names
from tidelog_operator.cluster.scaling import ScaleDecision, ScaleObservation, decide_scale
from tidelog_operator.spec import ClusterSpec

__all__ = ["MOVE", "SPREAD", "ScaleStep", "scale_once", "statefulset_replicas"]

logger = logging.getLogger(__name__)

SPREAD = "spreadBrokers"
MOVE = "rebalance"
_OPERATIONS = {"add-brokers": "AddBrokers", "remove-brokers": "RemoveBrokers"}
_PLANNERS = {"add-brokers": plan_add_brokers, "remove-brokers": plan_remove_brokers}


@dataclass(frozen=True)
class ScaleStep:
    """The decision taken and the status keys it sets (None: removes the key)."""

    decision: ScaleDecision
    status: dict[str, Any] = field(default_factory=dict)


def statefulset_replicas(api: client.ApiClient, spec: ClusterSpec) -> int | None:
    """The brokers' StatefulSet's replicas; None while it does not exist."""
    try:
        statefulset = client.AppsV1Api(api).read_namespaced_stateful_set(
            names.brokers_statefulset(spec.name), spec.namespace
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise
    return statefulset.spec.replicas


def scale_once(
    admin: AdminClient,
    spec: ClusterSpec,
    status: Mapping[str, Any],
    *,
    running: int | None,
    now: str,
    shrink: Callable[[int], None],
) -> ScaleStep:
    """Observe, decide, act. ``running`` is the StatefulSet's replicas (None: not there
    yet), ``shrink(n)`` applies it with ``n`` brokers; the brokers are asked only when
    something is to move or has moved."""
    if running is None:
        return ScaleStep(ScaleDecision("wait", reason="the brokers' StatefulSet is not there"))
    spread = status.get(SPREAD, running)
    move = dict(status.get(MOVE) or {})
    ours = move.get("state") == "Running"
    desired = spec.brokers.replicas
    if desired == running == spread and not ours:  # a refusal the user withdrew goes too
        refused = move.get("state") == "Refused"
        return ScaleStep(
            ScaleDecision("done"), {SPREAD: running} | ({MOVE: None} if refused else {})
        )
    reassigning = admin.list_reassignments()
    state = admin.cluster_state()
    decision = decide_scale(
        ScaleObservation(
            desired=desired,
            running=running,
            spread=spread,
            live=frozenset(state.brokers),
            assignment=state.assignment,
            reassigning=len(reassigning),
            ours_in_progress=ours,
        )
    )
    action = decision.action
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
            finishedAt=now,
        )
        updates: dict[str, Any] = {MOVE: move}
        if move.get("operation") == "AddBrokers":
            updates[SPREAD] = running
        return ScaleStep(decision, updates)
    if action == "refuse":
        refused = {
            "operation": "RemoveBrokers",
            "brokers": list(decision.brokers),
            "state": "Refused",
            "message": decision.reason,
        }
        return ScaleStep(decision, {MOVE: refused})
    if action in _PLANNERS:
        plan = _PLANNERS[action](state, decision.brokers)
        if not plan.moves:  # already spread: nothing to copy
            return ScaleStep(ScaleDecision("done"), {SPREAD: running})
        throttle = spec.rebalance.throttle_bytes_per_second
        _start(admin, plan, state.brokers, throttle)
        return ScaleStep(decision, {MOVE: _started(action, decision, plan, throttle, now)})
    if action == "shrink":
        shrink(desired)
        return ScaleStep(decision, {SPREAD: desired})
    if action == "done":
        return ScaleStep(decision, {SPREAD: running})
    return ScaleStep(decision)


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


def _started(action: str, decision: ScaleDecision, plan: Plan, throttle: int, now: str) -> dict:
    logger.info(
        "%s %s: %d partitions, %d bytes",
        action,
        decision.brokers,
        len(plan.moves),
        plan.bytes_moved,
    )
    return {
        "operation": _OPERATIONS[action],
        "brokers": list(decision.brokers),
        "state": "Running",
        "partitions": len(plan.moves),
        "partitionsDone": 0,
        "bytes": plan.bytes_moved,
        "bytesDone": 0,
        "throttleBytesPerSecond": throttle,
        "startedAt": now,
        "message": decision.reason,
    }
