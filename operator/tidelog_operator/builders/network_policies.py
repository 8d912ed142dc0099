"""The NetworkPolicies (``networking.k8s.io/v1``, ingress only) that say who may connect
to a Cluster's pods, as Strimzi's do:

- ``<cluster>-network-policy-brokers`` selects the brokers. Each application listener's
  port admits its ``networkPolicyPeers`` (none: everyone, also from outside the
  cluster through a nodeport listener). The REPLICATION port (:data:`REPLICATION_PORT`)
  admits only the Cluster's brokers and the operator's pods.
- ``<cluster>-network-policy-zookeeper``, when the Cluster runs its own ensemble,
  selects its ZooKeeper servers. The quorum's ports (peer and election) admit only
  those servers; every other port of the ensemble's Service (the client port, and any
  other the brokers use) admits the brokers and the operator's pods.

Every other port of the selected pods is closed to other pods. The kubelet's probes come
from the pod's own node, which enforcers admit whatever the policies say, so probes need
no rule. The operator's pods are named by their namespace (its
``kubernetes.io/metadata.name`` label, which Kubernetes sets) and their labels
(:class:`~tidelog_operator.operator_identity.OperatorIdentity`).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from tidelog_operator import names
from tidelog_operator.builders import zookeeper
from tidelog_operator.operator_identity import OperatorIdentity
from tidelog_operator.spec import ClusterSpec
from tidelog_operator.spec_security import REPLICATION_PORT

__all__ = [
    "NAMESPACE_NAME_LABEL",
    "brokers_network_policy",
    "brokers_policy_name",
    "network_policies",
    "zookeeper_network_policy",
    "zookeeper_policy_name",
]

# Kubernetes labels every namespace with its own name.
NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"
QUORUM_PORTS = (names.ZOOKEEPER_PEER_PORT, names.ZOOKEEPER_ELECTION_PORT)


def brokers_policy_name(cluster: str) -> str:
    return f"{cluster}-network-policy-brokers"


def zookeeper_policy_name(cluster: str) -> str:
    return f"{cluster}-network-policy-zookeeper"


def _operator_peer(operator: OperatorIdentity) -> dict[str, Any]:
    """The operator's pods, wherever they run (one peer: both selectors must match)."""
    return {
        "namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: operator.namespace}},
        "podSelector": {"matchLabels": dict(operator.labels)},
    }


def _pods_peer(labels: Mapping[str, str]) -> dict[str, Any]:
    """Pods of the policy's own namespace (the Cluster's) carrying ``labels``."""
    return {"podSelector": {"matchLabels": dict(labels)}}


def _rule(ports: list[int], peers: list[dict[str, Any]]) -> dict[str, Any]:
    """Ingress to ``ports`` from ``peers``; from everyone when there are none."""
    rule: dict[str, Any] = {"ports": [{"protocol": "TCP", "port": port} for port in ports]}
    if peers:
        rule["from"] = peers
    return rule


def _policy(
    name: str, spec: ClusterSpec, selected: Mapping[str, str], rules: list[dict[str, Any]]
) -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "NetworkPolicy",
        "metadata": {
            "name": name,
            "namespace": spec.namespace,
            "labels": names.cluster_labels(spec.name),
        },
        "spec": {
            "podSelector": {"matchLabels": dict(selected)},
            "policyTypes": ["Ingress"],
            "ingress": rules,
        },
    }


def brokers_network_policy(spec: ClusterSpec, operator: OperatorIdentity) -> dict[str, Any]:
    """The brokers' policy: REPLICATION from the brokers and the operator, each
    application listener from its peers (copied, so that the spec is never shared)."""
    brokers = names.broker_labels(spec.name)
    rules = [_rule([REPLICATION_PORT], [_pods_peer(brokers), _operator_peer(operator)])]
    rules += [
        _rule(
            [listener.port], [copy.deepcopy(dict(peer)) for peer in listener.network_policy_peers]
        )
        for listener in spec.listeners
    ]
    return _policy(brokers_policy_name(spec.name), spec, brokers, rules)


def zookeeper_network_policy(
    spec: ClusterSpec, operator: OperatorIdentity
) -> dict[str, Any] | None:
    """The ensemble's policy; None when the Cluster uses an external ensemble."""
    if spec.zookeeper.external:
        return None
    servers = names.zookeeper_labels(spec.name)
    served = [port["port"] for port in zookeeper.zookeeper_service(spec)["spec"]["ports"]]
    clients = [port for port in served if port not in QUORUM_PORTS]
    quorum = [port for port in served if port in QUORUM_PORTS]
    rules = [
        _rule(clients, [_pods_peer(names.broker_labels(spec.name)), _operator_peer(operator)]),
        _rule(quorum, [_pods_peer(servers)]),
    ]
    return _policy(zookeeper_policy_name(spec.name), spec, servers, rules)


def network_policies(spec: ClusterSpec, operator: OperatorIdentity) -> list[dict[str, Any]]:
    """The Cluster's policies: the brokers' and, with its own ensemble, ZooKeeper's."""
    ensemble = zookeeper_network_policy(spec, operator)
    return [brokers_network_policy(spec, operator), *([ensemble] if ensemble else [])]
