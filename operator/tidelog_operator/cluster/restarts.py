"""What the roller needs observed (the brokers' pods and revisions, the partitions with
their ISRs and ``min.insync.replicas``) and its one action, the deletion of a broker's
pod; the decision itself is ``rolling.decide_roll``'s."""

from __future__ import annotations

import logging
from dataclasses import replace

from kubernetes import client

from tidelog.admin import AdminClient
from tidelog.admin.topics import ConfigResourceType
from tidelog_operator import names
from tidelog_operator.builders.brokers import bootstrap_address
from tidelog_operator.cluster.rolling import BrokerState, PartitionState, RollDecision, decide_roll
from tidelog_operator.cluster_client import ADMIN_TIMEOUT_S
from tidelog_operator.spec import ClusterSpec

__all__ = ["roll_once"]

logger = logging.getLogger(__name__)

REVISION_LABEL = "controller-revision-hash"


def _ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def _partitions(admin: AdminClient) -> tuple[list[PartitionState], int | None]:
    metadata = admin.metadata(None)
    topics = [t.name for t in metadata.topics]
    configs = admin.describe_configs(ConfigResourceType.TOPIC, topics) if topics else {}
    partitions = []
    for topic in metadata.topics:
        entry = configs.get(topic.name, {}).get("min.insync.replicas")
        min_isr = int(entry.value) if entry is not None and entry.value else 1
        partitions.extend(
            PartitionState(
                f"{topic.name}-{p.partition_index}",
                tuple(p.replica_nodes),
                tuple(p.isr_nodes),
                min_isr,
            )
            for p in topic.partitions
        )
    controller = metadata.controller_id if metadata.controller_id >= 0 else None
    return partitions, controller


def roll_once(api: client.ApiClient, spec: ClusterSpec) -> RollDecision:
    """Observe, decide, and restart a broker when the decision says so."""
    apps, core = client.AppsV1Api(api), client.CoreV1Api(api)
    statefulset = apps.read_namespaced_stateful_set(
        names.brokers_statefulset(spec.name), spec.namespace
    )
    revision = statefulset.status.update_revision
    selector = ",".join(f"{k}={v}" for k, v in names.broker_labels(spec.name).items())
    pods = core.list_namespaced_pod(spec.namespace, label_selector=selector).items
    if not revision or all(p.metadata.labels.get(REVISION_LABEL) == revision for p in pods):
        return RollDecision("done")
    claims = {t.metadata.name for t in statefulset.spec.volume_claim_templates or []}
    brokers = [
        BrokerState(
            id=int(p.metadata.name.rsplit("-", 1)[1]),
            stale=p.metadata.labels.get(REVISION_LABEL) != revision,
            ready=_ready(p),
            lacks_volumes=not claims <= {v.name for v in p.spec.volumes or []},
            going=p.metadata.deletion_timestamp is not None,
        )
        for p in pods
    ]
    missing = frozenset(range(statefulset.spec.replicas)) - {b.id for b in brokers}
    partitions: list[PartitionState] = []
    # an unready stale broker restarts without asking, unless one lacking a new volume
    # goes first (decide_roll): that one's restart checks min.insync.replicas
    lacking = any(b.lacks_volumes for b in brokers)
    if lacking or not any(b.stale and not b.ready for b in brokers):
        admin = AdminClient(bootstrap_address(spec), timeout=ADMIN_TIMEOUT_S)
        partitions, controller = _partitions(admin)
        brokers = [replace(b, controller=b.id == controller) for b in brokers]
    decision = decide_roll(brokers, partitions, missing)
    if decision.action == "restart":
        pod = names.broker_pod(spec.name, decision.broker)
        logger.info(
            "cluster %s/%s: restarting %s: %s", spec.namespace, spec.name, pod, decision.reason
        )
        core.delete_namespaced_pod(pod, spec.namespace)
    return decision
