"""A Cluster's NetworkPolicies, made by its pass against a real API server: the brokers'
and its own ensemble's, owned by the Cluster (deleting it collects them), accepted by the
API server as the spec's peers and the operator's environment make them, and left alone
by a second pass. Who they admit: ``test_network_policies.py``; that a pod network
enforces them: the e2e tests.

No kubelet runs here and no broker is asked (no pod is ready): the pass is called
directly, as the daemon calls it.
"""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kube_operator.pass_helpers import create_cluster, pass_without_brokers

GROUP, VERSION = "tidelog.dev", "v1alpha1"
ORDERS = {"podSelector": {"matchLabels": {"app": "orders"}}}
PARTNERS = {
    "namespaceSelector": {
        "matchExpressions": [{"key": "team", "operator": "In", "values": ["payments"]}]
    },
    "podSelector": {},
}
OFFICE = {"ipBlock": {"cidr": "192.0.2.0/24", "except": ["192.0.2.7/32"]}}


@pytest.fixture
def cluster(tidelog_crds, kube_api, kube_namespace, monkeypatch) -> dict:
    monkeypatch.setenv("TIDELOG_OPERATOR_NAMESPACE", "tidelog-ops")
    monkeypatch.setenv("TIDELOG_OPERATOR_LABELS", "app.kubernetes.io/name=tidelog-operator,x=y")
    listeners = [
        {"name": "internal", "port": 9092},
        {"name": "orders", "port": 9100, "networkPolicyPeers": [ORDERS, OFFICE]},
        {"name": "partners", "port": 9101, "networkPolicyPeers": [PARTNERS]},
    ]
    return create_cluster(kube_api, kube_namespace, listeners=listeners, zookeeper={"replicas": 1})


def test_the_pass_makes_both_policies_owned_by_the_cluster(cluster, kube_api, kube_namespace):
    ns, networking = kube_namespace, client.NetworkingV1Api(kube_api)
    pass_without_brokers(kube_api, ns)
    policies = {
        p.metadata.name: p
        for p in networking.list_namespaced_network_policy(
            ns, label_selector="tidelog.dev/cluster=events"
        ).items
    }
    assert set(policies) == {"events-network-policy-brokers", "events-network-policy-zookeeper"}
    for policy in policies.values():
        (owner,) = policy.metadata.owner_references
        assert (owner.kind, owner.uid, owner.controller) == (
            "Cluster",
            cluster["metadata"]["uid"],
            True,
        )
        assert policy.spec.policy_types == ["Ingress"]

    sanitize = client.ApiClient().sanitize_for_serialization
    brokers = sanitize(policies["events-network-policy-brokers"].spec)
    assert brokers["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "broker"
    rules = {rule["ports"][0]["port"]: rule for rule in brokers["ingress"]}
    assert sorted(rules) == [9091, 9092, 9100, 9101]
    assert "from" not in rules[9092]
    assert rules[9100]["from"] == [ORDERS, OFFICE]
    assert rules[9101]["from"] == [PARTNERS]
    operator = {
        "namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "tidelog-ops"}},
        "podSelector": {"matchLabels": {"app.kubernetes.io/name": "tidelog-operator", "x": "y"}},
    }
    assert rules[9091]["from"][1] == operator

    ensemble = sanitize(policies["events-network-policy-zookeeper"].spec)
    assert ensemble["podSelector"]["matchLabels"]["app.kubernetes.io/component"] == "zookeeper"
    service = client.CoreV1Api(kube_api).read_namespaced_service("events-zookeeper", ns)
    served = [port.port for port in service.spec.ports]
    assert [[p["port"] for p in rule["ports"]] for rule in ensemble["ingress"]] == [
        [port for port in served if port not in (2888, 3888)],
        [2888, 3888],
    ]
    assert ensemble["ingress"][0]["from"][1] == operator

    versions = {name: p.metadata.resource_version for name, p in policies.items()}
    pass_without_brokers(kube_api, ns)
    assert {
        p.metadata.name: p.metadata.resource_version
        for p in networking.list_namespaced_network_policy(ns).items
    } == versions


@pytest.mark.parametrize(
    ("peer", "message"),
    [
        ({}, "a peer needs a podSelector, a namespaceSelector or an ipBlock"),
        ({**ORDERS, **OFFICE}, "an ipBlock peer has no podSelector or namespaceSelector"),
        (
            {"podSelector": {"matchExpressions": [{"key": "app", "operator": "In"}]}},
            "In and NotIn need values",
        ),
        (
            {
                "namespaceSelector": {
                    "matchExpressions": [{"key": "a", "operator": "Exists", "values": ["b"]}]
                }
            },
            "Exists and DoesNotExist take none",
        ),
        ({"podSelector": {"matchExpressions": [{"key": "a", "operator": "Has"}]}}, "Has"),
    ],
)
def test_a_peer_kubernetes_would_refuse_is_refused_with_the_cluster(
    tidelog_crds, kube_api, kube_namespace, peer, message
):
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Cluster",
        "metadata": {"name": "events"},
        "spec": {
            "listeners": [{"name": "internal", "port": 9092, "networkPolicyPeers": [peer]}],
            "storage": {"volumes": [{"id": 0, "size": "1Gi"}]},
        },
    }
    with pytest.raises(ApiException) as refused:
        client.CustomObjectsApi(kube_api).create_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, "clusters", body
        )
    assert refused.value.status == 422
    assert message in refused.value.body
