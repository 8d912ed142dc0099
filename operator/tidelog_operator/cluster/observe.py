"""What the operator sees of a Cluster (its pods, and its brokers through
``tidelog.admin``), and the status that follows from it (a pure function).

The brokers are asked only when some pod is ready; a cluster whose brokers do not answer
yet is reported from its pods alone.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from tidelog.admin import AdminClient, AdminError
from tidelog.protocol.errors import ProtocolError
from tidelog_operator import conditions, names
from tidelog_operator.builders.brokers import bootstrap_address
from tidelog_operator.conditions import Reason
from tidelog_operator.spec import ClusterSpec

__all__ = [
    "BrokerView",
    "Observation",
    "cluster_status",
    "observe",
    "rolling_status",
    "scaling_status",
    "under_way",
    "volume_status",
]

logger = logging.getLogger(__name__)

ADMIN_TIMEOUT_S = 5.0
_REFUSALS = {"refuse": Reason.SCALE_DOWN_REFUSED, "refuse-drain": Reason.DRAIN_REFUSED}


@dataclass(frozen=True)
class BrokerView:
    id: int
    pod: str
    node: str | None
    ready: bool
    rack: str | None = None
    log_dirs: tuple[dict[str, Any], ...] = ()


@dataclass(frozen=True)
class Observation:
    desired: int
    brokers: tuple[BrokerView, ...]
    zookeeper_ready: bool
    reachable: bool = False
    controller: int | None = None
    under_replicated: int = 0
    offline: int = 0
    offline_dirs: tuple[str, ...] = field(default_factory=tuple)

    @property
    def ready_brokers(self) -> int:
        return sum(b.ready for b in self.brokers)


def _pod_ready(pod: client.V1Pod) -> bool:
    return any(c.type == "Ready" and c.status == "True" for c in (pod.status.conditions or []))


def observe(api: client.ApiClient, spec: ClusterSpec) -> Observation:
    core = client.CoreV1Api(api)
    selector = ",".join(f"{k}={v}" for k, v in names.broker_labels(spec.name).items())
    pods = core.list_namespaced_pod(spec.namespace, label_selector=selector).items
    views = {
        int(p.metadata.name.rsplit("-", 1)[1]): BrokerView(
            int(p.metadata.name.rsplit("-", 1)[1]), p.metadata.name, p.spec.node_name, _pod_ready(p)
        )
        for p in pods
    }
    zookeeper_ready = True
    if not spec.zookeeper.external:
        zk_selector = ",".join(f"{k}={v}" for k, v in names.zookeeper_labels(spec.name).items())
        zk_pods = core.list_namespaced_pod(spec.namespace, label_selector=zk_selector).items
        zookeeper_ready = sum(map(_pod_ready, zk_pods)) > spec.zookeeper.replicas // 2
    observation = Observation(
        spec.brokers.replicas, tuple(sorted(views.values(), key=_id)), zookeeper_ready
    )
    if not any(v.ready for v in views.values()):
        return observation
    try:
        return _ask_brokers(spec, observation, views)
    except (OSError, AdminError, ProtocolError) as error:
        logger.info("cluster %s/%s: brokers do not answer: %s", spec.namespace, spec.name, error)
        return observation


def _id(view: BrokerView) -> int:
    return view.id


def _ask_brokers(
    spec: ClusterSpec, observation: Observation, views: dict[int, BrokerView]
) -> Observation:
    admin = AdminClient(bootstrap_address(spec), timeout=ADMIN_TIMEOUT_S)
    metadata = admin.metadata(None)
    racks = {b.node_id: b.rack for b in metadata.brokers}
    under = offline = 0
    for topic in metadata.topics:
        for p in topic.partitions:
            offline += p.leader_id < 0
            under += len(p.isr_nodes) < len(p.replica_nodes)
    dirs = admin.describe_log_dirs(list(racks))
    offline_dirs = []
    brokers = []
    for broker_id, view in sorted(views.items()):
        log_dirs = []
        for d in dirs.get(broker_id, []):
            entry = {"path": d.path, "usedBytes": sum(r.size for r in d.current().values())}
            if d.total_bytes >= 0:
                entry["capacityBytes"] = d.total_bytes
            if d.error is not None:
                entry["error"] = d.error.name
                offline_dirs.append(f"broker {broker_id}: {d.path}")
            log_dirs.append(entry)
        brokers.append(
            BrokerView(
                view.id,
                view.pod,
                view.node,
                view.ready and broker_id in racks,
                racks.get(broker_id),
                tuple(log_dirs),
            )
        )
    return Observation(
        observation.desired,
        tuple(brokers),
        observation.zookeeper_ready,
        reachable=True,
        controller=metadata.controller_id if metadata.controller_id >= 0 else None,
        under_replicated=under,
        offline=offline,
        offline_dirs=tuple(offline_dirs),
    )


def cluster_status(
    current: Mapping[str, Any], seen: Observation, spec: ClusterSpec, *, generation: int, now: str
) -> dict[str, Any]:
    """The status after an observation; the conditions set elsewhere (ConfigValid,
    Progressing while rolling) stay. What only the brokers can tell (partition counts,
    Degraded) is reported when they answered: otherwise the counts go (unknown) and
    Degraded stays as last seen."""
    status = dict(current)
    status.update(
        readyBrokers=seen.ready_brokers,
        bootstrap=bootstrap_address(spec),
        brokers=[_broker_entry(b) for b in seen.brokers],
    )
    if seen.reachable:
        status.update(
            underReplicatedPartitions=seen.under_replicated, offlinePartitions=seen.offline
        )
    else:
        status.pop("underReplicatedPartitions", None)
        status.pop("offlinePartitions", None)
    if seen.controller is not None:
        status["controller"] = seen.controller
    else:
        status.pop("controller", None)
    found = status.get("conditions", [])

    def put(type_: str, holds: bool, reason: str, message: str) -> None:
        nonlocal found
        found = conditions.set_condition(
            found, type_, holds, reason, message, generation=generation, now=now
        )

    if not seen.zookeeper_ready:
        put(
            conditions.READY,
            False,
            Reason.ZOOKEEPER_NOT_READY,
            "ZooKeeper has no quorum of ready servers",
        )
    elif seen.ready_brokers < seen.desired or not seen.reachable:
        put(
            conditions.READY,
            False,
            Reason.BROKERS_NOT_READY,
            f"{seen.ready_brokers} of {seen.desired} brokers ready",
        )
    elif seen.offline:
        put(
            conditions.READY,
            False,
            Reason.PARTITIONS_OFFLINE,
            f"{seen.offline} partitions have no leader",
        )
    else:
        put(conditions.READY, True, Reason.ALL_BROKERS_READY, f"{seen.desired} brokers ready")
    if not seen.reachable:
        pass  # Degraded as last seen: only the brokers can tell
    elif seen.offline_dirs:
        put(
            conditions.DEGRADED,
            True,
            Reason.LOG_DIR_OFFLINE,
            "offline log dirs: " + "; ".join(seen.offline_dirs),
        )
    elif seen.under_replicated:
        put(
            conditions.DEGRADED,
            True,
            Reason.UNDER_REPLICATED,
            f"{seen.under_replicated} partitions have fewer in-sync replicas than replicas",
        )
    else:
        put(conditions.DEGRADED, False, Reason.HEALTHY, "every partition fully replicated")
    status["conditions"] = found
    status["observedGeneration"] = generation
    return status


def _broker_entry(view: BrokerView) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": view.id, "pod": view.pod, "ready": view.ready}
    if view.node:
        entry["node"] = view.node
    if view.rack:
        entry["rack"] = view.rack
    if view.log_dirs:
        entry["logDirs"] = list(view.log_dirs)
    return entry


def rolling_status(
    current: Mapping[str, Any], roll, *, generation: int, now: str
) -> dict[str, Any]:
    """The roll's part of the status: ``rolling`` (which broker, why) and Progressing."""
    status = dict(current)
    if roll.action == "done":
        status.pop("rolling", None)
        holds, reason, message = False, Reason.IDLE, "every broker runs the current pod template"
    else:
        status["rolling"] = {"reason": roll.reason}
        if roll.broker is not None:
            status["rolling"]["broker"] = roll.broker
        holds, reason, message = True, Reason.ROLLING_RESTART, roll.reason
    return _progressing(status, holds, reason, message, generation=generation, now=now)


