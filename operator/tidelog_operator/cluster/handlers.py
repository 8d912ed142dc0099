"""kopf handlers of Cluster: a few lines each over the builders and the observer.

* create, spec update, resume: apply the children (owned by the Cluster, so deleting it
  deletes them) and the local volumes, and record the config check (``ConfigValid``,
  and a Warning event naming refused keys);
* a pass every ``STEP_INTERVAL_S`` while a roll, a drain or a scaling is under way (so
  that each step follows the last within seconds), every ``OBSERVE_INTERVAL_S``
  otherwise: recycle released local volumes, let go of those whose
  node is gone (``replaceLostVolumes``), take one step of the
  rolling restart (``rolling.py``: a broker on an old pod template is restarted when it
  is safe), then, with no roll under way, one step of scaling and balancing
  (``scaling.py``: data is spread onto added brokers and drained off leaving ones before
  they go; replicas rebalanced and preferred leaders elected as ``balance.py`` asks),
  observe pods and brokers and write the status (only when it changes).

A change of volumes (``volume_moves.py``): an added volume is mounted at once (the
StatefulSet made anew, ``reconcile_cluster``), a removed one only once the brokers have
drained it (the volume step of a pass), each followed by the roll.

The StatefulSet gets the spec's brokers, but never fewer than it runs: only the scaler
shrinks it, once the leaving brokers are drained.
"""

from __future__ import annotations

import asyncio
import datetime
import os
from dataclasses import replace
from typing import Any

import kopf
from kubernetes.client.exceptions import ApiException

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.planner import PlanError
from tidelog.protocol.errors import ProtocolError
from tidelog_operator import conditions, kube, names
from tidelog_operator.builders.brokers import bootstrap_address, node_reader_binding
from tidelog_operator.cluster.balance import REBALANCE_ANNOTATION, requested, unknown_request
from tidelog_operator.cluster.children import Children, desired_children
from tidelog_operator.cluster.disks import VolumeDecision
from tidelog_operator.cluster.observe import (
    cluster_status,
    observe,
    rolling_status,
    scaling_status,
    under_way,
    volume_status,
)
from tidelog_operator.cluster.restarts import roll_once
from tidelog_operator.cluster.rolling import RollDecision
from tidelog_operator.cluster.scaling import ScaleDecision, brokers_to_run
from tidelog_operator.cluster.scaling_moves import (
    MOVE,
    ScaleStep,
    scale_once,
    statefulset_replicas,
)
from tidelog_operator.cluster.volume_moves import (
    GENERATION_ANNOTATION,
    VOLUMES,
    VolumeStep,
    apply_statefulset,
    mounted_volumes,
    running_brokers,
    volumes_once,
    volumes_to_mount,
)
from tidelog_operator.cluster.volumes import (
    recycle_released_volumes,
    replace_lost_volumes,
    sync_local_volumes,
)
from tidelog_operator.cluster_client import ADMIN_TIMEOUT_S
from tidelog_operator.conditions import Reason
from tidelog_operator.names import GROUP, VERSION, node_reader_binding_name
from tidelog_operator.spec import ClusterSpec, Volume, parse_cluster

__all__ = ["OBSERVE_INTERVAL_S", "STEP_INTERVAL_S"]

OBSERVE_INTERVAL_S = 10.0
STEP_INTERVAL_S = 2.0
# The ClusterRole (get nodes) that rack-aware brokers are bound to; the chart makes it.
NODE_READER_ROLE = os.environ.get("TIDELOG_NODE_READER_ROLE", "tidelog-node-reader")


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@kopf.on.resume(GROUP, VERSION, "clusters")
@kopf.on.create(GROUP, VERSION, "clusters")
@kopf.on.update(GROUP, VERSION, "clusters", field="spec")
def reconcile_cluster(name: str, namespace: str, spec: Any, meta: Any, body: Any, **_: Any) -> None:
    parsed = parse_cluster(name, namespace, spec)
    running = running_brokers(kube.api(), parsed)
    volumes = _volumes_to_mount(parsed, body)
    brokers = brokers_to_run(parsed.brokers.replicas, running)
    children = _apply_children(parsed, body, brokers, volumes)
    if children is None:
        raise kopf.TemporaryError("the brokers' StatefulSet is being made anew", delay=5)
    binding = node_reader_binding(parsed, NODE_READER_ROLE)
    if binding is not None:
        kube.apply(kube.api(), binding)
    sync_local_volumes(kube.api(), parsed)
    checked = children.config
    if not checked.valid:
        kopf.warn(body, reason=Reason.INVALID_CONFIG, message=f"not applied: {checked.message()}")
    generation = meta.get("generation")

    def record(status: dict[str, Any]) -> dict[str, Any]:
        found = conditions.set_condition(
            status.get("conditions", []),
            conditions.CONFIG_VALID,
            checked.valid,
            Reason.CONFIG_APPLIED if checked.valid else Reason.INVALID_CONFIG,
            "every key applied" if checked.valid else f"not applied: {checked.message()}",
            generation=generation,
            now=now(),
        )
        return {**status, "conditions": found}

    kube.patch_status(kube.api(), "clusters", namespace, name, record)


