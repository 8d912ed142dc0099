"""One immutable observation of a Cluster per pass: what Kubernetes holds of it (the
brokers' StatefulSet, their pods, the claims the pods mount, ZooKeeper's readiness and
StatefulSet) and
what its brokers say, asked through one AdminClient (the metadata with every
partition's replicas, ISR and leader, ``min.insync.replicas`` of each topic, the log
dirs with their replicas and errors, the reassignments in progress, and, while a
volume is being removed, each broker's draining dirs).

Every decider of a pass reads this one snapshot, so that no two of them see different
clusters (DESIGN §8: observe → decide → act). The brokers are asked only when some
broker pod is ready; ``brokers`` is None when they were not asked or did not answer,
and ``unreachable`` then says why.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace

from kubernetes import client

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.groups import TopicPartition
from tidelog.admin.planner import ClusterState
from tidelog.admin.topics import ConfigResourceType
from tidelog.protocol.errors import ProtocolError
from tidelog_operator import kube, names
from tidelog_operator.cluster.certificate_step import TlsView, tls_view
from tidelog_operator.cluster.local_step import LocalStorage
from tidelog_operator.cluster.tls_probe import served_fingerprints
from tidelog_operator.cluster.users import BrokerUsers, ObservedUser, ask_users, observe_users
from tidelog_operator.cluster_client import NoCredentials
from tidelog_operator.spec import ClusterSpec, Volume, local_volume_labels

__all__ = [
    "GENERATION_ANNOTATION",
    "REVISION_LABEL",
    "BrokerPod",
    "BrokersView",
    "ClusterSnapshot",
    "LogDir",
    "Partition",
    "StatefulSetView",
    "ZooKeeperView",
    "ask_brokers",
    "observe",
    "volume_of",
]

logger = logging.getLogger(__name__)

# On the brokers' StatefulSet: the Cluster generation it was applied for.
GENERATION_ANNOTATION = "tidelog.dev/cluster-generation"
REVISION_LABEL = "controller-revision-hash"
_CLAIM = re.compile(r"data-(\d+)")
_LOG_DIR = re.compile(r".*/data-(\d+)/?")


def volume_of(log_dir: str) -> int | None:
    """The volume whose log dir this is (``.../data-<id>``), None for another dir."""
    match = _LOG_DIR.fullmatch(log_dir)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class StatefulSetView:
    """The brokers' StatefulSet: its replicas, the revision its pods should run, its
    claim templates as volumes, the Cluster generation it was applied for (0: not
    known), its resourceVersion and generation (the precondition of the next write: its
    spec unchanged since), whether it is being deleted (made anew, its pods orphaned),
    its pod template's annotations and the generation its controller has seen (its
    ``update_revision`` is of an older spec until that is ``generation``)."""

    replicas: int
    update_revision: str | None
    volumes: Mapping[int, Volume]
    made_for: int
    resource_version: str
    generation: int = 0
    going: bool = False
    template_annotations: Mapping[str, str] = field(default_factory=dict)
    observed_generation: int = 0

    @property
    def templates(self) -> frozenset[int]:
        return frozenset(self.volumes)


@dataclass(frozen=True)
class ZooKeeperView:
    """The Cluster's ZooKeeper StatefulSet (a rolling update, by its controller): its
    pod template's annotations, and whether every server runs the template of its
    current spec and is ready (:attr:`rolled`)."""

    template_annotations: Mapping[str, str]
    replicas: int
    ready: int
    current_revision: str | None
    update_revision: str | None
    generation: int
    observed_generation: int

    @property
    def rolled(self) -> bool:
        return (
            self.observed_generation == self.generation
            and self.current_revision == self.update_revision
            and self.ready == self.replicas
        )


@dataclass(frozen=True)
class BrokerPod:
    """A broker's pod: ``started`` is its container's (False until the startup probe
    succeeds, that is while the broker loads and recovers its logs)."""

    id: int
    name: str
    node: str | None
    ready: bool
    running: bool
    started: bool
    revision: str | None
    claims: Mapping[int, str]  # volume id → the claim's name
    going: bool


@dataclass(frozen=True)
class Partition:
    topic: str
    partition: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    leader: int | None
    offline_replicas: tuple[int, ...]
    min_isr: int

    @property
    def tp(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


@dataclass(frozen=True)
class LogDir:
    path: str
    error: str | None  # the error code's name of an offline dir
    total_bytes: int
    replicas: Mapping[TopicPartition, int]  # current replicas and their bytes

    @property
    def used_bytes(self) -> int:
        return sum(self.replicas.values())


@dataclass(frozen=True)
class BrokersView:
    """What the brokers said: ``racks`` of the live (registered) brokers, the
    controller, every partition, each live broker's log dirs, the reassignments in
    progress (partition → replicas being added), when asked, each live broker's
    draining dirs, and the certificate each serves."""

    racks: Mapping[int, str | None]
    controller: int | None
    partitions: tuple[Partition, ...]
    log_dirs: Mapping[int, tuple[LogDir, ...]]
    reassigning: Mapping[TopicPartition, tuple[int, ...]]
    draining: Mapping[int, frozenset[str]] = field(default_factory=dict)
    # the fingerprint of the certificate each live broker serves (``tls_probe``)
    served: Mapping[int, str] = field(default_factory=dict)

    @property
    def assignment(self) -> dict[TopicPartition, list[int]]:
        return {p.tp: list(p.replicas) for p in self.partitions}

    def cluster_state(self) -> ClusterState:
        """The planner's view: the assignment, the live brokers' racks, each partition's
        size on its leader."""
        leaders = {p.tp: p.leader for p in self.partitions}
        sizes = {
            tp: size
            for broker, dirs in self.log_dirs.items()
            for d in dirs
            for tp, size in d.replicas.items()
            if leaders.get(tp) == broker
        }
        return ClusterState(self.assignment, dict(self.racks), sizes)

    def replicas_per_broker(self) -> dict[int, int]:
        counts: dict[int, int] = {}
        for p in self.partitions:
            for broker in p.replicas:
                counts[broker] = counts.get(broker, 0) + 1
        return counts


@dataclass(frozen=True)
class ClusterSnapshot:
    statefulset: StatefulSetView | None
    pods: tuple[BrokerPod, ...]
    zookeeper_ready: bool
    # volumes the pods mount that the StatefulSet's templates lack, from their claims
    pod_volumes: Mapping[int, Volume] = field(default_factory=dict)
    brokers: BrokersView | None = None
    unreachable: str | None = None  # why ``brokers`` is None, when they were asked
    local: LocalStorage | None = None  # with ``spec.storage.local`` only
    tls: TlsView = field(default_factory=TlsView)
    users: tuple[ObservedUser, ...] = ()
    broker_users: BrokerUsers | None = None  # None: not asked, or the brokers did not answer
    zookeeper: ZooKeeperView | None = None  # None: external, or not made yet

    @property
    def running(self) -> int | None:
        """How many brokers run: the StatefulSet's replicas, or, while it is being made
        anew, as many as its pods' highest ordinal needs; None when there is neither."""
        if self.statefulset is not None and not self.statefulset.going:
            return self.statefulset.replicas
        return max((p.id for p in self.pods), default=-1) + 1 or None

    @property
    def mounted(self) -> frozenset[int]:
        """The volume ids some broker pod mounts."""
        return frozenset(v for p in self.pods for v in p.claims)

    @property
    def known_volumes(self) -> dict[int, Volume]:
        """Every volume the StatefulSet or a pod has, as it has it."""
        templates = {} if self.statefulset is None else dict(self.statefulset.volumes)
        return {**self.pod_volumes, **templates}


