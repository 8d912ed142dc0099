"""Everything a Cluster should have, from its spec alone: ZooKeeper (unless external),
the NetworkPolicies, the brokers' configuration, Services, disruption budget and
StatefulSet, and the outcome of the config check (``ConfigValid``)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from tidelog_operator import operator_identity
from tidelog_operator.broker_config import CheckedConfig, check_config, server_properties
from tidelog_operator.builders import brokers, listeners, network_policies, zookeeper
from tidelog_operator.spec import ClusterSpec

__all__ = ["Children", "desired_children"]


@dataclass(frozen=True)
class Children:
    objects: list[dict[str, Any]]
    config: CheckedConfig
    config_hash: str


def desired_children(
    spec: ClusterSpec,
    operator: operator_identity.OperatorIdentity | None = None,
    zookeeper_certificates: int = 0,
    ca_trust: tuple[str, str] | None = None,
) -> Children:
    """The namespaced objects of the Cluster, in the order they are applied; the
    policies admit ``operator``'s pods, by default those the environment names
    (:func:`~tidelog_operator.operator_identity.from_environment`); the ZooKeeper
    servers' certificates were issued ``zookeeper_certificates`` times; ``ca_trust``:
    the brokers' and ZooKeeper's pod template markers of the CAs they trust
    (``certificate_step.ca_trust_markers``), none when not given."""
    connect = zookeeper.connect_string(spec)
    defaults = brokers.default_keys(spec)
    keys = {**defaults, **brokers.broker_keys(spec, connect, 0)}
    checked = check_config(spec.brokers.config, keys)
    properties = server_properties(brokers.operator_keys(spec, connect), checked.accepted, defaults)
    config_hash = hashlib.sha256(properties.encode()).hexdigest()[:16]
    operator = operator or operator_identity.from_environment()
    objects: list[dict[str, Any]] = network_policies.network_policies(spec, operator)
    brokers_trust, zookeeper_trust = ca_trust or (None, None)
    ensemble = zookeeper.zookeeper_statefulset(
        spec, spec.brokers.image, zookeeper_certificates, zookeeper_trust
    )
    if ensemble is not None:
        objects += [zookeeper.zookeeper_service(spec), ensemble]
    objects += [
        brokers.service_account(spec),
        brokers.broker_config_map(spec, properties),
        brokers.brokers_service(spec),
        brokers.bootstrap_service(spec),
        *listeners.node_port_services(spec),
        brokers.pod_disruption_budget(spec),
        brokers.statefulset(spec, config_hash, brokers_trust),
    ]
    return Children(objects, checked, config_hash)
