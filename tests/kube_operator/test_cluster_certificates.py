"""A Cluster's TLS material, made by its pass against a real API server: the cluster
and clients CAs, the certificates the brokers accept from clients, a certificate per
broker naming every address it is reached by, and the operator's own credentials, all
in Secrets the Cluster owns, mounted by the brokers. A second pass changes nothing; a
new broker gets a certificate without the others changing; a broker certificate that
lacks a name it needs (a listener's new host) is issued again.

No kubelet runs here and no broker is asked (no pod is ready): the pass is called
directly, as the daemon calls it.
"""

from __future__ import annotations

import base64

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from kubernetes import client

from kube_operator.pass_helpers import create_cluster, pass_without_brokers
from tidelog.security.certificates import (
    CertificateFacts,
    certificate_facts,
    certificates_in,
    issued_by,
)
from tidelog.security.client_security import ClientSecurity

GROUP, VERSION = "tidelog.dev", "v1alpha1"
LISTENERS = [
    {"name": "internal", "port": 9092},
    {"name": "mtls", "port": 9093, "authentication": "tls"},
]


def _secret(core: client.CoreV1Api, namespace: str, name: str) -> dict[str, bytes]:
    secret = core.read_namespaced_secret(name, namespace)
    return {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}


def _leaf(chain_pem: bytes) -> CertificateFacts:
    """The facts of a chain's first certificate."""
    return CertificateFacts.of(certificates_in(chain_pem)[0])


@pytest.fixture
def cluster(tidelog_crds, kube_api, kube_namespace) -> dict:
    return create_cluster(kube_api, kube_namespace, replicas=2, listeners=LISTENERS)


def test_the_first_pass_makes_every_secret_and_a_second_changes_none(
    cluster, kube_api, kube_namespace
):
    ns, core = kube_namespace, client.CoreV1Api(kube_api)
    pass_without_brokers(kube_api, ns)
    cluster_ca = _secret(core, ns, "events-cluster-ca")
    clients_ca = _secret(core, ns, "events-clients-ca")
    assert set(cluster_ca) == set(clients_ca) == {"ca.crt", "ca.key"}
    ca = certificate_facts(cluster_ca["ca.crt"])
    assert ca.is_ca and ca.subject == "CN=events-cluster-ca v0,O=tidelog.dev"
    assert _secret(core, ns, "events-cluster-ca-cert") == {"ca.crt": cluster_ca["ca.crt"]}
    # brokers accept certificates of the clients CA, and their own (the health check's)
    accepted = _secret(core, ns, "events-clients-ca-cert")["ca.crt"]
    assert [CertificateFacts.of(c).subject for c in certificates_in(accepted)] == [
        "CN=events-clients-ca v0,O=tidelog.dev",
        "CN=events-cluster-ca v0,O=tidelog.dev",
    ]
    keystores = _secret(core, ns, "events-broker-certs")
    assert set(keystores) == {"events-broker-0.pem", "events-broker-1.pem"}
    leaf = _leaf(keystores["events-broker-1.pem"])
    leaf_pem = certificates_in(keystores["events-broker-1.pem"])[0].public_bytes(Encoding.PEM)
    assert issued_by(leaf_pem, cluster_ca["ca.crt"])
    assert leaf.subject == "CN=events-broker,O=tidelog.dev"
    assert {
        f"events-broker-1.events-brokers.{ns}.svc",
        f"events-broker-1.events-brokers.{ns}.svc.cluster.local",
        f"events-bootstrap.{ns}.svc",
    } <= set(leaf.dns_names)
    assert b"PRIVATE KEY" in keystores["events-broker-1.pem"]
    credentials = {
        k: v.decode() for k, v in _secret(core, ns, "events-operator-credentials").items()
    }
    assert credentials["bootstrap.servers"] == f"events-bootstrap.{ns}.svc:9091"
    operator = _leaf(credentials["ssl.keystore.certificate.chain"].encode())
    assert operator.subject == "CN=events-operator,O=tidelog.dev"
    security = ClientSecurity.from_properties(
        {k: v for k, v in credentials.items() if k != "bootstrap.servers"}
    )
    assert security.protocol == "SSL" and security.uses_tls
    uid = cluster["metadata"]["uid"]
    for secret in core.list_namespaced_secret(
        ns, label_selector="tidelog.dev/cluster=events"
    ).items:
        assert [o.uid for o in secret.metadata.owner_references] == [uid], secret.metadata.name

    # the brokers mount their keystores and the CA bundles
    statefulset = client.AppsV1Api(kube_api).read_namespaced_stateful_set("events-broker", ns)
    volumes = {
        v.name: v.secret.secret_name for v in statefulset.spec.template.spec.volumes if v.secret
    }
    assert volumes == {
        "cluster-ca": "events-cluster-ca-cert",
        "broker-certs": "events-broker-certs",
        "clients-ca": "events-clients-ca-cert",
    }

    versions = {
        s.metadata.name: s.metadata.resource_version for s in core.list_namespaced_secret(ns).items
    }
    pass_without_brokers(kube_api, ns)
    assert {
        s.metadata.name: s.metadata.resource_version for s in core.list_namespaced_secret(ns).items
    } == versions


