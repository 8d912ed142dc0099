"""A Cluster's spec as typed values, with the CRD's defaults (``crds/cluster.yaml``) for
what the API server has not filled in (objects made before a default existed)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidelog_operator.spec_security import (
    DEFAULT_LISTENERS,
    AuthorizationSpec,
    CertificatesSpec,
    ListenerSpec,
    parse_authorization,
    parse_certificates,
    parse_listeners,
)

__all__ = [
    "DEFAULT_BROKER_IMAGE",
    "BrokersSpec",
    "ClusterSpec",
    "LocalDisks",
    "RebalanceSpec",
    "Volume",
    "ZooKeeperSpec",
    "local_volume_labels",
    "parse_cluster",
]

# The broker image of Clusters that name none (the chart sets it to its own version).
DEFAULT_BROKER_IMAGE = os.environ.get("TIDELOG_BROKER_IMAGE", "tidelog-broker:0.1.0")
DATA_DIR = "/var/lib/tidelog/data-{}"


@dataclass(frozen=True)
class Volume:
    """One JBOD volume of every broker: its claim ``data-<id>`` and log dir."""

    id: int
    size: str
    storage_class: str | None = None
    selector: Mapping[str, str] | None = None  # local disks: the PV labels to bind to

    @property
    def claim(self) -> str:
        return f"data-{self.id}"

    @property
    def path(self) -> str:
        return DATA_DIR.format(self.id)


@dataclass(frozen=True)
class LocalDisks:
    """Disks mounted at the same paths on the selected nodes."""

    disks: tuple[str, ...]
    size: str
    node_selector: Mapping[str, str]
    storage_class: str = "tidelog-local"


@dataclass(frozen=True)
class BrokersSpec:
    replicas: int = 3
    image: str = DEFAULT_BROKER_IMAGE
    image_pull_policy: str = "IfNotPresent"
    resources: Mapping[str, Any] = field(default_factory=dict)
    config: Mapping[str, object] = field(default_factory=dict)
    rack_topology_key: str | None = None
    termination_grace_period_seconds: int = 120


@dataclass(frozen=True)
class ZooKeeperSpec:
    replicas: int = 3
    connect: str | None = None
    size: str = "1Gi"
    storage_class: str | None = None
    ephemeral: bool = False

    @property
    def external(self) -> bool:
        return self.connect is not None


@dataclass(frozen=True)
class RebalanceSpec:
    """How the operator moves data (scale-up, scale-down, rebalances): the replication
    throttle of each broker while it moves, in bytes/s (0: none), and how often it elects
    the preferred leaders (0: never on a schedule)."""

    throttle_bytes_per_second: int = 50 * 1024 * 1024
    leader_interval_seconds: int = 300


@dataclass(frozen=True)
class ClusterSpec:
    name: str
    namespace: str
    brokers: BrokersSpec
    volumes: tuple[Volume, ...]
    local: LocalDisks | None
    claim_retention: str
    zookeeper: ZooKeeperSpec
    replace_lost_volumes: bool = False
    drain_failed_dirs: bool = False
    rebalance: RebalanceSpec = field(default_factory=RebalanceSpec)
    listeners: tuple[ListenerSpec, ...] = DEFAULT_LISTENERS
    authorization: AuthorizationSpec = field(default_factory=AuthorizationSpec)
    certificates: CertificatesSpec = field(default_factory=CertificatesSpec)


def local_volume_labels(cluster: str, namespace: str, disk: int) -> dict[str, str]:
    """The labels of the local PersistentVolumes of a Cluster's disk ``disk``; its
    brokers' claims select them, so that claim ``data-<i>`` binds to disk ``i``."""
    return {
        "tidelog.dev/cluster": cluster,
        "tidelog.dev/namespace": namespace,
        "tidelog.dev/disk": str(disk),
    }


def parse_cluster(name: str, namespace: str, spec: Mapping[str, Any]) -> ClusterSpec:
    """The Cluster ``namespace/name`` of ``spec``; ValueError for a maintenance window
    that is not a cron expression (:func:`parse_certificates`)."""
    brokers = spec.get("brokers") or {}
    rack = brokers.get("rack") or {}
    storage = spec.get("storage") or {}
    zookeeper = spec.get("zookeeper") or {}
    rebalance = spec.get("rebalance") or {}
    local = None
    if storage.get("local"):
        raw = storage["local"]
        local = LocalDisks(
            disks=tuple(raw["disks"]),
            size=raw["size"],
            node_selector=dict(raw.get("nodeSelector") or {}),
            storage_class=raw.get("storageClass") or "tidelog-local",
        )
        volumes = tuple(
            Volume(i, local.size, local.storage_class, local_volume_labels(name, namespace, i))
            for i in range(len(local.disks))
        )
    else:
        volumes = tuple(
            Volume(v["id"], v["size"], v.get("class"))
            for v in sorted(storage.get("volumes") or [], key=lambda v: v["id"])
        )
    return ClusterSpec(
        name=name,
        namespace=namespace,
        brokers=BrokersSpec(
            replicas=brokers.get("replicas", 3),
            image=brokers.get("image") or DEFAULT_BROKER_IMAGE,
            image_pull_policy=brokers.get("imagePullPolicy", "IfNotPresent"),
            resources=dict(brokers.get("resources") or {}),
            config=dict(brokers.get("config") or {}),
            rack_topology_key=rack.get("topologyKey"),
            termination_grace_period_seconds=brokers.get("terminationGracePeriodSeconds", 120),
        ),
        volumes=volumes,
        local=local,
        claim_retention=storage.get("claimRetention", "Retain"),
        replace_lost_volumes=storage.get("replaceLostVolumes", False),
        drain_failed_dirs=storage.get("drainFailedDirs", False),
        zookeeper=ZooKeeperSpec(
            replicas=zookeeper.get("replicas", 3),
            connect=zookeeper.get("connect"),
            size=zookeeper.get("size", "1Gi"),
            storage_class=zookeeper.get("storageClass"),
            ephemeral=zookeeper.get("ephemeral", False),
        ),
        rebalance=RebalanceSpec(
            throttle_bytes_per_second=rebalance.get(
                "throttleBytesPerSecond", RebalanceSpec.throttle_bytes_per_second
            ),
            leader_interval_seconds=(rebalance.get("leaders") or {}).get(
                "intervalSeconds", RebalanceSpec.leader_interval_seconds
            ),
        ),
        listeners=parse_listeners(spec.get("listeners")),
        authorization=parse_authorization(spec.get("authorization")),
        certificates=parse_certificates(spec.get("certificates")),
    )
