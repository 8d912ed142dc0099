"""What a Cluster's TLS material needs, decided from what its Secrets hold (one list of
the Cluster's Secrets per pass): the two CAs made once; the certificates the brokers
accept from clients (``<c>-clients-ca-cert``): the clients CA's and the cluster CA's,
so that a broker's own certificate passes where its health check probes a listener that
wants one; a certificate issued for each broker and for the operator that lacks one,
or whose certificate lacks a name it needs, is not signed by the current cluster CA or
expires within the renewal period.

The CAs themselves are made once and last 365 days: renewing a CA (trusting the new one
everywhere before any leaf changes, then dropping the old one) is not done here. Pure:
:func:`tls_view` reads Secret data, :func:`certificate_step` decides; the commands
(``certificate_commands``) act.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from dataclasses import dataclass, field

from tidelog.security.certificates import CertificateFacts, certificates_in
from tidelog_operator import names
from tidelog_operator.builders.certificates import CA_CERT, ISSUED_ANNOTATION, broker_hosts
from tidelog_operator.builders.zookeeper import zookeeper_hosts
from tidelog_operator.cluster.certificate_commands import (
    CaKind,
    IssueBrokerCertificates,
    IssueCa,
    IssueOperatorCredentials,
    IssueZooKeeperCertificates,
    ReloadStores,
    TlsCommand,
    WriteClientsTrust,
)
from tidelog_operator.spec import ClusterSpec

__all__ = [
    "RENEWAL_DAYS",
    "TlsView",
    "bundle_fingerprints",
    "certificate_step",
    "tls_view",
    "zookeeper_issue",
]

# A leaf certificate is issued again this long before it expires.
RENEWAL_DAYS = 30
_KEYSTORE = "ssl.keystore.certificate.chain"


@dataclass(frozen=True)
class TlsView:
    """The facts of a Cluster's TLS Secrets: each CA's certificate, if made, and the
    leaf certificate of each broker pod and of the operator."""

    cluster_ca: CertificateFacts | None = None
    clients_ca: CertificateFacts | None = None
    brokers: Mapping[str, CertificateFacts] = field(default_factory=dict)
    operator: CertificateFacts | None = None
    zookeeper: Mapping[str, CertificateFacts] = field(default_factory=dict)
    zookeeper_issued: int = 0  # how many times the servers' certificates were issued
    # the fingerprints of the certificates each bundle (``ca.crt``) trusts
    cluster_trust: frozenset[str] = frozenset()
    clients_trust: frozenset[str] = frozenset()


def _text(data: Mapping[str, str] | None, key: str) -> bytes | None:
    """A Secret's ``data`` entry, decoded (the API server gives base64)."""
    if not data or key not in data:
        return None
    return base64.b64decode(data[key])


def _facts(pem: bytes | None) -> CertificateFacts | None:
    """The first certificate's of ``pem`` (a chain's leaf), None when it holds none."""
    try:
        return CertificateFacts.of(certificates_in(pem or b"")[0])
    except ValueError:
        return None  # absent or unreadable: made again


def bundle_fingerprints(pem: bytes | None) -> frozenset[str]:
    """The fingerprints of the certificates of a PEM bundle (none when unreadable)."""
    try:
        return frozenset(
            CertificateFacts.of(certificate).sha256_fingerprint
            for certificate in certificates_in(pem or b"")
        )
    except ValueError:
        return frozenset()


def _keystores(data: Mapping[str, str] | None) -> dict[str, CertificateFacts]:
    """Pod name → the facts of its certificate, from a Secret of ``<pod>.pem`` entries."""
    found = {}
    for key in data or {}:
        facts = _facts(_text(data, key))
        if key.endswith(".pem") and facts is not None:
            found[key.removesuffix(".pem")] = facts
    return found


