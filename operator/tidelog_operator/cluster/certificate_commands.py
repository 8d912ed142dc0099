"""The commands that make a Cluster's TLS material, and their handlers (joined into
``commands.HANDLERS``): each makes keys and certificates with
:mod:`tidelog.security.certificates` and writes the Secrets of
:mod:`tidelog_operator.builders.certificates`, owned by the Cluster.

Key material never travels in a command (commands are logged): a handler reads the CA
it signs with from the CA's Secret, and reads the Secret it adds to, so that the
entries it does not replace stay as they are.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from kubernetes import client

from tidelog.admin.topics import AlterConfigOp, ConfigResourceType, OpType
from tidelog.security.certificates import CertificateAuthority
from tidelog_operator import kube, names
from tidelog_operator.builders import certificates
from tidelog_operator.builders.listeners import store_keys
from tidelog_operator.builders.zookeeper import zookeeper_hosts
from tidelog_operator.cluster.command_base import Command, Context

__all__ = [
    "CA_VALIDITY_DAYS",
    "LEAF_VALIDITY_DAYS",
    "TLS_HANDLERS",
    "CaKind",
    "IssueBrokerCertificates",
    "IssueCa",
    "IssueOperatorCredentials",
    "IssueZooKeeperCertificates",
    "ReloadStores",
    "TlsCommand",
]

# Strimzi's defaults, for CAs and leaves alike; a leaf is issued again 30 days before
# it expires (certificate_step.RENEWAL_DAYS).
CA_VALIDITY_DAYS = 365
LEAF_VALIDITY_DAYS = 365


class CaKind(enum.Enum):
    CLUSTER = "cluster"
    CLIENTS = "clients"


class TlsCommand(Command):
    """A base for the commands below."""


@dataclass(frozen=True)
class IssueCa(TlsCommand):
    """Make the ``kind`` CA (a new key) and write its Secret (and the cluster CA's
    bundle: the clients CA's is :class:`WriteClientsTrust`'s)."""

    kind: CaKind


@dataclass(frozen=True)
class WriteClientsTrust(TlsCommand):
    """Write the certificates brokers accept from clients: the clients CA's and the
    cluster CA's bundle."""


@dataclass(frozen=True)
class IssueBrokerCertificates(TlsCommand):
    """Issue a certificate from the cluster CA for each broker of ``broker_ids``."""

    broker_ids: tuple[int, ...]


@dataclass(frozen=True)
class IssueZooKeeperCertificates(TlsCommand):
    """Issue a certificate from the cluster CA for each ZooKeeper server of
    ``ordinals``."""

    ordinals: tuple[int, ...]


@dataclass(frozen=True)
class ReloadStores(TlsCommand):
    """Have each broker of ``broker_ids`` read its keystores and truststores again."""

    broker_ids: tuple[int, ...]


@dataclass(frozen=True)
class IssueOperatorCredentials(TlsCommand):
    """Issue the operator's certificate and write its client properties."""


def _read(context: Context, name: str) -> dict[str, bytes]:
    return kube.secret_data(context.api, context.namespace, name)


def _apply(context: Context, secret: dict[str, Any]) -> None:
    secret["metadata"]["ownerReferences"] = [dict(context.owner)]
    kube.apply(context.api, secret)


def _authority(context: Context, name: str) -> CertificateAuthority:
    data = _read(context, name)
    return CertificateAuthority.from_pem(data[certificates.CA_CERT], data[certificates.CA_KEY])


def _ca_names(kind: CaKind, cluster: str) -> tuple[str, str]:
    if kind is CaKind.CLUSTER:
        return names.cluster_ca_secret(cluster), names.cluster_ca_cert_secret(cluster)
    return names.clients_ca_secret(cluster), names.clients_ca_cert_secret(cluster)


