"""The CRDs of ``crds/`` on a real API server, applied as a user applies them: they
install and are served, the server fills in their defaults, rejects bad objects with
the schema's own messages (CEL rules included), ``kubectl explain`` teaches every
field, and ``kubectl get tidelog`` lists all four kinds. Without a server: every field
of every schema has a description, and the schemas are structural."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubeapi.control_plane import ControlPlane

CRDS = Path(__file__).resolve().parents[2] / "crds"
GROUP, VERSION = "tidelog.dev", "v1alpha1"
PLURALS = {
    "Cluster": "clusters",
    "Topic": "topics",
    "ConsumerGroup": "consumergroups",
    "User": "users",
}


def crd_documents() -> list[dict]:
    return [yaml.safe_load(path.read_text()) for path in sorted(CRDS.glob("*.yaml"))]


def walk(schema: dict, path: str) -> Iterator[tuple[str, dict]]:
    yield path, schema
    for name, child in schema.get("properties", {}).items():
        yield from walk(child, f"{path}.{name}")
    if isinstance(schema.get("items"), dict):
        yield from walk(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from walk(schema["additionalProperties"], f"{path}{{}}")


SCHEMA_KEYWORDS = {
    "type",
    "description",
    "properties",
    "items",
    "additionalProperties",
    "required",
    "enum",
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "minItems",
    "maxItems",
    "anyOf",
    "nullable",
}


def test_every_schema_node_holds_only_schema_keywords():
    """A flow mapping whose description holds a comma (``{type: string, description:
    Why, for a human.}``) makes a key of the rest: the API server refuses such a CRD on
    update. Every key of every schema node must be an OpenAPI keyword."""
    for document in crd_documents():
        (version,) = document["spec"]["versions"]
        for path, schema in walk(
            version["schema"]["openAPIV3Schema"], document["spec"]["names"]["kind"]
        ):
            odd = {
                k for k in schema if k not in SCHEMA_KEYWORDS and not k.startswith("x-kubernetes-")
            }
            assert not odd, f"{path}: {odd}"


def test_every_field_is_described_and_typed():
    documents = crd_documents()
    assert {d["spec"]["names"]["kind"] for d in documents} == set(PLURALS)
    for document in documents:
        (version,) = document["spec"]["versions"]
        root = version["schema"]["openAPIV3Schema"]
        for path, schema in walk(root, document["spec"]["names"]["kind"]):
            if path.endswith(("{}", "[]")):
                continue  # a map's values and a list's items are described by it
            assert schema.get("description"), f"{path} has no description"
            assert schema.get("type") or schema.get("x-kubernetes-int-or-string"), path
        assert document["spec"]["names"]["categories"] == ["tidelog"]
        assert version["subresources"]["status"] == {}


@pytest.fixture
def crds_installed(tidelog_crds: ControlPlane) -> ControlPlane:
    return tidelog_crds


def apply(plane: ControlPlane, namespace: str, kind: str, name: str, spec: dict):
    document = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": kind,
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }
    return plane.kubectl("apply", "-f", "-", stdin=json.dumps(document))


CLUSTER = {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}}
TOPIC = {"clusterRef": "c", "partitions": 3, "replicationFactor": 2}
SPARK = {"application": {"module": "pipeline"}}
ONE_OF_APPLICATION = "application needs exactly one of module and configMap"
LISTENER = {"name": "app", "port": 9100}
USER = {"clusterRef": "c", "authentication": {"type": "scram-sha-512"}}
TOPIC_ACL = {"resource": {"type": "topic", "name": "orders"}, "operations": ["Read"]}


def acls(*entries: dict) -> dict:
    return {**USER, "authorization": {"acls": list(entries)}}


def password_from(secret: str) -> dict:
    return {"valueFrom": {"secretKeyRef": {"name": secret, "key": "password"}}}


def listeners(*entries: dict) -> dict:
    return {**CLUSTER, "listeners": list(entries)}


def test_the_server_fills_in_the_defaults(crds_installed, kube_api, kube_namespace):
    assert apply(crds_installed, kube_namespace, "Cluster", "c", CLUSTER).returncode == 0
    stored = client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, kube_namespace, "clusters", "c"
    )
    brokers = stored["spec"]["brokers"]
    assert (brokers["replicas"], brokers["terminationGracePeriodSeconds"]) == (3, 120)
    assert brokers["imagePullPolicy"] == "IfNotPresent"
    assert stored["spec"]["storage"]["claimRetention"] == "Retain"
    assert stored["spec"]["zookeeper"] == {"size": "1Gi", "ephemeral": False}
    assert stored["spec"]["listeners"] == [
        {
            "name": "internal",
            "port": 9092,
            "type": "internal",
            "tls": True,
            "authentication": "scram-sha-512",
        }
    ]
    group = {"clusterRef": "c", "spark": SPARK}
    assert apply(crds_installed, kube_namespace, "ConsumerGroup", "g", group).returncode == 0
    spark = client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, kube_namespace, "consumergroups", "g"
    )["spec"]["spark"]
    assert spark["driver"] == {"cores": 1, "memory": "512m", "cpuRequest": "250m"}
    assert spark["executor"] == {"instances": 1, "cores": 1, "memory": "512m", "cpuRequest": "250m"}
    assert spark["checkpoint"] == {"size": "1Gi"}
    assert apply(crds_installed, kube_namespace, "User", "u", acls(TOPIC_ACL)).returncode == 0
    user = client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, kube_namespace, "users", "u"
    )["spec"]
    assert user["authorization"] == {
        "type": "simple",
        "acls": [
            {
                "resource": {"type": "topic", "name": "orders", "patternType": "literal"},
                "operations": ["Read"],
                "host": "*",
                "type": "allow",
            }
        ],
    }


@pytest.mark.parametrize(
    ("kind", "spec", "message"),
    [
        ("Cluster", {"storage": {}}, "give exactly one of storage.volumes and storage.local"),
        (
            "Cluster",
            {"storage": {**CLUSTER["storage"], "local": {"disks": ["/d"], "size": "1Gi"}}},
            "give exactly one of storage.volumes and storage.local",
        ),
        ("Cluster", {**CLUSTER, "brokers": {"replicas": 0}}, "spec.brokers.replicas"),
        ("Cluster", {**CLUSTER, "zookeeper": {"replicas": 2}}, "an odd number of servers"),
        (
            "Cluster",
            {**CLUSTER, "zookeeper": {"replicas": 3, "connect": "zk:2181"}},
            "zookeeper.connect (an external ensemble) and zookeeper.replicas",
        ),
        (
            "Cluster",
            {"storage": {"volumes": [{"id": 0, "size": "big"}]}},
            "spec.storage.volumes[0].size",
        ),
        ("Cluster", {"storage": {"local": {"disks": ["relative"], "size": "1Gi"}}}, "disks[0]"),
        ("Cluster", {**CLUSTER, "brokers": {"imagePullPolicy": "Sometimes"}}, "Unsupported value"),
        (
            "Cluster",
            listeners(LISTENER, {**LISTENER, "name": "other"}),
            "each listener needs a port of its own",
        ),
        ("Cluster", listeners({**LISTENER, "port": 9091}), "9091 is the REPLICATION listener's"),
        (
            "Cluster",
            listeners({**LISTENER, "name": "replication"}),
            "replication is the brokers' own listener",
        ),
        ("Cluster", listeners({**LISTENER, "name": "App"}), "spec.listeners[0].name"),
        (
            "Cluster",
            listeners({**LISTENER, "tls": False, "authentication": "tls"}),
            "authentication tls (client certificates) needs tls true",
        ),
        ("Cluster", listeners({**LISTENER, "type": "nodeport"}), "a nodeport listener needs"),
        (
            "Cluster",
            listeners({**LISTENER, "host": "kafka.example.com"}),
            "nodePortBase and host are for nodeport listeners",
        ),
        ("Cluster", {**CLUSTER, "authorization": {"type": "opa"}}, "Unsupported value"),
        ("Topic", {**TOPIC, "partitions": 0}, "spec.partitions"),
        ("Topic", {"clusterRef": "c", "partitions": 1}, "spec.replicationFactor: Required value"),
        ("Topic", {**TOPIC, "topicName": "no spaces"}, "spec.topicName"),
        (
            "ConsumerGroup",
            {"clusterRef": "c", "reset": {"id": "1", "to": "offset"}},
            "reset.value is required",
        ),
        (
            "ConsumerGroup",
            {"clusterRef": "c", "reset": {"id": "1", "to": "middle"}},
            "Unsupported value",
        ),
        ("ConsumerGroup", {"clusterRef": "c", "spark": {"application": {}}}, ONE_OF_APPLICATION),
        (
            "ConsumerGroup",
            {
                "clusterRef": "c",
                "spark": {
                    "application": {"module": "pipeline", "configMap": {"name": "a", "key": "b"}}
                },
            },
            ONE_OF_APPLICATION,
        ),
        (
            "ConsumerGroup",
            {"clusterRef": "c", "spark": {"application": {"module": "tidelog_spark.pipeline"}}},
            "spec.spark.application.module",
        ),
        (
            "ConsumerGroup",
            {"clusterRef": "c", "spark": {**SPARK, "driver": {"memory": "lots"}}},
            "spec.spark.driver.memory",
        ),
        (
            "ConsumerGroup",
            {"clusterRef": "c", "spark": {**SPARK, "executor": {"instances": 0}}},
            "spec.spark.executor.instances",
        ),
        ("User", {"clusterRef": "c"}, "spec.authentication: Required value"),
        ("User", {**USER, "authentication": {"type": "plain"}}, "Unsupported value"),
        (
            "User",
            {**USER, "authentication": {"type": "tls", "password": password_from("pw")}},
            "password is for scram-sha-512 users; a tls user has a certificate",
        ),
        (
            "User",
            {**USER, "authentication": {"type": "scram-sha-512", "password": password_from("bad")}},
            "the password's Secret cannot be named like the User",
        ),
        (
            "User",
            acls({"resource": {"type": "topic"}, "operations": ["Read"]}),
            "resource.name is required for topic, group and transactionalId",
        ),
        (
            "User",
            acls(
                {"resource": {"type": "cluster", "name": "kafka-cluster"}, "operations": ["Alter"]}
            ),
            "a cluster resource has no name",
        ),
        (
            "User",
            acls(
                {"resource": {"type": "cluster", "patternType": "prefix"}, "operations": ["Alter"]}
            ),
            "a cluster resource's patternType is literal",
        ),
        (
            "User",
            acls({**TOPIC_ACL, "operations": ["Read", "IdempotentWrite"]}),
            "a topic ACL takes Read, Write, Create, Delete, Alter, Describe",
        ),
        (
            "User",
            acls({"resource": {"type": "group", "name": "g"}, "operations": ["Write"]}),
            "a group ACL takes Read, Delete, Describe or All",
        ),
        (
            "User",
            acls({"resource": {"type": "cluster"}, "operations": ["Read"]}),
            "a cluster ACL takes Create, Alter, Describe, ClusterAction",
        ),
        (
            "User",
            acls({"resource": {"type": "transactionalId", "name": "t"}, "operations": ["Read"]}),
            "a transactionalId ACL takes Write, Describe or All",
        ),
        ("User", acls({**TOPIC_ACL, "operations": []}), "spec.authorization.acls[0].operations"),
        ("User", acls({**TOPIC_ACL, "operations": ["Read", "Read"]}), "Duplicate value"),
        ("User", acls({**TOPIC_ACL, "operations": ["Fly"]}), "Unsupported value"),
        ("User", acls({**TOPIC_ACL, "type": "maybe"}), "Unsupported value"),
        ("User", {**USER, "quotas": {"producerByteRate": -1}}, "spec.quotas.producerByteRate"),
    ],
)
def test_bad_objects_are_refused_with_their_message(
    crds_installed, kube_namespace, kind, spec, message
):
    result = apply(crds_installed, kube_namespace, kind, "bad", spec)
    assert result.returncode != 0, f"{kind} {spec} accepted"
    assert message in result.stderr, result.stderr


def test_names_and_cluster_refs_do_not_change(crds_installed, kube_namespace):
    spec = {**TOPIC, "topicName": "orders"}
    assert apply(crds_installed, kube_namespace, "Topic", "t", spec).returncode == 0
    changed = apply(crds_installed, kube_namespace, "Topic", "t", {**spec, "topicName": "other"})
    assert "topicName cannot change; make a new Topic" in changed.stderr
    moved = apply(crds_installed, kube_namespace, "Topic", "t", {**spec, "clusterRef": "d"})
    assert "clusterRef cannot change; make a new Topic" in moved.stderr
    grown = apply(crds_installed, kube_namespace, "Topic", "t", {**spec, "partitions": 6})
    assert grown.returncode == 0, grown.stderr
    assert apply(crds_installed, kube_namespace, "User", "u", USER).returncode == 0
    moved = apply(crds_installed, kube_namespace, "User", "u", {**USER, "clusterRef": "d"})
    assert "clusterRef cannot change; make a new User" in moved.stderr
    tls = apply(
        crds_installed, kube_namespace, "User", "u", {**USER, "authentication": {"type": "tls"}}
    )
    assert tls.returncode == 0, tls.stderr


def test_kubectl_explains_and_lists_the_category(crds_installed, kube_namespace):
    explained = crds_installed.kubectl("explain", "cluster.spec.storage")
    assert explained.returncode == 0, explained.stderr
    text = " ".join(explained.stdout.split())  # kubectl wraps lines
    assert "Each broker's JBOD volumes: one log dir per volume." in text
    assert "claimRetention" in text and "local" in text
    explained = crds_installed.kubectl("explain", "consumergroup.spec.reset.to")
    assert "shiftBy (value: added to the committed offsets" in " ".join(explained.stdout.split())
    explained = crds_installed.kubectl(
        "explain", "user.spec.authorization.acls.resource.patternType"
    )
    assert explained.returncode == 0, explained.stderr
    text = " ".join(explained.stdout.split())
    assert "prefix: every resource whose name starts with name." in text
    for kind, spec in (
        ("Cluster", CLUSTER),
        ("Topic", TOPIC),
        ("ConsumerGroup", {"clusterRef": "c"}),
        ("User", acls(TOPIC_ACL)),
    ):
        assert apply(crds_installed, kube_namespace, kind, "listed", spec).returncode == 0
    listed = crds_installed.kubectl("get", "tidelog", "-n", kube_namespace, "-o", "name")
    assert sorted(listed.stdout.split()) == [
        "cluster.tidelog.dev/listed",
        "consumergroup.tidelog.dev/listed",
        "topic.tidelog.dev/listed",
        "user.tidelog.dev/listed",
    ]
    table = crds_installed.kubectl("get", "tlt", "-n", kube_namespace)
    assert table.stdout.split("\n")[0].split() == [
        "NAME",
        "CLUSTER",
        "PARTITIONS",
        "REPLICATION",
        "STATUS",
        "AGE",
    ]
    table = crds_installed.kubectl("get", "tu", "-n", kube_namespace)
    assert table.stdout.split("\n")[0].split() == [
        "NAME",
        "CLUSTER",
        "AUTHENTICATION",
        "AUTHORIZATION",
        "READY",
        "AGE",
    ]
    assert table.stdout.split("\n")[1].split()[:4] == ["listed", "c", "scram-sha-512", "simple"]


def test_scaling_a_cluster_goes_through_the_scale_subresource(
    crds_installed, kube_api, kube_namespace
):
    assert apply(crds_installed, kube_namespace, "Cluster", "scaled", CLUSTER).returncode == 0
    scaled = crds_installed.kubectl("scale", "cluster/scaled", "--replicas=5", "-n", kube_namespace)
    assert scaled.returncode == 0, scaled.stderr
    stored = client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, kube_namespace, "clusters", "scaled"
    )
    assert stored["spec"]["brokers"]["replicas"] == 5
    with pytest.raises(ApiException) as refused:
        client.CustomObjectsApi(kube_api).patch_namespaced_custom_object(
            GROUP,
            VERSION,
            kube_namespace,
            "clusters",
            "scaled",
            {"spec": {"brokers": {"replicas": -1}}},
        )
    assert refused.value.status == 422