@kopf.daemon(
    GROUP, VERSION, "clusters", initial_delay=1, cancellation_backoff=30, cancellation_timeout=5
)
async def watch_cluster(stopped: kopf.DaemonStopped, **kwargs: Any) -> None:
    """Passes of ``observe_cluster`` in a worker thread, one at a time (a kopf timer has
    one fixed interval; this waits less while a step is under way). When the Cluster
    goes or the operator exits, a pass under way has 30 s to end before it is
    cancelled (rather than left behind)."""
    while not stopped:
        stepping = await asyncio.to_thread(observe_cluster, **kwargs)
        await stopped.wait(STEP_INTERVAL_S if stepping else OBSERVE_INTERVAL_S)


def observe_cluster(name: str, namespace: str, spec: Any, meta: Any, body: Any, **_: Any) -> bool:
    """One pass over the Cluster (``body`` is kopf's live view of it); whether a roll, a
    drain or a scaling is under way after it."""
    parsed = parse_cluster(name, namespace, spec)
    for volume in recycle_released_volumes(kube.api(), parsed, parsed.brokers.image):
        kopf.info(body, reason="VolumeRecycled", message=f"{volume} wiped and available again")
    lost = replace_lost_volumes(kube.api(), parsed)
    if lost:
        kopf.warn(body, reason=Reason.VOLUMES_LOST, message=lost.message())
    roll = _roll(parsed)
    if roll.action == "restart":
        kopf.info(body, reason=Reason.ROLLING_RESTART, message=roll.reason)
    volumes = _volumes(parsed, body)
    if volumes.decision.action == "drain":
        kopf.info(body, reason=Reason.DRAINING_VOLUMES, message=volumes.decision.reason)
    step = _scale(parsed, body, roll)
    _announce(body, step)
    unknown = unknown_request(meta.get("annotations"))
    if unknown is not None:
        message = f"{REBALANCE_ANNOTATION}={unknown} asks for nothing known (leaders, replicas)"
        kopf.warn(body, reason=Reason.UNKNOWN_REQUEST, message=message + "; removed")
    if step.handled or unknown is not None:
        kube.remove_annotation(kube.api(), "clusters", namespace, name, REBALANCE_ANNOTATION)
    seen = observe(kube.api(), parsed)
    generation = meta.get("generation")

    def change(status: dict[str, Any]) -> dict[str, Any]:
        updated = cluster_status(status, seen, parsed, generation=generation, now=now())
        updated = rolling_status(updated, roll, generation=generation, now=now())
        updated = volume_status(updated, volumes, generation=generation, now=now())
        return scaling_status(updated, step, generation=generation, now=now())

    kube.patch_status(kube.api(), "clusters", namespace, name, change)
    return under_way(roll, volumes, step)


def _apply_children(
    parsed: ClusterSpec, body: Any, brokers: int, volumes: tuple[Volume, ...]
) -> Children | None:
    """Apply the Cluster's children with ``brokers`` brokers on ``volumes``, owned by the
    Cluster; None while the brokers' StatefulSet is being made anew (new volumes)."""
    running = replace(parsed.brokers, replicas=brokers)
    children = desired_children(replace(parsed, brokers=running, volumes=volumes))
    statefulset = names.brokers_statefulset(parsed.name)
    for obj in children.objects:
        kopf.adopt(obj, owner=body)
        if obj["kind"] == "StatefulSet" and obj["metadata"]["name"] == statefulset:
            generation = str(body["metadata"].get("generation", 0))
            obj["metadata"].setdefault("annotations", {})[GENERATION_ANNOTATION] = generation
            if not apply_statefulset(kube.api(), obj):
                return None
        else:
            kube.apply(kube.api(), obj)
    return children