def observe(
    api: client.ApiClient,
    spec: ClusterSpec,
    admin: Callable[[], AdminClient],
    *,
    draining: Callable[[frozenset[int] | None], bool],
) -> ClusterSnapshot:
    """The snapshot of the Cluster ``spec`` names; ``admin()`` makes the one client the
    brokers are asked through; ``draining(templates)``: whether to ask for the draining
    dirs, given the StatefulSet's volume ids (None: no StatefulSet), which is only
    while a volume is being removed."""
    core = client.CoreV1Api(api)
    statefulset = _statefulset(api, spec)
    pods = tuple(_broker_pod(p) for p in _pods(core, spec, names.broker_labels(spec.name)))
    zookeeper_ready = True
    if not spec.zookeeper.external:
        ensemble = _pods(core, spec, names.zookeeper_labels(spec.name))
        zookeeper_ready = sum(map(_pod_ready, ensemble)) > spec.zookeeper.replicas // 2
    templates = set() if statefulset is None else set(statefulset.volumes)
    pod_volumes = {
        volume: found
        for volume, claim in sorted({(v, c) for p in pods for v, c in p.claims.items()})
        if volume not in templates
        and (found := _claimed_volume(core, claim, spec.namespace)) is not None
    }
    local = _local_storage(api, core, spec) if spec.local is not None else None
    secrets = _secrets(core, spec)
    tls = tls_view(
        spec,
        {name: secret.data or {} for name, secret in secrets.items()},
        {name: secret.metadata.annotations or {} for name, secret in secrets.items()},
    )
    users = observe_users(api, spec)
    snapshot = ClusterSnapshot(
        statefulset,
        pods,
        zookeeper_ready,
        pod_volumes,
        local=local,
        tls=tls,
        users=users,
        zookeeper=None if spec.zookeeper.external else _zookeeper(api, spec),
    )
    if not any(p.ready for p in pods):
        return snapshot
    try:
        templates = None if statefulset is None or statefulset.going else statefulset.templates
        brokers = ask_brokers(admin(), draining=draining(templates))
    except (OSError, AdminError, ProtocolError, NoCredentials) as error:
        logger.info("cluster %s/%s: brokers do not answer: %s", spec.namespace, spec.name, error)
        return replace(snapshot, unreachable=str(error))
    broker_users = None
    if users:
        try:  # the users' part alone goes unanswered: the Users wait, the rest goes on
            broker_users = ask_users(admin(), authorizer=spec.authorization.enabled)
        except (OSError, AdminError, ProtocolError) as error:
            logger.info("cluster %s/%s: users not described: %s", spec.namespace, spec.name, error)
    return replace(snapshot, brokers=brokers, broker_users=broker_users)


