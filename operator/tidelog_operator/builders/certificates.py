"""The Secrets of a Cluster's TLS material, built from PEM, and the names each broker
certificate must carry.

- ``<c>-cluster-ca`` and ``<c>-clients-ca``: a CA's key and certificate (``ca.key``,
  ``ca.crt``), the operator's private record, never mounted;
- ``<c>-cluster-ca-cert`` and ``<c>-clients-ca-cert``: ``ca.crt``, every certificate
  trusted (a bundle: during a renewal the old and the new CA), mounted by the brokers
  and handed to clients;
- ``<c>-broker-certs``: ``<pod>.pem`` per broker, its key then its certificate chain
  (Kafka's PEM keystore in one file); ``<c>-zookeeper-certs`` the same per ZooKeeper
  server;
- ``<c>-operator-credentials``: Kafka client properties, one per key, with which the
  operator reaches the brokers' REPLICATION listener (its own certificate, inline).

Names: Strimzi's, so that its users find them (``ref-certificates-and-secrets``).
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from tidelog_operator import names
from tidelog_operator.builders.listeners import bootstrap_address
from tidelog_operator.spec import ClusterSpec

__all__ = [
    "CA_CERT",
    "CA_KEY",
    "CA_TRUST_ANNOTATION",
    "GENERATION_ANNOTATION",
    "ISSUED_ANNOTATION",
    "PREVIOUS_CERT",
    "TRUSTSTORE",
    "broker_certs_secret",
    "broker_hosts",
    "ca_bundle_secret",
    "ca_secret",
    "operator_credentials_secret",
    "zookeeper_certs_secret",
]

CA_CERT = "ca.crt"
CA_KEY = "ca.key"
# in a CA's own Secret while a renewal runs: the certificate it replaced, still trusted
PREVIOUS_CERT = "ca-previous.crt"
# the CA generation a Secret's content belongs to (renewals count up)
GENERATION_ANNOTATION = "tidelog.dev/ca-generation"
ISSUED_ANNOTATION = "tidelog.dev/issued"
# on the pod templates of the brokers and ZooKeeper: the generations of the CAs their
# bundles trust, so that a bundle's change rolls them (``ca_trust_marker``)
CA_TRUST_ANNOTATION = "tidelog.dev/ca-trust"
# the operator credentials' entry of the certificates it trusts
TRUSTSTORE = "ssl.truststore.certificates"
_DOMAIN = "cluster.local"


def broker_hosts(spec: ClusterSpec, broker_id: int) -> list[str]:
    """Every name a client may reach broker ``broker_id`` by: its pod's names under the
    headless Service, the bootstrap Service's names, and the host of each node port
    listener that has one."""
    pod = names.broker_pod(spec.name, broker_id)
    headless = names.brokers_service(spec.name)
    bootstrap = names.bootstrap_service(spec.name)
    hosts = []
    for base in (f"{pod}.{headless}", bootstrap):
        hosts += [
            base,
            f"{base}.{spec.namespace}",
            f"{base}.{spec.namespace}.svc",
            f"{base}.{spec.namespace}.svc.{_DOMAIN}",
        ]
    hosts += sorted({listener.host for listener in spec.listeners if listener.host})
    return hosts


def _secret(
    spec: ClusterSpec, name: str, data: Mapping[str, str], generation: int | None = None
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": spec.namespace,
        "labels": names.cluster_labels(spec.name),
    }
    if generation is not None:
        metadata["annotations"] = {GENERATION_ANNOTATION: str(generation)}
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": metadata,
        "data": {key: base64.b64encode(value.encode()).decode() for key, value in data.items()},
    }


def ca_secret(
    spec: ClusterSpec, name: str, certificate_pem: bytes, key_pem: bytes, generation: int
) -> dict[str, Any]:
    """A CA's own Secret: its key and certificate, for the operator alone."""
    data = {CA_CERT: certificate_pem.decode(), CA_KEY: key_pem.decode()}
    return _secret(spec, name, data, generation)


def ca_bundle_secret(
    spec: ClusterSpec, name: str, bundle_pem: bytes, generation: int
) -> dict[str, Any]:
    """The certificates trusted for a CA: ``ca.crt``, one or more PEM certificates."""
    return _secret(spec, name, {CA_CERT: bundle_pem.decode()}, generation)


def broker_certs_secret(
    spec: ClusterSpec, keystores: Mapping[str, bytes], generation: int | None = None
) -> dict[str, Any]:
    """Each broker pod's PEM keystore (``<pod>.pem``: key, then certificate chain), and
    the cluster CA generation every one of them is of (``generation``)."""
    data = {f"{pod}.pem": pem.decode() for pod, pem in sorted(keystores.items())}
    return _secret(spec, names.broker_certs_secret(spec.name), data, generation)


def zookeeper_certs_secret(
    spec: ClusterSpec, keystores: Mapping[str, bytes], issued: int, generation: int | None = None
) -> dict[str, Any]:
    """Each ZooKeeper server's PEM keystore (``<pod>.pem``), how many times they were
    issued (``tidelog.dev/issued``): the servers' pod template carries that count, so
    that new certificates restart them (ZooKeeper does not reload them), and the cluster
    CA generation every one of them is of (``generation``)."""
    data = {f"{pod}.pem": pem.decode() for pod, pem in sorted(keystores.items())}
    secret = _secret(spec, names.zookeeper_certs_secret(spec.name), data, generation)
    secret["metadata"].setdefault("annotations", {})[ISSUED_ANNOTATION] = str(issued)
    return secret


def operator_credentials_secret(
    spec: ClusterSpec,
    trusted_pem: bytes,
    chain_pem: bytes,
    key_pem: bytes,
    generation: int | None = None,
) -> dict[str, Any]:
    """The operator's Kafka client properties for the Cluster: mutual TLS to the
    REPLICATION listener, its certificate (of cluster CA generation ``generation``) and
    the CAs it trusts inline (PEM)."""
    properties = {
        "bootstrap.servers": bootstrap_address(spec),
        "security.protocol": "SSL",
        "ssl.truststore.type": "PEM",
        TRUSTSTORE: trusted_pem.decode(),
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": chain_pem.decode(),
        "ssl.keystore.key": key_pem.decode(),
    }
    return _secret(spec, names.operator_credentials_secret(spec.name), properties, generation)
