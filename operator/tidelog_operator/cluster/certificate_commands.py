"""The commands that make a Cluster's TLS material, and their handlers (joined into
``commands.HANDLERS``): each makes keys and certificates with
:mod:`tidelog.security.certificates` and writes the Secrets of
:mod:`tidelog_operator.builders.certificates`, owned by the Cluster.

Key material never travels in a command (commands are logged): a handler reads the CA
it signs with from the CA's Secret, and reads the Secret it adds to, so that the
entries it does not replace stay as they are.

The bundles are written from the CA Secrets (``ca.crt``, and ``ca-previous.crt`` while
a renewal keeps the old certificate trusted). A leaf Secret carries the CA generation
its entries are of (``tidelog.dev/ca-generation``): the CA's current one when the
command wrote every entry, else the one it had (an older entry is still there).
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any

from tidelog.admin.topics import AlterConfigOp, ConfigResourceType, OpType
from tidelog.security.certificates import CertificateAuthority
from tidelog_operator import kube, names
from tidelog_operator.builders import certificates
from tidelog_operator.builders.listeners import store_keys
from tidelog_operator.builders.zookeeper import zookeeper_hosts
from tidelog_operator.cluster.command_base import Command, Context

__all__ = [
    "LEAF_VALIDITY_DAYS",
    "TLS_HANDLERS",
    "CaKind",
    "IssueBrokerCertificates",
    "IssueCa",
    "IssueOperatorCredentials",
    "IssueZooKeeperCertificates",
    "ReloadStores",
    "TlsCommand",
    "WriteClientsTrust",
    "WriteClusterTrust",
    "WriteOperatorTrust",
]

# Strimzi's default (a CA lasts spec.certificates' validityDays); a leaf is issued
# again 30 days before it expires (certificate_step.RENEWAL_DAYS).
LEAF_VALIDITY_DAYS = 365
_KEYSTORE_CHAIN = "ssl.keystore.certificate.chain"
_KEYSTORE_KEY = "ssl.keystore.key"


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
class WriteClusterTrust(TlsCommand):
    """Write the cluster CA's bundle: its current certificate and its previous one."""


@dataclass(frozen=True)
class WriteClientsTrust(TlsCommand):
    """Write the certificates brokers accept from clients: the clients CA's (current
    and previous) and the cluster CA's bundle."""


@dataclass(frozen=True)
class WriteOperatorTrust(TlsCommand):
    """Have the operator's credentials trust the cluster CA's bundle, its certificate
    kept."""


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


def _read_secret(context: Context, name: str) -> tuple[dict[str, bytes], dict[str, str]]:
    """Secret ``name``'s data, decoded, and annotations (both empty when absent)."""
    return kube.secret_with_annotations(context.api, context.namespace, name)


def _read(context: Context, name: str) -> dict[str, bytes]:
    return kube.secret_data(context.api, context.namespace, name)


def _generation(annotations: dict[str, str]) -> int:
    return int(annotations.get(certificates.GENERATION_ANNOTATION, "0"))


def _bundle(context: Context, kind: CaKind) -> tuple[bytes, int]:
    """The ``kind`` CA's certificates to trust (current, then previous) and its
    generation, from its own Secret."""
    data, annotations = _read_secret(context, _ca_names(kind, context.spec.name)[0])
    return _trusted(data), _generation(annotations)


def _trusted(ca_data: dict[str, bytes]) -> bytes:
    """A CA Secret's certificates to trust: current, then previous."""
    return ca_data[certificates.CA_CERT] + ca_data.get(certificates.PREVIOUS_CERT, b"")


def _leaf_generation(
    context: Context, written: set[str], entries: set[str], held: dict[str, str]
) -> int:
    """The cluster CA generation of a leaf Secret of ``entries`` after ``written`` were
    issued: the CA's current one when every entry was, else the one it ``held``."""
    if entries <= written:
        annotations = _read_secret(context, names.cluster_ca_secret(context.spec.name))[1]
        return _generation(annotations)
    return _generation(held)


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
        valid_days=spec.certificates.of(command.kind.value).validity_days,
    )
    pem = authority.certificate_pem
    _apply(context, certificates.ca_secret(spec, own, pem, authority.key_pem(), 0))
    if command.kind is CaKind.CLUSTER:
        _apply(context, certificates.ca_bundle_secret(spec, bundle, pem, 0))