def _volumes_to_mount(parsed: ClusterSpec, body: Any) -> tuple[Volume, ...]:
    """The spec's volumes, and those the brokers mount until the volume step has drained
    and unmounted them (``status.volumes``)."""
    mounted = mounted_volumes(kube.api(), parsed)
    record = (body.get("status") or {}).get(VOLUMES) or {}
    unmounted = set(record.get("removed", [])) if record.get("state") == "Unmounted" else set()
    keep = {v.id for v in parsed.volumes} | (mounted.ids - unmounted)
    return volumes_to_mount(parsed, frozenset(keep), mounted.volumes)


def _volumes(parsed: ClusterSpec, body: Any) -> VolumeStep:
    """One step of a change of volumes; a wait while the brokers cannot be asked."""
    running = running_brokers(kube.api(), parsed) or parsed.brokers.replicas
    try:
        return volumes_once(
            AdminClient(bootstrap_address(parsed), timeout=ADMIN_TIMEOUT_S),
            kube.api(),
            parsed,
            body.get("status") or {},
            brokers=running,
            generation=body["metadata"].get("generation", 0),
            now=datetime.datetime.now(datetime.UTC),
            apply=lambda volumes: _apply_children(parsed, body, running, volumes),
        )
    except (AdminError, OSError, ProtocolError) as error:
        wait = VolumeDecision("wait", frozenset(), reason=f"the brokers do not answer: {error}")
        return VolumeStep(wait)


def _roll(spec: ClusterSpec) -> RollDecision:
    """One step of the roller; a wait while the brokers cannot be asked."""
    try:
        return roll_once(kube.api(), spec)
    except (AdminError, OSError, ProtocolError) as error:
        return RollDecision("wait", None, f"the brokers do not answer: {error}")
    except ApiException as error:
        if error.status != 404:
            raise
        return RollDecision("wait", None, "the brokers' StatefulSet is being made anew")


def _scale(parsed: ClusterSpec, body: Any, roll: RollDecision) -> ScaleStep:
    """One step of the scaler once no roll is under way; a wait while the brokers cannot
    be asked or the move cannot be planned."""
    if roll.action != "done":
        return ScaleStep(ScaleDecision("wait", reason="a rolling restart is under way"))
    try:
        return scale_once(
            AdminClient(bootstrap_address(parsed), timeout=ADMIN_TIMEOUT_S),
            parsed,
            body.get("status") or {},
            running=statefulset_replicas(kube.api(), parsed),
            requested=requested(body.get("metadata", {}).get("annotations")),
            now=datetime.datetime.now(datetime.UTC),
            shrink=lambda brokers: _apply_children(
                parsed, body, brokers, _volumes_to_mount(parsed, body)
            ),
        )
    except (AdminError, OSError, ProtocolError, PlanError) as error:
        return ScaleStep(ScaleDecision("wait", reason=f"cannot move data now: {error}"))


def _announce(body: Any, step: ScaleStep) -> None:
    """An event when a movement starts or ends, or a scale-down or the copy of the
    replicas of failed log dirs is first refused."""
    decision = step.decision
    if decision.action in ("add-brokers", "remove-brokers", "shrink", "finish"):
        kopf.info(body, reason=Reason.SCALING, message=decision.reason)
    elif decision.action in ("rebalance-replicas", "elect-leaders", "replace-lost-replicas"):
        kopf.info(body, reason=Reason.REBALANCING, message=decision.reason)
    elif decision.action in ("refuse", "refuse-drain"):
        before = ((body.get("status") or {}).get(MOVE) or {}).get("state")
        if before != "Refused":
            reason = (
                Reason.SCALE_DOWN_REFUSED if decision.action == "refuse" else Reason.DRAIN_REFUSED
            )
            kopf.warn(body, reason=reason, message=decision.reason)


@kopf.on.delete(GROUP, VERSION, "clusters")
def forget_cluster(name: str, namespace: str, **_: Any) -> None:
    """What the Cluster cannot own, being cluster-scoped: its brokers' node-reading
    binding (its local volumes stay, as claimRetention says of its data)."""
    kube.delete(
        kube.api(),
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        node_reader_binding_name(namespace, name),
        None,
    )