def tls_view(
    spec: ClusterSpec,
    secrets: Mapping[str, Mapping[str, str]],
    annotations: Mapping[str, Mapping[str, str]] | None = None,
) -> TlsView:
    """The view of the Cluster's Secrets (name → ``data`` as the API server gives it,
    and name → annotations)."""
    credentials = secrets.get(names.operator_credentials_secret(spec.name))
    zookeeper_certs = names.zookeeper_certs_secret(spec.name)
    issued = ((annotations or {}).get(zookeeper_certs) or {}).get(ISSUED_ANNOTATION, "0")
    return TlsView(
        cluster_ca=_facts(_text(secrets.get(names.cluster_ca_secret(spec.name)), CA_CERT)),
        clients_ca=_facts(_text(secrets.get(names.clients_ca_secret(spec.name)), CA_CERT)),
        brokers=_keystores(secrets.get(names.broker_certs_secret(spec.name))),
        zookeeper=_keystores(secrets.get(zookeeper_certs)),
        zookeeper_issued=int(issued),
        operator=_facts(_text(credentials, _KEYSTORE)),
        cluster_trust=bundle_fingerprints(
            _text(secrets.get(names.cluster_ca_cert_secret(spec.name)), CA_CERT)
        ),
        clients_trust=bundle_fingerprints(
            _text(secrets.get(names.clients_ca_cert_secret(spec.name)), CA_CERT)
        ),
    )


def _stale(
    leaf: CertificateFacts | None,
    ca: CertificateFacts | None,
    hosts: list[str],
    now: datetime.datetime,
) -> bool:
    return (
        leaf is None
        or ca is None
        or leaf.authority_key_id != ca.subject_key_id
        or leaf.issuer != ca.subject
        or not set(hosts) <= set(leaf.dns_names)
        # ending, and a new one would last longer (a leaf never outlives its CA: near the
        # CA's own end, renewing the CA is what helps, not issuing leaves again and again)
        or (
            leaf.not_after - now < datetime.timedelta(days=RENEWAL_DAYS)
            and leaf.not_after < ca.not_after
        )
    )


def certificate_step(
    spec: ClusterSpec,
    view: TlsView,
    running: int,
    now: datetime.datetime,
    served: Mapping[int, str] | None = None,
) -> tuple[TlsCommand, ...]:
    """The commands that give the Cluster, with ``running`` brokers, what it lacks (all
    of it in its first pass: each handler reads what the one before it wrote), and that
    have each broker still serving another certificate than its Secret's (``served``:
    fingerprints by broker id) read its stores again, pass after pass until it serves
    it (the kubelet updates a mounted Secret within a minute or so)."""
    commands: list[TlsCommand] = []
    if view.cluster_ca is None:
        commands.append(IssueCa(CaKind.CLUSTER))
    if view.clients_ca is None:
        commands.append(IssueCa(CaKind.CLIENTS))
    clients = {view.clients_ca.sha256_fingerprint} if view.clients_ca is not None else set()
    if commands or view.clients_trust != clients | view.cluster_trust:
        commands.append(WriteClientsTrust())
    stale = tuple(
        broker_id
        for broker_id in range(running)
        if _stale(
            view.brokers.get(names.broker_pod(spec.name, broker_id)),
            view.cluster_ca,
            broker_hosts(spec, broker_id),
            now,
        )
    )
    if stale:
        commands.append(IssueBrokerCertificates(stale))
    servers = 0 if spec.zookeeper.external else spec.zookeeper.replicas
    stale_servers = tuple(
        ordinal
        for ordinal in range(servers)
        if _stale(
            view.zookeeper.get(f"{names.zookeeper_statefulset(spec.name)}-{ordinal}"),
            view.cluster_ca,
            zookeeper_hosts(spec, ordinal),
            now,
        )
    )
    if stale_servers:
        commands.append(IssueZooKeeperCertificates(stale_servers))
    if _stale(view.operator, view.cluster_ca, [], now):
        commands.append(IssueOperatorCredentials())
    outdated = tuple(
        broker_id
        for broker_id, fingerprint in sorted((served or {}).items())
        if (leaf := view.brokers.get(names.broker_pod(spec.name, broker_id))) is not None
        and broker_id not in stale
        and leaf.sha256_fingerprint != fingerprint
    )
    if outdated:
        commands.append(ReloadStores(outdated))
    return tuple(commands)


def zookeeper_issue(view: TlsView, commands: tuple[TlsCommand, ...]) -> int:
    """How many times the ZooKeeper servers' certificates will have been issued once
    ``commands`` are carried out (their pod template carries it: a new issue restarts
    them, since ZooKeeper does not reload its certificates)."""
    issuing = any(isinstance(command, IssueZooKeeperCertificates) for command in commands)
    return view.zookeeper_issued + issuing