def _local_storage(
    api: client.ApiClient, core: client.CoreV1Api, spec: ClusterSpec
) -> LocalStorage:
    """The nodes, the Cluster's local volumes, the namespace's claims, the broker pods
    and the wipe pods; what is being deleted counts as gone (so each loss is acted on,
    and told, once). Pods are listed before claims: a claim listed after its pod is
    never missing by a race."""
    labels = local_volume_labels(spec.name, spec.namespace, 0)
    labels.pop("tidelog.dev/disk")
    broker_pods = _staying(_pods(core, spec, names.broker_labels(spec.name)))
    claims = _staying(core.list_namespaced_persistent_volume_claim(spec.namespace).items)
    volumes = _staying(core.list_persistent_volume(label_selector=_selector(labels)).items)
    wipes = _pods(core, spec, {"app.kubernetes.io/component": "volume-wipe"})
    return LocalStorage(
        nodes={n.metadata.name: dict(n.metadata.labels or {}) for n in core.list_node().items},
        volumes=tuple(api.sanitize_for_serialization(v) for v in volumes),
        claims=frozenset(c.metadata.name for c in claims),
        broker_pods=tuple(api.sanitize_for_serialization(p) for p in broker_pods),
        wipe_pods={p.metadata.name: p.status.phase for p in wipes},
    )


def _staying(objects: list) -> list:
    return [o for o in objects if o.metadata.deletion_timestamp is None]


def _selector(labels: Mapping[str, str]) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted(labels.items()))


def _pods(core: client.CoreV1Api, spec: ClusterSpec, labels: Mapping[str, str]) -> list:
    return core.list_namespaced_pod(spec.namespace, label_selector=_selector(labels)).items


def _secrets(core: client.CoreV1Api, spec: ClusterSpec) -> dict[str, client.V1Secret]:
    """The Cluster's Secrets (its TLS material) by name."""
    found = core.list_namespaced_secret(
        spec.namespace, label_selector=_selector(names.cluster_labels(spec.name))
    ).items
    return {secret.metadata.name: secret for secret in found}


def _pod_ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def _as_volume(name: str, claim: client.V1PersistentVolumeClaimSpec) -> Volume | None:
    """A claim template ``data-<id>``, or a pod's claim ``data-<id>-<pod>``, as a volume."""
    match = _CLAIM.match(name)
    if match is None:
        return None
    selector = claim.selector.match_labels if claim.selector else None
    return Volume(
        int(match.group(1)),
        claim.resources.requests["storage"],
        claim.storage_class_name,
        dict(selector) if selector else None,
    )


def _read_statefulset(api: client.ApiClient, name: str, namespace: str):
    return kube.found(client.AppsV1Api(api).read_namespaced_stateful_set, name, namespace)


