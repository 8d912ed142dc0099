"""One pass over a Cluster: observe (one snapshot), decide (pure steps returning typed
commands), act (one dispatcher), report (one status function, one status write), under
one lock per Cluster that the spec handlers and the daemon share (DESIGN §8).

A pass reads the Cluster itself first (its spec, generation and status as the API has
them now, not as an event carried them), so a pass that waited for the lock decides on
what is current. The StatefulSet is written only through ``ApplyChildren``, whose
precondition is the StatefulSet's generation in the snapshot: a decision taken on an
older StatefulSet spec fails to write rather than undo a newer one.

Each CA's renewal (``ca_renewal``) is decided first, on what ``ca_observe`` makes of
the snapshot: its commands come before the certificate step's, which signs no leaf of a
CA whose renewal holds its signing; its record goes to ``status.certificates``. A spec
that cannot be read (a maintenance window that is not a cron expression) is said in
ConfigValid, and nothing else is done.

Events: each act the user should see (a restart, a drain, a movement started or
finished, a refusal seen first, a CA's renewal started, moved on a step or ended), and,
when Progressing's reason or message changes and no such event said it, the new one;
the same line goes to the log.
"""

from __future__ import annotations

import datetime
import logging
import os
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import kopf
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog.admin import AdminClient, AdminError
from tidelog.protocol.errors import ProtocolError
from tidelog_operator import conditions, kube, names
from tidelog_operator.builders.brokers import node_reader_binding
from tidelog_operator.cluster.balance import REBALANCE_ANNOTATION, requested, unknown_request
from tidelog_operator.cluster.ca_observe import ca_observed
from tidelog_operator.cluster.ca_renewal import CaPolicy, RenewalStep, renewal_step, status_key
from tidelog_operator.cluster.certificate_commands import CaKind
from tidelog_operator.cluster.certificate_step import (
    ca_trust_markers,
    certificate_step,
    zookeeper_issue,
)
from tidelog_operator.cluster.children import desired_children
from tidelog_operator.cluster.command_base import Event
from tidelog_operator.cluster.commands import (
    ApplyChildren,
    ApplyObjects,
    Command,
    Context,
    ElectPreferredLeaders,
    FinishReassignment,
    carry_out,
)
from tidelog_operator.cluster.disks import VolumeAction
from tidelog_operator.cluster.local_step import LocalStep, local_step
from tidelog_operator.cluster.roll_step import roll_step
from tidelog_operator.cluster.rolling import RollAction
from tidelog_operator.cluster.scale_step import MOVE, ScaleStep, scale_step
from tidelog_operator.cluster.scaling import ScaleAction, ScaleDecision, brokers_to_run
from tidelog_operator.cluster.snapshot import GENERATION_ANNOTATION, ClusterSnapshot, observe
from tidelog_operator.cluster.status import (
    Election,
    PassOutcome,
    cluster_status,
    invalid_spec_status,
    progress,
)
from tidelog_operator.cluster.user_pass import serve_users
from tidelog_operator.cluster.user_step import user_step
from tidelog_operator.cluster.volume_step import needs_draining_dirs, volume_step, volumes_to_mount
from tidelog_operator.cluster_client import NoCredentials, cluster_admin
from tidelog_operator.conditions import Reason
from tidelog_operator.names import GROUP, VERSION
from tidelog_operator.spec import ClusterSpec, parse_cluster

__all__ = ["Event", "cluster_lock", "kopf_event", "renewal_events", "run_pass"]

logger = logging.getLogger(__name__)

# The ClusterRole (get nodes) that rack-aware brokers are bound to; the chart makes it.
NODE_READER_ROLE = os.environ.get("TIDELOG_NODE_READER_ROLE", "tidelog-node-reader")
_LOCKS: dict[tuple[str, str], threading.Lock] = {}
_LOCKS_GUARD = threading.Lock()
_MOVES = {
    ScaleAction.ADD_BROKERS,
    ScaleAction.REMOVE_BROKERS,
    ScaleAction.SHRINK,
    ScaleAction.FINISH,
}
_BALANCING = {
    ScaleAction.REBALANCE_REPLICAS,
    ScaleAction.ELECT_LEADERS,
    ScaleAction.REPLACE_LOST_REPLICAS,
}
_REFUSALS = {
    ScaleAction.REFUSE_SCALE_DOWN: Reason.SCALE_DOWN_REFUSED,
    ScaleAction.REFUSE_DRAIN: Reason.DRAIN_REFUSED,
}


