"""Users carried out by their Cluster's pass, against a real API server and real brokers
(SASL_SSL with the ACL authorizer; the pass's admin client logs in as their super user):

- a SCRAM User gets a credential that logs in, exactly its ACLs and quotas on the
  brokers (as Kafka's own kafka-acls and kafka-configs list them) and a Secret with its
  password and JAAS line; its status is Ready;
- ACLs and quotas changed behind the operator's back (with kafka-acls and
  kafka-configs) are put back to the spec by the next pass; a spec change is carried out;
- a TLS User gets a certificate of the Cluster's clients CA in its Secret (user.crt,
  user.key and a PKCS#12 keystore that opens with user.password);
- a deleted User leaves nothing on the brokers.

No kubelet runs here: the broker pod is marked ready through the API, so that the pass
asks the brokers.
"""

from __future__ import annotations

import base64

import pytest
from confluent_kafka import Producer
from cryptography.hazmat.primitives.serialization import pkcs12
from kubernetes import client

from integration.cluster import Cluster
from kafka_reference.tools import run_kafka_tool
from kube_operator.pass_helpers import create_cluster, mark_broker_ready
from tidelog.admin import AdminClient
from tidelog.security.certificates import certificate_facts, issued_by
from tidelog.security.jaas import parse_jaas_config
from tidelog_operator.cluster import passes

GROUP, VERSION = "tidelog.dev", "v1alpha1"
pytestmark = pytest.mark.timeout(300)

ALICE_ACLS = [
    {"resource": {"type": "topic", "name": "orders"}, "operations": ["Write", "Describe"]},
    {
        "resource": {"type": "group", "name": "readers", "patternType": "prefix"},
        "operations": ["Read"],
    },
]


@pytest.fixture
def brokers(tmp_path, zk_chroot, tidelog_crds, kube_api, kube_namespace):
    """One secured broker, and a Cluster object whose pod 0 is marked ready."""
    with Cluster(tmp_path, zk_chroot, size=1, security="sasl_ssl") as cluster:
        create_cluster(kube_api, kube_namespace, authorization={"type": "simple"})
        run(kube_api, kube_namespace, cluster)  # the StatefulSet, so that its pod is made
        mark_broker_ready(client.CoreV1Api(kube_api), kube_namespace, "events", 0)
        yield cluster


def run(kube_api, namespace: str, cluster: Cluster) -> None:
    passes.run_pass(
        namespace,
        "events",
        api=kube_api,
        admin=lambda spec: AdminClient(
            cluster.bootstrap, timeout=30, security=cluster.admin_security()
        ),
        tell=lambda obj, event: None,
    )


def _user(kube_api, namespace: str, name: str, spec: dict) -> None:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "User",
        "metadata": {"name": name},
        "spec": {"clusterRef": "events", **spec},
    }
    client.CustomObjectsApi(kube_api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "users", body
    )


def _secret(kube_api, namespace: str, name: str) -> dict[str, bytes]:
    data = client.CoreV1Api(kube_api).read_namespaced_secret(name, namespace).data
    return {key: base64.b64decode(value) for key, value in data.items()}


