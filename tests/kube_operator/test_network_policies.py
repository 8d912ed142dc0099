"""A Cluster's NetworkPolicies (pure): who may connect to which port of its brokers and
ZooKeeper servers, read by a small evaluator of NetworkPolicy's ingress rules (label
equality only, as the operator's own peers use) against pods labelled as the builders'
StatefulSets label theirs. The operator's identity from its environment. Enforced on a
real pod network: the e2e tests'; made against a real API server:
``test_cluster_network_policies.py``."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pytest

from tidelog_operator import names
from tidelog_operator.builders import brokers, network_policies, zookeeper
from tidelog_operator.cluster.children import desired_children
from tidelog_operator.operator_identity import (
    DEFAULT_NAMESPACE,
    OperatorIdentity,
    from_environment,
    parse_labels,
)
from tidelog_operator.spec import parse_cluster

STORAGE = {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}}
NAMESPACE = "prod"
OPERATOR_LABELS = {"app.kubernetes.io/name": "tidelog-operator", "app.kubernetes.io/instance": "tl"}
OPERATOR = OperatorIdentity("ops", OPERATOR_LABELS)
ORDERS = {"podSelector": {"matchLabels": {"app": "orders"}}}
PAYMENTS = {
    "namespaceSelector": {"matchLabels": {"team": "payments"}},
    "podSelector": {"matchExpressions": [{"key": "tier", "operator": "Exists"}]},
}
OFFICE = {"ipBlock": {"cidr": "192.0.2.0/24", "except": ["192.0.2.7/32"]}}


@dataclass(frozen=True)
class Pod:
    namespace: str
    labels: Mapping[str, str]
    namespace_labels: Mapping[str, str] = field(default_factory=dict)


def cluster(**spec):
    return parse_cluster("events", NAMESPACE, {**STORAGE, **spec})


def selects(selector: Mapping, labels: Mapping[str, str]) -> bool:
    assert set(selector) <= {"matchLabels"}, "the evaluator reads label equality only"
    return all(labels.get(k) == v for k, v in selector.get("matchLabels", {}).items())


def admitted(policy: dict, pod: Pod, port: int) -> bool:
    """Whether ``policy`` lets ``pod`` connect to ``port`` of the pods it selects."""
    for rule in policy["spec"]["ingress"]:
        if port not in [p["port"] for p in rule["ports"]]:
            continue
        if "from" not in rule:
            return True
        for peer in rule["from"]:
            namespace = {
                **pod.namespace_labels,
                network_policies.NAMESPACE_NAME_LABEL: pod.namespace,
            }
            in_namespace = (
                selects(peer["namespaceSelector"], namespace)
                if "namespaceSelector" in peer
                else pod.namespace == policy["metadata"]["namespace"]
            )
            if in_namespace and selects(peer["podSelector"], pod.labels):
                return True
    return False


def template_labels(statefulset: dict) -> dict[str, str]:
    return statefulset["spec"]["template"]["metadata"]["labels"]


def broker(spec) -> Pod:
    """A broker pod of ``spec``, labelled as its StatefulSet labels it."""
    return Pod(NAMESPACE, template_labels(brokers.statefulset(spec, "hash")))


def zookeeper_server(spec) -> Pod:
    return Pod(NAMESPACE, template_labels(zookeeper.zookeeper_statefulset(spec, "image")))


def by_name(spec, operator: OperatorIdentity = OPERATOR) -> dict[str, dict]:
    return {p["metadata"]["name"]: p for p in network_policies.network_policies(spec, operator)}


OPERATOR_POD = Pod("ops", {**OPERATOR_LABELS, "pod-template-hash": "abc"})
# operator-like labels in the Cluster's namespace, and the operator's namespace without them
IMPOSTOR = Pod(NAMESPACE, OPERATOR_LABELS)
NEIGHBOUR = Pod("ops", {"app": "other"})
APPLICATION = Pod(NAMESPACE, {"app": "orders"})


def test_replication_admits_only_the_clusters_brokers_and_the_operator():
    spec = cluster()
    policy = by_name(spec)["events-network-policy-brokers"]
    assert policy["apiVersion"] == "networking.k8s.io/v1"
    assert policy["metadata"]["namespace"] == NAMESPACE
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    assert selects(policy["spec"]["podSelector"], broker(spec).labels)
    assert not selects(policy["spec"]["podSelector"], zookeeper_server(spec).labels)
    other_cluster = broker(parse_cluster("other", NAMESPACE, STORAGE))
    verdicts = {
        name: admitted(policy, pod, 9091)
        for name, pod in {
            "broker": broker(spec),
            "operator": OPERATOR_POD,
            "impostor": IMPOSTOR,
            "neighbour": NEIGHBOUR,
            "application": APPLICATION,
            "other cluster's broker": other_cluster,
        }.items()
    }
    assert verdicts == {
        "broker": True,
        "operator": True,
        "impostor": False,
        "neighbour": False,
        "application": False,
        "other cluster's broker": False,
    }


def test_a_listener_without_peers_admits_everyone():
    policy = by_name(cluster())["events-network-policy-brokers"]
    (open_rule,) = [r for r in policy["spec"]["ingress"] if r["ports"][0]["port"] == 9092]
    assert open_rule == {"ports": [{"protocol": "TCP", "port": 9092}]}
    for pod in (APPLICATION, NEIGHBOUR, IMPOSTOR):
        assert admitted(policy, pod, 9092)
    assert not admitted(policy, APPLICATION, 2181), "a port no listener has stays closed"


def test_each_listener_admits_exactly_its_own_peers():
    spec = cluster(
        listeners=[
            {"name": "internal", "port": 9092},
            {"name": "orders", "port": 9100, "networkPolicyPeers": [ORDERS]},
            {"name": "partners", "port": 9101, "networkPolicyPeers": [PAYMENTS, OFFICE]},
        ]
    )
    policy = by_name(spec)["events-network-policy-brokers"]
    rules = {r["ports"][0]["port"]: r for r in policy["spec"]["ingress"]}
    assert sorted(rules) == [9091, 9092, 9100, 9101]
    assert all(r["ports"][0]["protocol"] == "TCP" and len(r["ports"]) == 1 for r in rules.values())
    assert "from" not in rules[9092]
    assert rules[9100]["from"] == [ORDERS]
    assert rules[9101]["from"] == [PAYMENTS, OFFICE]
    assert admitted(policy, APPLICATION, 9100)
    assert not admitted(policy, NEIGHBOUR, 9100)
    assert not admitted(policy, Pod("elsewhere", {"app": "orders"}), 9100)
    assert not admitted(policy, APPLICATION, 9091)
    # the policy holds copies: changing it leaves the spec as it was
    rules[9100]["from"][0]["podSelector"]["matchLabels"]["app"] = "changed"
    assert spec.listeners[1].network_policy_peers == (
        {"podSelector": {"matchLabels": {"app": "orders"}}},
    )


def test_zookeeper_admits_the_brokers_and_the_operator_and_its_quorum_only_its_servers():
    spec = cluster()
    policy = by_name(spec)["events-network-policy-zookeeper"]
    server, own_broker = zookeeper_server(spec), broker(spec)
    assert selects(policy["spec"]["podSelector"], server.labels)
    assert not selects(policy["spec"]["podSelector"], own_broker.labels)
    pods = {
        "server": server,
        "broker": own_broker,
        "operator": OPERATOR_POD,
        "impostor": IMPOSTOR,
        "application": APPLICATION,
        "other cluster's broker": broker(parse_cluster("other", NAMESPACE, STORAGE)),
    }
    # the ports the ensemble serves: its clients' (whichever the brokers use) and the quorum's
    served = [p["port"] for p in zookeeper.zookeeper_service(spec)["spec"]["ports"]]
    clients = set(served) - {2888, 3888}
    assert clients and {2888, 3888} < set(served)
    verdicts = {
        port: {name for name, pod in pods.items() if admitted(policy, pod, port)} for port in served
    }
    assert verdicts == {
        **{port: {"broker", "operator"} for port in clients},
        2888: {"server"},
        3888: {"server"},
    }


def test_an_external_ensemble_gets_no_zookeeper_policy():
    spec = cluster(zookeeper={"connect": "zookeeper.example:2181"})
    assert list(by_name(spec)) == ["events-network-policy-brokers"]
    assert network_policies.zookeeper_network_policy(spec, OPERATOR) is None


def test_the_policies_are_the_clusters_first_children():
    objects = desired_children(cluster(), OPERATOR).objects
    assert [(o["kind"], o["metadata"]["name"]) for o in objects[:2]] == [
        ("NetworkPolicy", "events-network-policy-brokers"),
        ("NetworkPolicy", "events-network-policy-zookeeper"),
    ]
    assert objects[0]["metadata"]["labels"] == names.cluster_labels("events")
    assert [o["kind"] for o in objects[2:]].count("NetworkPolicy") == 0


def test_the_operator_learns_who_it_is_from_its_environment():
    environ = {
        "TIDELOG_OPERATOR_NAMESPACE": "ops",
        "TIDELOG_OPERATOR_LABELS": "app.kubernetes.io/instance=tl, app.kubernetes.io/name=x",
    }
    assert from_environment(environ) == OperatorIdentity(
        "ops", {"app.kubernetes.io/instance": "tl", "app.kubernetes.io/name": "x"}
    )
    default = from_environment({"TIDELOG_OPERATOR_LABELS": ""})
    assert default == OperatorIdentity(
        DEFAULT_NAMESPACE, {"app.kubernetes.io/name": "tidelog-operator"}
    )
    policy = by_name(cluster(), from_environment(environ))["events-network-policy-brokers"]
    operator = Pod("ops", {"app.kubernetes.io/instance": "tl", "app.kubernetes.io/name": "x"})
    assert admitted(policy, operator, 9091)


@pytest.mark.parametrize("text", ["app", "=x", "a=b,,c=d", "a=b,c"])
def test_labels_that_are_not_key_value_terms_are_refused(text):
    with pytest.raises(ValueError, match="TIDELOG_OPERATOR_LABELS"):
        parse_labels(text)