def cluster_lock(namespace: str, name: str) -> threading.Lock:
    """The lock every pass over the Cluster ``namespace/name`` holds."""
    with _LOCKS_GUARD:
        return _LOCKS.setdefault((namespace, name), threading.Lock())


def kopf_event(cluster: dict[str, Any], event: Event) -> None:
    """Post ``event`` on the Cluster through kopf (inside the operator: its handlers and
    daemon carry kopf's context into their threads); a failed post is logged."""
    try:
        if event.warning:
            kopf.warn(cluster, reason=event.reason, message=event.message)
        else:
            kopf.info(cluster, reason=event.reason, message=event.message)
    except ApiException as error:
        logger.warning("an event of %s was not written: %s", cluster["metadata"]["name"], error)


def run_pass(
    namespace: str,
    name: str,
    *,
    api: client.ApiClient | None = None,
    admin: Callable[[ClusterSpec], AdminClient] | None = None,
    now: Callable[[], datetime.datetime] | None = None,
    tell: Callable[[dict[str, Any], Event], None] = kopf_event,
) -> bool:
    """One pass over the Cluster, under its lock; whether a roll, a drain of volumes, a
    scaling or a CA's renewal is under way after it (the daemon then looks again soon).
    ``admin`` makes the brokers' admin client (by default from the operator's
    credentials for the Cluster, ``cluster_client``; tests point it at brokers outside
    Kubernetes); ``tell`` posts an event (each also goes to the log)."""
    api = api or kube.api()
    make_admin = admin or (lambda spec: cluster_admin(spec.namespace, spec.name, api))
    clock = now or (lambda: datetime.datetime.now(datetime.UTC))
    with cluster_lock(namespace, name):
        cluster = kube.found(
            client.CustomObjectsApi(api).get_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            "clusters",
            name,
        )
        if cluster is None or cluster["metadata"].get("deletionTimestamp"):
            return False
        return _pass(api, cluster, make_admin, clock(), tell)