def kafka_tool(cluster: Cluster, tool: str, *args: str) -> str:
    result = run_kafka_tool(
        tool,
        *("--bootstrap-server", cluster.bootstrap),
        *("--command-config", str(cluster.client_properties_file())),
        *args,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def acl_lines(cluster: Cluster, principal: str) -> list[str]:
    listed = kafka_tool(cluster, "kafka-acls", "--list", "--principal", principal)
    return sorted(line.strip() for line in listed.splitlines() if "principal=" in line)


def user_quotas(cluster: Cluster, user: str) -> str:
    return kafka_tool(
        cluster, "kafka-configs", "--describe", "--entity-type", "users", "--entity-name", user
    )


def test_a_scram_user_gets_exactly_its_spec_and_keeps_it(brokers, kube_api, kube_namespace):
    ns = kube_namespace
    quotas = {"producerByteRate": 1048576, "requestPercentage": 50}
    _user(
        kube_api,
        ns,
        "alice",
        {
            "authentication": {"type": "scram-sha-512"},
            "authorization": {"acls": ALICE_ACLS},
            "quotas": quotas,
        },
    )
    run(kube_api, ns, brokers)
    secret = _secret(kube_api, ns, "alice")
    password = secret["password"].decode()
    options = parse_jaas_config(secret["sasl.jaas.config"].decode()).options
    assert (options["username"], options["password"]) == ("alice", password)
    assert secret["ca.crt"] == _secret(kube_api, ns, "events-cluster-ca-cert")["ca.crt"]
    granted = acl_lines(brokers, "User:alice")
    assert len(granted) == 3 and all("permissionType=ALLOW" in line for line in granted)
    assert "producer_byte_rate=1048576.0" in user_quotas(brokers, "alice")
    assert "request_percentage=50.0" in user_quotas(brokers, "alice")
    status = client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, ns, "users", "alice"
    )["status"]
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert (ready["status"], status["secret"]) == ("True", "alice")
    # the credential logs in: alice may write orders, as her ACLs say
    brokers.create_topic("orders", partitions=1, replication_factor=1)
    producer = Producer(
        {
            **brokers.client_config(),
            "sasl.username": "alice",
            "sasl.password": password,
            "message.timeout.ms": 15000,
        }
    )
    delivered = []
    producer.produce("orders", b"x", on_delivery=lambda error, _: delivered.append(error))
    producer.flush(20)
    assert delivered == [None]

    # drift: an ACL added, one removed and a quota changed with Kafka's own tools
    kafka_tool(
        brokers,
        "kafka-acls",
        "--add",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Delete",
        "--topic",
        "orders",
    )
    kafka_tool(
        brokers,
        "kafka-acls",
        "--remove",
        "--force",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Write",
        "--topic",
        "orders",
    )
    kafka_tool(
        brokers,
        "kafka-configs",
        "--alter",
        "--entity-type",
        "users",
        "--entity-name",
        "alice",
        "--add-config",
        "producer_byte_rate=1,consumer_byte_rate=2",
    )
    assert acl_lines(brokers, "User:alice") != granted
    run(kube_api, ns, brokers)
    assert acl_lines(brokers, "User:alice") == granted
    described = user_quotas(brokers, "alice")
    assert "producer_byte_rate=1048576.0" in described and "consumer_byte_rate" not in described
    assert _secret(kube_api, ns, "alice")["password"].decode() == password

    # the spec changed: a quota gone, an ACL more
    patch = {
        "spec": {
            "quotas": {"producerByteRate": None},  # a merge patch: None removes it
            "authorization": {
                "acls": [
                    *ALICE_ACLS,
                    {"resource": {"type": "cluster"}, "operations": ["IdempotentWrite"]},
                ]
            },
        }
    }
    client.CustomObjectsApi(kube_api).patch_namespaced_custom_object(
        GROUP, VERSION, ns, "users", "alice", patch
    )
    run(kube_api, ns, brokers)
    assert len(acl_lines(brokers, "User:alice")) == 4
    assert "producer_byte_rate" not in user_quotas(brokers, "alice")


def test_a_tls_user_gets_a_certificate_of_the_clients_ca(brokers, kube_api, kube_namespace):
    ns = kube_namespace
    _user(kube_api, ns, "bob", {"authentication": {"type": "tls"}})
    run(kube_api, ns, brokers)
    secret = _secret(kube_api, ns, "bob")
    clients_ca = _secret(kube_api, ns, "events-clients-ca")["ca.crt"]
    assert issued_by(secret["user.crt"], clients_ca)
    assert certificate_facts(secret["user.crt"]).subject == "CN=bob"
    key, certificate, _ = pkcs12.load_key_and_certificates(
        secret["user.p12"], secret["user.password"]
    )
    assert key is not None and certificate.subject.rfc4514_string() == "CN=bob"
    before = secret["user.crt"]
    run(kube_api, ns, brokers)
    assert _secret(kube_api, ns, "bob")["user.crt"] == before


def test_a_deleted_user_leaves_nothing_on_the_brokers(brokers, kube_api, kube_namespace):
    ns, objects = kube_namespace, client.CustomObjectsApi(kube_api)
    _user(
        kube_api,
        ns,
        "carol",
        {
            "authentication": {"type": "scram-sha-512"},
            "authorization": {"acls": ALICE_ACLS},
            "quotas": {"consumerByteRate": 2048},
        },
    )
    # a finalizer of the test's stands in for kopf's, which holds the User while it goes
    objects.patch_namespaced_custom_object(
        GROUP, VERSION, ns, "users", "carol", {"metadata": {"finalizers": ["test/hold"]}}
    )
    run(kube_api, ns, brokers)
    admin = AdminClient(brokers.bootstrap, timeout=30, security=brokers.admin_security())
    assert "carol" in admin.describe_scram_credentials()
    objects.delete_namespaced_custom_object(GROUP, VERSION, ns, "users", "carol")
    run(kube_api, ns, brokers)
    assert acl_lines(brokers, "User:carol") == []
    assert "consumer_byte_rate" not in user_quotas(brokers, "carol")
    assert "carol" not in admin.describe_scram_credentials()
    objects.patch_namespaced_custom_object(
        GROUP, VERSION, ns, "users", "carol", {"metadata": {"finalizers": None}}
    )