def _issue_ca(command: IssueCa, context: Context) -> None:
    spec = context.spec
    own, bundle = _ca_names(command.kind, spec.name)
    authority = CertificateAuthority(
        f"CN={spec.name}-{command.kind.value}-ca v0,O={names.GROUP}",
        valid_days=CA_VALIDITY_DAYS,
    )
    pem = authority.certificate_pem
    _apply(context, certificates.ca_secret(spec, own, pem, authority.key_pem(), 0))
    if command.kind is CaKind.CLUSTER:
        _apply(context, certificates.ca_bundle_secret(spec, bundle, pem, 0))


def _write_clients_trust(command: WriteClientsTrust, context: Context) -> None:
    spec = context.spec
    clients = _read(context, names.clients_ca_secret(spec.name))[certificates.CA_CERT]
    cluster = _read(context, names.cluster_ca_cert_secret(spec.name))[certificates.CA_CERT]
    bundle = certificates.ca_bundle_secret(
        spec, names.clients_ca_cert_secret(spec.name), clients + cluster, 0
    )
    _apply(context, bundle)


def _issue_brokers(command: IssueBrokerCertificates, context: Context) -> None:
    spec = context.spec
    authority = _authority(context, names.cluster_ca_secret(spec.name))
    keystores = {
        key.removesuffix(".pem"): pem
        for key, pem in _read(context, names.broker_certs_secret(spec.name)).items()
    }
    for broker_id in command.broker_ids:
        issued = authority.issue(
            names.broker_subject(spec.name),
            hosts=certificates.broker_hosts(spec, broker_id),
            valid_days=LEAF_VALIDITY_DAYS,
        )
        keystores[names.broker_pod(spec.name, broker_id)] = issued.key_pem() + issued.chain_pem
    _apply(context, certificates.broker_certs_secret(spec, keystores))


def _issue_zookeeper(command: IssueZooKeeperCertificates, context: Context) -> None:
    spec = context.spec
    authority = _authority(context, names.cluster_ca_secret(spec.name))
    name = names.zookeeper_certs_secret(spec.name)
    secret = kube.found(client.CoreV1Api(context.api).read_namespaced_secret, name, spec.namespace)
    annotations = (secret.metadata.annotations or {}) if secret is not None else {}
    issued = int(annotations.get(certificates.ISSUED_ANNOTATION, "0"))
    keystores = {key.removesuffix(".pem"): pem for key, pem in _read(context, name).items()}
    for ordinal in command.ordinals:
        hosts = zookeeper_hosts(spec, ordinal)
        server = authority.issue(
            names.zookeeper_subject(spec.name), hosts=hosts, valid_days=LEAF_VALIDITY_DAYS
        )
        keystores[hosts[0].split(".")[0]] = server.key_pem() + server.chain_pem
    _apply(context, certificates.zookeeper_certs_secret(spec, keystores, issued + 1))


def _issue_operator(command: IssueOperatorCredentials, context: Context) -> None:
    spec = context.spec
    authority = _authority(context, names.cluster_ca_secret(spec.name))
    trusted = _read(context, names.cluster_ca_cert_secret(spec.name))[certificates.CA_CERT]
    issued = authority.issue(names.operator_subject(spec.name), valid_days=LEAF_VALIDITY_DAYS)
    secret = certificates.operator_credentials_secret(
        spec, trusted, issued.chain_pem, issued.key_pem()
    )
    _apply(context, secret)


def _reload(command: ReloadStores, context: Context) -> None:
    admin = context.admin()
    changes = {
        str(broker): [
            AlterConfigOp(key, OpType.SET, value)
            for key, value in store_keys(context.spec, broker).items()
        ]
        for broker in command.broker_ids
    }
    results = admin.incremental_alter_configs(ConfigResourceType.BROKER, changes)
    for error in results.values():
        if error is not None:
            raise error


TLS_HANDLERS = {
    IssueCa: _issue_ca,
    WriteClientsTrust: _write_clients_trust,
    IssueBrokerCertificates: _issue_brokers,
    IssueOperatorCredentials: _issue_operator,
    IssueZooKeeperCertificates: _issue_zookeeper,
    ReloadStores: _reload,
}