def _write_cluster_trust(command: WriteClusterTrust, context: Context) -> None:
    spec = context.spec
    bundle, generation = _bundle(context, CaKind.CLUSTER)
    name = names.cluster_ca_cert_secret(spec.name)
    _apply(context, certificates.ca_bundle_secret(spec, name, bundle, generation))


def _write_clients_trust(command: WriteClientsTrust, context: Context) -> None:
    spec = context.spec
    clients, generation = _bundle(context, CaKind.CLIENTS)
    cluster = _bundle(context, CaKind.CLUSTER)[0]
    bundle = certificates.ca_bundle_secret(
        spec, names.clients_ca_cert_secret(spec.name), clients + cluster, generation
    )
    _apply(context, bundle)


def _issue_brokers(command: IssueBrokerCertificates, context: Context) -> None:
    spec = context.spec
    authority = _authority(context, names.cluster_ca_secret(spec.name))
    data, annotations = _read_secret(context, names.broker_certs_secret(spec.name))
    keystores = {key.removesuffix(".pem"): pem for key, pem in data.items()}
    written = set()
    for broker_id in command.broker_ids:
        issued = authority.issue(
            names.broker_subject(spec.name),
            hosts=certificates.broker_hosts(spec, broker_id),
            valid_days=LEAF_VALIDITY_DAYS,
        )
        pod = names.broker_pod(spec.name, broker_id)
        keystores[pod] = issued.key_pem() + issued.chain_pem
        written.add(pod)
    generation = _leaf_generation(context, written, set(keystores), annotations)
    _apply(context, certificates.broker_certs_secret(spec, keystores, generation))


def _issue_zookeeper(command: IssueZooKeeperCertificates, context: Context) -> None:
    spec = context.spec
    authority = _authority(context, names.cluster_ca_secret(spec.name))
    data, annotations = _read_secret(context, names.zookeeper_certs_secret(spec.name))
    issued = int(annotations.get(certificates.ISSUED_ANNOTATION, "0"))
    keystores = {key.removesuffix(".pem"): pem for key, pem in data.items()}
    written = set()
    for ordinal in command.ordinals:
        hosts = zookeeper_hosts(spec, ordinal)
        server = authority.issue(
            names.zookeeper_subject(spec.name), hosts=hosts, valid_days=LEAF_VALIDITY_DAYS
        )
        pod = hosts[0].split(".")[0]
        keystores[pod] = server.key_pem() + server.chain_pem
        written.add(pod)
    generation = _leaf_generation(context, written, set(keystores), annotations)
    secret = certificates.zookeeper_certs_secret(spec, keystores, issued + 1, generation)
    _apply(context, secret)


def _issue_operator(command: IssueOperatorCredentials, context: Context) -> None:
    spec = context.spec
    data, annotations = _read_secret(context, names.cluster_ca_secret(spec.name))
    authority = CertificateAuthority.from_pem(data[certificates.CA_CERT], data[certificates.CA_KEY])
    trusted = _trusted(data)
    issued = authority.issue(names.operator_subject(spec.name), valid_days=LEAF_VALIDITY_DAYS)
    secret = certificates.operator_credentials_secret(
        spec, trusted, issued.chain_pem, issued.key_pem(), _generation(annotations)
    )
    _apply(context, secret)


def _write_operator_trust(command: WriteOperatorTrust, context: Context) -> None:
    spec = context.spec
    held, annotations = _read_secret(context, names.operator_credentials_secret(spec.name))
    if not held:
        return  # none yet: IssueOperatorCredentials makes them, trust and all
    secret = certificates.operator_credentials_secret(
        spec,
        _bundle(context, CaKind.CLUSTER)[0],
        held[_KEYSTORE_CHAIN],
        held[_KEYSTORE_KEY],
        _generation(annotations),
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
    WriteClusterTrust: _write_cluster_trust,
    WriteClientsTrust: _write_clients_trust,
    WriteOperatorTrust: _write_operator_trust,
    IssueBrokerCertificates: _issue_brokers,
    IssueOperatorCredentials: _issue_operator,
    IssueZooKeeperCertificates: _issue_zookeeper,
    ReloadStores: _reload,
}