def _statefulset(api: client.ApiClient, spec: ClusterSpec) -> StatefulSetView | None:
    live = _read_statefulset(api, names.brokers_statefulset(spec.name), spec.namespace)
    if live is None:
        return None
    volumes = {
        v.id: v
        for t in live.spec.volume_claim_templates or []
        if (v := _as_volume(t.metadata.name, t.spec)) is not None
    }
    return StatefulSetView(
        replicas=live.spec.replicas,
        update_revision=live.status.update_revision if live.status else None,
        volumes=volumes,
        made_for=int((live.metadata.annotations or {}).get(GENERATION_ANNOTATION, 0)),
        resource_version=live.metadata.resource_version,
        generation=live.metadata.generation or 0,
        going=live.metadata.deletion_timestamp is not None,
        template_annotations=dict(live.spec.template.metadata.annotations or {}),
        observed_generation=(live.status.observed_generation if live.status else None) or 0,
    )


def _zookeeper(api: client.ApiClient, spec: ClusterSpec) -> ZooKeeperView | None:
    live = _read_statefulset(api, names.zookeeper_statefulset(spec.name), spec.namespace)
    if live is None:
        return None
    status = live.status
    return ZooKeeperView(
        template_annotations=dict(live.spec.template.metadata.annotations or {}),
        replicas=live.spec.replicas or 0,
        ready=(status.ready_replicas if status else None) or 0,
        current_revision=status.current_revision if status else None,
        update_revision=status.update_revision if status else None,
        generation=live.metadata.generation or 0,
        observed_generation=(status.observed_generation if status else None) or 0,
    )


def _broker_pod(pod: client.V1Pod) -> BrokerPod:
    statuses = pod.status.container_statuses or []
    broker = next((s for s in statuses if s.name == "broker"), statuses[0] if statuses else None)
    claims = {
        int(match.group(1)): mount.persistent_volume_claim.claim_name
        for mount in pod.spec.volumes or []
        if mount.persistent_volume_claim is not None
        and (match := _CLAIM.fullmatch(mount.name)) is not None
    }
    return BrokerPod(
        id=int(pod.metadata.name.rsplit("-", 1)[1]),
        name=pod.metadata.name,
        node=pod.spec.node_name,
        ready=_pod_ready(pod),
        running=broker is not None
        and broker.state is not None
        and broker.state.running is not None,
        started=bool(broker is not None and broker.started),
        revision=(pod.metadata.labels or {}).get(REVISION_LABEL),
        claims=claims,
        going=pod.metadata.deletion_timestamp is not None,
    )


def _claimed_volume(core: client.CoreV1Api, claim: str, namespace: str) -> Volume | None:
    found = kube.found(core.read_namespaced_persistent_volume_claim, claim, namespace)
    return None if found is None else _as_volume(found.metadata.name, found.spec)


def ask_brokers(admin: AdminClient, *, draining: bool) -> BrokersView:
    """What the brokers say through ``admin``, with each live broker's draining dirs
    when ``draining``; raises what the client raises when they do not answer."""
    metadata = admin.metadata(None)
    racks = {b.node_id: b.rack for b in sorted(metadata.brokers, key=lambda b: b.node_id)}
    topics = [t.name for t in metadata.topics]
    configs = admin.describe_configs(ConfigResourceType.TOPIC, topics) if topics else {}
    partitions = []
    for topic in sorted(metadata.topics, key=lambda t: t.name):
        entry = configs.get(topic.name, {}).get("min.insync.replicas")
        min_isr = int(entry.value) if entry is not None and entry.value else 1
        partitions.extend(
            Partition(
                topic.name,
                p.partition_index,
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                p.leader_id if p.leader_id >= 0 else None,
                tuple(p.offline_replicas or ()),
                min_isr,
            )
            for p in sorted(topic.partitions, key=lambda p: p.partition_index)
        )
    log_dirs = {
        broker: tuple(
            LogDir(
                d.path,
                None if d.error is None else d.error.name,
                d.total_bytes,
                {tp: r.size for tp, r in d.current().items()},
            )
            for d in dirs
        )
        for broker, dirs in sorted(admin.describe_log_dirs(list(racks)).items())
    }
    reassigning = {tp: r.adding for tp, r in admin.list_reassignments().items()}
    drains = {b: frozenset(admin.draining_dirs(b)) for b in racks} if draining else {}
    controller = metadata.controller_id if metadata.controller_id >= 0 else None
    served = served_fingerprints(admin, {b.node_id: (b.host, b.port) for b in metadata.brokers})
    return BrokersView(racks, controller, tuple(partitions), log_dirs, reassigning, drains, served)