def volume_status(current: Mapping[str, Any], step, *, generation: int, now: str) -> dict[str, Any]:
    """A change of volumes' part of the status (``volume_moves``' key) and, while removed
    volumes drain, Progressing."""
    status = _merged(current, step.status)
    if not _draining(step):
        return status
    message = step.decision.reason
    return _progressing(
        status, True, Reason.DRAINING_VOLUMES, message, generation=generation, now=now
    )


def _draining(step) -> bool:
    """Whether removed volumes are being drained (``volume_moves``' step)."""
    return step.decision.action in ("drain", "wait") and bool(step.decision.volumes)


def under_way(roll, volumes, step) -> bool:
    """Whether a pass leaves a roll, a drain of volumes or a scaling under way: what the
    Progressing condition set by the three statuses above says, but where a refusal of
    the scaler takes the condition while volumes drain on."""
    return roll.action != "done" or _draining(volumes) or step.decision.progressing


def scaling_status(
    current: Mapping[str, Any], step, *, generation: int, now: str
) -> dict[str, Any]:
    """The scaler's part of the status (``scaling_moves``' keys) and, while it scales or
    refuses to, Progressing (otherwise the roll's says it)."""
    status = _merged(current, step.status)
    decision = step.decision
    if decision.action in _REFUSALS:
        holds, reason, message = False, _REFUSALS[decision.action], decision.reason
    elif decision.progressing:
        holds, reason, message = True, Reason.SCALING, decision.reason + _progress(status)
    else:
        return status
    return _progressing(status, holds, reason, message, generation=generation, now=now)


def _merged(current: Mapping[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """``current`` with ``updates`` (a key set to None goes)."""
    status = {**current, **updates}
    for key in [k for k, v in updates.items() if v is None]:
        del status[key]
    return status


def _progressing(
    status: dict[str, Any], holds: bool, reason: str, message: str, *, generation: int, now: str
) -> dict[str, Any]:
    status["conditions"] = conditions.set_condition(
        status.get("conditions", []),
        conditions.PROGRESSING,
        holds,
        reason,
        message,
        generation=generation,
        now=now,
    )
    return status


def _progress(status: Mapping[str, Any]) -> str:
    move = status.get("rebalance") or {}
    if move.get("state") != "Running":
        return ""
    return (
        f": {move['partitionsDone']}/{move['partitions']} partitions, "
        f"{move['bytesDone']}/{move['bytes']} bytes"
    )