def _pass(
    api: client.ApiClient,
    cluster: dict[str, Any],
    make_admin: Callable[[ClusterSpec], AdminClient],
    now: datetime.datetime,
    tell: Callable[[dict[str, Any], Event], None],
) -> bool:
    meta = cluster["metadata"]
    status = cluster.get("status") or {}
    generation = meta.get("generation", 0)
    try:
        spec = parse_cluster(meta["name"], meta["namespace"], cluster.get("spec") or {})
    except ValueError as error:
        _refuse_spec(api, cluster, str(error), generation, now, tell)
        return False
    admins: list[AdminClient] = []

    def admin() -> AdminClient:
        if not admins:
            admins.append(make_admin(spec))
        return admins[0]

    snapshot = observe(
        api, spec, admin, draining=lambda templates: needs_draining_dirs(spec, templates, status)
    )
    annotations = meta.get("annotations") or {}
    children = desired_children(spec)
    roll = roll_step(snapshot, status, now=now)
    volumes = volume_step(snapshot, spec, status, generation=generation, now=now)
    if roll.decision.action is RollAction.NOTHING:
        scale = scale_step(
            snapshot.brokers,
            spec,
            status,
            running=snapshot.running if snapshot.statefulset is not None else None,
            requested=requested(annotations),
            now=now,
            unreachable=snapshot.unreachable,
        )
    else:
        scale = ScaleStep(ScaleDecision(ScaleAction.WAIT, reason="a rolling restart is under way"))
    brokers = scale.shrink_to or brokers_to_run(spec.brokers.replicas, snapshot.running)
    mount = volumes_to_mount(spec, volumes.decision.mount, snapshot.known_volumes)
    served = snapshot.brokers.served if snapshot.brokers is not None else {}
    recorded = status.get("certificates") or {}
    observed = ca_observed(spec, snapshot, recorded)
    renewals = {
        kind: renewal_step(observed[kind], CaPolicy.of(spec.certificates, kind), now)
        for kind in CaKind
    }
    paused = frozenset(kind for kind, step in renewals.items() if step.signing_paused)
    tls = certificate_step(
        spec, snapshot.tls, max(brokers, snapshot.running or 0), now, served, paused
    )
    issued = zookeeper_issue(snapshot.tls, tls)
    markers = ca_trust_markers(snapshot.tls)
    apply = _apply_children(spec, cluster, snapshot, brokers, mount, generation, issued, markers)
    local = local_step(snapshot.local, spec)
    binding = node_reader_binding(spec, NODE_READER_ROLE)
    cluster_scoped = (ApplyObjects((binding,)),) if binding is not None else ()
    owner = {
        "apiVersion": cluster["apiVersion"],
        "kind": cluster["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    context = Context(api, spec.namespace, spec.name, admin, spec, owner)
    election = None
    applied = False
    steps = (
        *cluster_scoped,
        *local.commands,
        *(command for step in renewals.values() for command in step.commands),
        *tls,
        apply,
        *roll.commands,
        *volumes.commands,
    )
    for command in (*steps, *scale.commands):
        done, outcome = _carry(command, context)
        if not done:
            continue
        if command is apply:
            applied = bool(outcome)
        if isinstance(command, ElectPreferredLeaders | FinishReassignment):
            trigger = command.trigger if isinstance(command, ElectPreferredLeaders) else "Move"
            election = Election(trigger, outcome)
    users = user_step(
        spec, snapshot.users, snapshot.broker_users, snapshot.tls, now, CaKind.CLIENTS in paused
    )
    serve_users(api, users, lambda command: _carry(command, context)[0], _stamp(now), tell)
    unknown = unknown_request(annotations)
    if scale.handled or unknown is not None:
        kube.remove_annotation(api, "clusters", spec.namespace, spec.name, REBALANCE_ANNOTATION)
    records = {
        status_key(kind): step.record.as_status()
        for kind, step in renewals.items()
        if step.record is not None
    }
    outcome = PassOutcome(children.config, roll, volumes, scale, election, applied, records)
    events = _local_events(local) + _events(outcome, status, unknown, generation)
    events += renewal_events(renewals, recorded)
    before = _progressing(status)
    kube.patch_status(
        api,
        "clusters",
        spec.namespace,
        spec.name,
        lambda current: cluster_status(
            current, snapshot, spec, outcome, generation=generation, now=_stamp(now)
        ),
    )
    moving = progress(outcome, snapshot, status)
    told = before[0] == moving.reason and (before[1] or "").startswith(moving.message)
    if not told and all(e.reason != moving.reason for e in events):
        events.append(
            Event(not moving.holds and moving.reason != Reason.IDLE, moving.reason, moving.message)
        )
    for event in events:
        logger.info("cluster %s/%s: %s: %s", spec.namespace, spec.name, event.reason, event.message)
        tell(cluster, event)
    draining = volumes.decision.action in (VolumeAction.DRAIN, VolumeAction.WAIT) and bool(
        volumes.decision.volumes
    )
    renewing = any(
        step.record is not None and step.record.renewal is not None for step in renewals.values()
    )
    return moving.holds or draining or renewing


def _refuse_spec(
    api: client.ApiClient,
    cluster: dict[str, Any],
    message: str,
    generation: int,
    now: datetime.datetime,
    tell: Callable[[dict[str, Any], Event], None],
) -> None:
    """Say in ConfigValid (and, when the condition changes, an event) why the spec
    cannot be read."""
    meta = cluster["metadata"]
    written = kube.patch_status(
        api,
        "clusters",
        meta["namespace"],
        meta["name"],
        lambda current: invalid_spec_status(
            current, message, generation=generation, now=_stamp(now)
        ),
    )
    if written:
        logger.info("cluster %s/%s: not applied: %s", meta["namespace"], meta["name"], message)
        tell(cluster, Event(True, Reason.INVALID_CONFIG, f"not applied: {message}"))


def renewal_events(renewals: dict[CaKind, RenewalStep], recorded: dict[str, Any]) -> list[Event]:
    """An event for each CA whose renewal started, moved on a step, or ended (the
    recorded step against the new record's)."""
    events = []
    for kind, step in renewals.items():
        before = (recorded.get(status_key(kind)) or {}).get("renewal") or {}
        after = step.record.renewal if step.record is not None else None
        if before.get("step") != (after.phase.value if after is not None else None):
            events.append(Event(False, Reason.CA_RENEWAL, step.reason))
    return events


def _carry(command: Command, context: Context) -> tuple[bool, Any]:
    """Carry ``command`` out: (whether it was, what its handler returned)."""
    try:
        return True, carry_out(command, context)
    except (AdminError, OSError, ProtocolError, NoCredentials) as error:
        # The brokers did not answer: the next pass observes what took effect and
        # decides again (a reassignment's start is recorded as running either way).
        logger.warning(
            "cluster %s/%s: %s failed: %s", context.namespace, context.cluster, command, error
        )
    except ApiException as error:
        # Refused by the API server (a role short of a verb, an object it rejects):
        # said in the log; the rest of the pass, its status among it, goes on.
        logger.error(
            "cluster %s/%s: %s refused: %s %s",
            context.namespace,
            context.cluster,
            type(command).__name__,
            error.status,
            error.reason,
        )
    return False, None


def _apply_children(
    spec: ClusterSpec,
    cluster: dict[str, Any],
    snapshot: ClusterSnapshot,
    brokers: int,
    volumes: tuple,
    generation: int,
    zookeeper_certificates: int,
    ca_trust: tuple[str, str] | None = None,
) -> Command:
    """The children with ``brokers`` brokers on ``volumes``, owned by the Cluster, the
    StatefulSet marked with the generation it is applied for; ``ca_trust``: the pod
    templates' trust markers (``certificate_step.ca_trust_markers``)."""
    running = replace(spec.brokers, replicas=brokers)
    objects = desired_children(
        replace(spec, brokers=running, volumes=volumes),
        zookeeper_certificates=zookeeper_certificates,
        ca_trust=ca_trust,
    ).objects
    statefulset = names.brokers_statefulset(spec.name)
    for obj in objects:
        kopf.adopt(obj, owner=cluster)
        if obj["kind"] == "StatefulSet" and obj["metadata"]["name"] == statefulset:
            obj["metadata"].setdefault("annotations", {})[GENERATION_ANNOTATION] = str(generation)
    live = snapshot.statefulset
    precondition = None if live is None or live.going else live.generation
    return ApplyChildren(tuple(objects), precondition)


def _local_events(local: LocalStep) -> list[Event]:
    events = [
        Event(False, Reason.VOLUME_RECYCLED, f"{volume} wiped and available again")
        for volume in local.recycled
    ]
    if local.lost:
        events.append(Event(True, Reason.VOLUMES_LOST, local.lost.message()))
    return events


def _events(
    outcome: PassOutcome, status: dict[str, Any], unknown: str | None, generation: int
) -> list[Event]:
    """The events of the acts of a pass."""
    events = []
    roll, volumes, scale = outcome.roll.decision, outcome.volumes.decision, outcome.scale.decision
    if roll.action is RollAction.RESTART:
        events.append(Event(False, Reason.ROLLING_RESTART, roll.reason))
    if volumes.action is VolumeAction.DRAIN:
        events.append(Event(False, Reason.DRAINING_VOLUMES, volumes.reason))
    if scale.action in _MOVES:
        events.append(Event(False, Reason.SCALING, scale.reason))
    elif scale.action in _BALANCING:
        events.append(Event(False, Reason.REBALANCING, scale.reason))
    elif scale.action in _REFUSALS and (status.get(MOVE) or {}).get("state") != "Refused":
        events.append(Event(True, _REFUSALS[scale.action], scale.reason))
    if unknown is not None:
        message = (
            f"{REBALANCE_ANNOTATION}={unknown} asks for nothing known (leaders, replicas); removed"
        )
        events.append(Event(True, Reason.UNKNOWN_REQUEST, message))
    checked = outcome.config
    if not checked.valid and status.get("observedGeneration") != generation:
        events.append(Event(True, Reason.INVALID_CONFIG, f"not applied: {checked.message()}"))
    return events


def _progressing(status: dict[str, Any]) -> tuple[str | None, str | None]:
    found = next(
        (c for c in status.get("conditions", []) if c.get("type") == conditions.PROGRESSING), {}
    )
    return found.get("reason"), found.get("message")


def _stamp(now: datetime.datetime) -> str:
    return now.strftime("%Y-%m-%dT%H:%M:%SZ")
