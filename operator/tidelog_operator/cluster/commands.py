"""What a Cluster pass does, as typed values, and the one dispatcher that carries them
out (DESIGN §8: decide → act).

The deciders return commands; ``carry_out`` runs each through the handler its type
names in ``HANDLERS``, one writer per object: the brokers' StatefulSet and the other
children are written only by ``ApplyChildren``, a broker's pod deleted only by
``RestartBroker``, its draining dirs set only by ``SetDrainingDirs``, and so on. A
command type without a handler is a programming error (``carry_out`` raises, and a
unit test lists every type). ``ApplyChildren`` writes the StatefulSet only if its
generation is still the one the pass observed (its spec unchanged: status updates, which
the StatefulSet controller makes all the time, do not count), and then with the
resourceVersion just read as the write's precondition: a write from a pass that began
before another writer changed the spec fails instead of undoing that change, and the
next pass decides again.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog.admin import AdminError
from tidelog.admin.moves import BROKER_THROTTLE_RATES, FOLLOWER_REPLICAS, LEADER_REPLICAS
from tidelog.admin.topics import ElectionType
from tidelog.protocol.errors import ProtocolError
from tidelog_operator import kube, names
from tidelog_operator.cluster.ca_renewal_commands import RENEWAL_HANDLERS
from tidelog_operator.cluster.certificate_commands import TLS_HANDLERS
from tidelog_operator.cluster.command_base import Command, Context
from tidelog_operator.cluster.user_commands import USER_HANDLERS

__all__ = [
    "HANDLERS",
    "ApplyChildren",
    "ApplyObjects",
    "Command",
    "Context",
    "CreatePod",
    "DeleteObjects",
    "ElectPreferredLeaders",
    "FinishReassignment",
    "FreeVolume",
    "RestartBroker",
    "SetDrainingDirs",
    "StartReassignment",
    "apply_statefulset",
    "carry_out",
]

logger = logging.getLogger(__name__)

_CONFLICT_RETRIES = 5


@dataclass(frozen=True)
class ApplyChildren(Command):
    """Apply the Cluster's children (``objects``, owned by it). The brokers'
    StatefulSet among them is applied if its generation is still ``precondition`` (the
    one observed; None: it did not exist); when its claim templates differ from the
    live one's it is deleted orphaning its pods instead, and a later pass makes it
    anew."""

    objects: tuple[Mapping[str, Any], ...]
    precondition: int | None


@dataclass(frozen=True)
class ApplyObjects(Command):
    """Apply objects the Cluster cannot own: its local volumes, its brokers'
    node-reading binding."""

    objects: tuple[Mapping[str, Any], ...]


@dataclass(frozen=True)
class CreatePod(Command):
    """Create a one-off pod (a local volume's wipe); there already is fine. Created, not
    applied: the pod is never changed, and the operator's role may create pods, not
    patch them."""

    pod: Mapping[str, Any]


@dataclass(frozen=True)
class DeleteObjects(Command):
    """Delete objects (gone already is fine)."""

    api_version: str
    kind: str
    names: tuple[str, ...]
    namespace: str | None


@dataclass(frozen=True)
class FreeVolume(Command):
    """Make a wiped local volume Available again (its claim reference removed)."""

    volume: str


@dataclass(frozen=True)
class RestartBroker(Command):
    broker: int
    reason: str


@dataclass(frozen=True)
class ElectPreferredLeaders(Command):
    """A preferred-leader election of ``partitions`` (None: every partition); its
    outcome is the partitions whose leader moved."""

    partitions: tuple[tuple[str, int], ...] | None
    trigger: str  # Schedule, Request, Restart


@dataclass(frozen=True)
class SetDrainingDirs(Command):
    broker: int
    dirs: tuple[str, ...]


@dataclass(frozen=True)
class StartReassignment(Command):
    """Throttle the moving replicas (when ``throttle``: the rate on every one of
    ``brokers``, and each topic's ``throttled`` (leader, follower) replicas), then start
    the reassignment ``moves``."""

    moves: Mapping[tuple[str, int], list[int]]
    throttle: int
    brokers: tuple[int, ...]
    throttled: Mapping[str, tuple[str, str]] = field(default_factory=dict)
    what: str = ""


@dataclass(frozen=True)
class FinishReassignment(Command):
    """Remove the throttles of a finished reassignment and elect the preferred leaders."""

    brokers: tuple[int, ...]
    topics: tuple[str, ...]


def _apply_children(command: ApplyChildren, context: Context) -> bool:
    """Whether every child was applied (False: the StatefulSet is being made anew)."""
    statefulset = names.brokers_statefulset(context.cluster)
    for obj in command.objects:
        if obj["kind"] == "StatefulSet" and obj["metadata"]["name"] == statefulset:
            if not apply_statefulset(context.api, dict(obj), command.precondition):
                return False
        else:
            kube.apply(context.api, dict(obj))
    return True


def apply_statefulset(
    api: client.ApiClient, statefulset: dict[str, Any], precondition: int | None
) -> bool:
    """Apply the brokers' StatefulSet if the live one's generation is still
    ``precondition`` (None: it did not exist); whether it was applied. False when its
    spec changed or it went meanwhile, while it is being deleted, and when its claim
    templates differ from the live one's, which is then deleted orphaning its pods (a
    later call makes it anew). The write carries the resourceVersion just read: a status
    update between the read and the write (the StatefulSet controller makes them all the
    time) fails it with a conflict, and it is read and tried again."""
    meta = statefulset["metadata"]
    for _ in range(_CONFLICT_RETRIES):
        live = kube.found(
            client.AppsV1Api(api).read_namespaced_stateful_set, meta["name"], meta["namespace"]
        )
        if live is None:
            if precondition is not None:
                return False  # gone since the pass looked: the next pass makes it
            written = statefulset
        else:
            if live.metadata.deletion_timestamp is not None:
                return False
            if precondition is not None and live.metadata.generation != precondition:
                logger.info("%s changed since the pass looked: the next pass decides", meta["name"])
                return False
            claims = sorted(t.metadata.name for t in live.spec.volume_claim_templates or [])
            wanted = sorted(
                t["metadata"]["name"] for t in statefulset["spec"]["volumeClaimTemplates"]
            )
            if claims != wanted:
                kube.delete(
                    api,
                    "apps/v1",
                    "StatefulSet",
                    meta["name"],
                    meta["namespace"],
                    propagation="Orphan",
                )
                return False
            version = live.metadata.resource_version
            written = {**statefulset, "metadata": {**meta, "resourceVersion": version}}
        try:
            kube.apply(api, written)
        except ApiException as error:
            if error.status != 409:
                raise
            continue
        return True
    logger.info("%s kept changing under the write: the next pass decides", meta["name"])
    return False


def _apply_objects(command: ApplyObjects, context: Context) -> None:
    for obj in command.objects:
        kube.apply(context.api, dict(obj))


def _create_pod(command: CreatePod, context: Context) -> None:
    try:
        client.CoreV1Api(context.api).create_namespaced_pod(context.namespace, dict(command.pod))
    except ApiException as error:
        if error.status != 409:
            raise


def _delete_objects(command: DeleteObjects, context: Context) -> None:
    for name in command.names:
        kube.delete(context.api, command.api_version, command.kind, name, command.namespace)


def _free_volume(command: FreeVolume, context: Context) -> None:
    client.CoreV1Api(context.api).patch_persistent_volume(
        command.volume, {"spec": {"claimRef": None}}
    )


def _restart(command: RestartBroker, context: Context) -> None:
    pod = names.broker_pod(context.cluster, command.broker)
    logger.info(
        "cluster %s/%s: restarting %s: %s", context.namespace, context.cluster, pod, command.reason
    )
    kube.delete(context.api, "v1", "Pod", pod, context.namespace)


def _elect(command: ElectPreferredLeaders, context: Context) -> list[tuple[str, int]]:
    results = context.admin().elect_leaders(ElectionType.PREFERRED, command.partitions)
    return [tp for tp, error in results.items() if error is None]


def _set_draining(command: SetDrainingDirs, context: Context) -> None:
    context.admin().set_draining_dirs(command.broker, command.dirs)


def _start(command: StartReassignment, context: Context) -> bool:
    """Whether the start was confirmed. The throttles, the reassignment or both may be
    in place with the answer lost: the status records the move as running all the
    same, so the next passes wait for what runs, then finish (the throttles go either
    way); a move that never started is planned again."""
    admin = context.admin()
    try:
        if command.throttle:
            admin.set_throttles(
                {
                    b: dict.fromkeys(BROKER_THROTTLE_RATES, command.throttle)
                    for b in command.brokers
                },
                {
                    topic: {LEADER_REPLICAS: leader, FOLLOWER_REPLICAS: follower}
                    for topic, (leader, follower) in command.throttled.items()
                },
            )
        failed = [e for e in admin.alter_partition_reassignments(command.moves).values() if e]
        if failed:
            raise failed[0]
    except (AdminError, OSError, ProtocolError) as error:
        logger.warning("%s: the start is unconfirmed: %s", command.what, error)
        return False
    logger.info("%s: %d partitions moving", command.what, len(command.moves))
    return True


def _finish(command: FinishReassignment, context: Context) -> list[tuple[str, int]]:
    admin = context.admin()
    admin.clear_throttles(command.brokers, command.topics)
    results = admin.elect_leaders(ElectionType.PREFERRED)
    return [tp for tp, error in results.items() if error is None]


HANDLERS: dict[type[Command], Callable[[Any, Context], Any]] = {
    ApplyChildren: _apply_children,
    ApplyObjects: _apply_objects,
    CreatePod: _create_pod,
    DeleteObjects: _delete_objects,
    FreeVolume: _free_volume,
    RestartBroker: _restart,
    ElectPreferredLeaders: _elect,
    SetDrainingDirs: _set_draining,
    StartReassignment: _start,
    FinishReassignment: _finish,
    **TLS_HANDLERS,
    **USER_HANDLERS,
    **RENEWAL_HANDLERS,
}


def carry_out(command: Command, context: Context) -> Any:
    """Run ``command`` through its handler; its outcome (see each command)."""
    handler = HANDLERS.get(type(command))
    if handler is None:
        raise TypeError(f"no handler for {type(command).__name__}")
    return handler(command, context)