def test_a_new_broker_and_a_new_name_get_certificates_and_the_others_stay(
    cluster, kube_api, kube_namespace
):
    ns, core = kube_namespace, client.CoreV1Api(kube_api)
    objects = client.CustomObjectsApi(kube_api)
    pass_without_brokers(kube_api, ns)
    before = _secret(core, ns, "events-broker-certs")
    objects.patch_namespaced_custom_object(
        GROUP, VERSION, ns, "clusters", "events", {"spec": {"brokers": {"replicas": 3}}}
    )
    pass_without_brokers(kube_api, ns)
    after = _secret(core, ns, "events-broker-certs")
    assert set(after) == {f"events-broker-{i}.pem" for i in range(3)}
    assert {k: after[k] for k in before} == before

    # a node port listener with a host: every broker's certificate must name it
    external = {"name": "external", "port": 9094, "type": "nodeport", "nodePortBase": 31000}
    patch = {"spec": {"listeners": [*LISTENERS, {**external, "host": "kafka.example.com"}]}}
    objects.patch_namespaced_custom_object(GROUP, VERSION, ns, "clusters", "events", patch)
    pass_without_brokers(kube_api, ns)
    renamed = _secret(core, ns, "events-broker-certs")
    for key, pem in renamed.items():
        assert pem != after[key]
        assert "kafka.example.com" in _leaf(pem).dns_names
    status = objects.get_namespaced_custom_object(GROUP, VERSION, ns, "clusters", "events")
    assert [
        (entry["name"], entry.get("bootstrapServers")) for entry in status["status"]["listeners"]
    ] == [
        ("internal", f"events-bootstrap.{ns}.svc:9092"),
        ("mtls", f"events-bootstrap.{ns}.svc:9093"),
        ("external", "kafka.example.com:31000"),
    ]


def test_the_clusters_own_ensemble_gets_certificates_and_restarts_for_new_ones(
    tidelog_crds, kube_api, kube_namespace
):
    ns, core = kube_namespace, client.CoreV1Api(kube_api)
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Cluster",
        "metadata": {"name": "events"},
        "spec": {"brokers": {"replicas": 1}, "storage": {"volumes": [{"id": 0, "size": "1Gi"}]}},
    }
    client.CustomObjectsApi(kube_api).create_namespaced_custom_object(
        GROUP, VERSION, ns, "clusters", body
    )
    pass_without_brokers(kube_api, ns)
    apps = client.AppsV1Api(kube_api)
    keystores = _secret(core, ns, "events-zookeeper-certs")
    assert set(keystores) == {f"events-zookeeper-{i}.pem" for i in range(3)}
    server = _leaf(keystores["events-zookeeper-2.pem"])
    assert server.subject == "CN=events-zookeeper,O=tidelog.dev"
    assert f"events-zookeeper-2.events-zookeeper.{ns}.svc" in server.dns_names

    def issued() -> tuple[str, str]:
        secret = core.read_namespaced_secret("events-zookeeper-certs", ns)
        ensemble = apps.read_namespaced_stateful_set("events-zookeeper", ns)
        template = ensemble.spec.template.metadata.annotations
        return secret.metadata.annotations["tidelog.dev/issued"], template[
            "tidelog.dev/certificates-issued"
        ]

    assert issued() == ("1", "1")
    pass_without_brokers(kube_api, ns)
    assert issued() == ("1", "1") and _secret(core, ns, "events-zookeeper-certs") == keystores
    # a server's certificate gone: issued again, and the servers' template changes with it
    core.patch_namespaced_secret(
        "events-zookeeper-certs", ns, {"data": {"events-zookeeper-1.pem": None}}
    )
    pass_without_brokers(kube_api, ns)
    assert issued() == ("2", "2")
    assert (
        _secret(core, ns, "events-zookeeper-certs")["events-zookeeper-0.pem"]
        == (keystores["events-zookeeper-0.pem"])
    )
