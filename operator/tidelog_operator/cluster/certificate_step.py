"""What a Cluster's TLS material needs, decided from what its Secrets hold (one list of
the Cluster's Secrets per pass): the two CAs made once; the cluster CA's bundle
(``<c>-cluster-ca-cert``): its current certificate and, during a renewal, the previous
one; the certificates the brokers accept from clients (``<c>-clients-ca-cert``): the
clients CA's (current and previous) and the cluster CA's bundle, so that a broker's own
certificate passes where its health check probes a listener that wants one; a
certificate issued for each broker, ZooKeeper server and the operator that lacks one,
or whose certificate lacks a name it needs, is not signed by the current cluster CA,
expires within the renewal period, or sits in a Secret of an older CA generation.

The CAs are renewed by ``ca_renewal`` (trusting the new one everywhere before any leaf
changes, then dropping the old one), whose Secrets this step follows: while a renewal
holds a CA's signing, none of its leaves is issued. Pure: :func:`tls_view` reads Secret
data, :func:`certificate_step` decides; the commands (``certificate_commands``) act.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from tidelog.security.certificates import CertificateFacts, certificates_in
from tidelog_operator import names
from tidelog_operator.builders.certificates import (
    CA_CERT,
    GENERATION_ANNOTATION,
    ISSUED_ANNOTATION,
    PREVIOUS_CERT,
    TRUSTSTORE,
    broker_hosts,
)
from tidelog_operator.builders.zookeeper import zookeeper_hosts
from tidelog_operator.cluster.ca_renewal import RenewalTrigger, force_request
from tidelog_operator.cluster.certificate_commands import (
    CaKind,
    IssueBrokerCertificates,
    IssueCa,
    IssueOperatorCredentials,
    IssueZooKeeperCertificates,
    ReloadStores,
    TlsCommand,
    WriteClientsTrust,
    WriteClusterTrust,
    WriteOperatorTrust,
)
from tidelog_operator.spec import ClusterSpec

__all__ = [
    "RENEWAL_DAYS",
    "TlsView",
    "bundle_fingerprints",
    "ca_trust_markers",
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
    leaf certificate of each broker pod and of the operator.

    For the renewal of the CAs (``ca_renewal``), by :class:`CaKind`: the certificate a
    renewal replaced (``ca-previous.crt``, still trusted), the CA Secret's generation and
    the renewal its annotations ask for; the CA generation each leaf Secret's content
    belongs to (``tidelog.dev/ca-generation``, 0 when unmarked); the fingerprints the
    operator's credentials trust (None: not observed, never compared).
    """

    cluster_ca: CertificateFacts | None = None
    clients_ca: CertificateFacts | None = None
    brokers: Mapping[str, CertificateFacts] = field(default_factory=dict)
    operator: CertificateFacts | None = None
    zookeeper: Mapping[str, CertificateFacts] = field(default_factory=dict)
    zookeeper_issued: int = 0  # how many times the servers' certificates were issued
    # the fingerprints of the certificates each bundle (``ca.crt``) trusts
    cluster_trust: frozenset[str] = frozenset()
    clients_trust: frozenset[str] = frozenset()
    previous: Mapping[CaKind, CertificateFacts] = field(default_factory=dict)
    generations: Mapping[CaKind, int] = field(default_factory=dict)
    forces: Mapping[CaKind, RenewalTrigger] = field(default_factory=dict)
    broker_generation: int = 0
    zookeeper_generation: int = 0
    operator_generation: int = 0
    operator_trust: frozenset[str] | None = None

    def current(self, kind: CaKind) -> CertificateFacts | None:
        """The ``kind`` CA's certificate, None when not made."""
        return self.cluster_ca if kind is CaKind.CLUSTER else self.clients_ca

    def generation(self, kind: CaKind) -> int:
        return self.generations.get(kind, 0)

    def bundle(self, kind: CaKind) -> frozenset[str]:
        """The fingerprints the ``kind`` CA's bundle should trust: its current
        certificate and, during a renewal, the previous one."""
        found = (self.current(kind), self.previous.get(kind))
        return frozenset(facts.sha256_fingerprint for facts in found if facts is not None)


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
    annotations = annotations or {}

    def annotation(secret: str, key: str) -> int:
        return int((annotations.get(secret) or {}).get(key, "0"))

    credentials_name = names.operator_credentials_secret(spec.name)
    credentials = secrets.get(credentials_name)
    zookeeper_certs = names.zookeeper_certs_secret(spec.name)
    broker_certs = names.broker_certs_secret(spec.name)
    cas = {
        CaKind.CLUSTER: names.cluster_ca_secret(spec.name),
        CaKind.CLIENTS: names.clients_ca_secret(spec.name),
    }
    previous = {
        kind: facts
        for kind, name in cas.items()
        if (facts := _facts(_text(secrets.get(name), PREVIOUS_CERT))) is not None
    }
    forces = {
        kind: trigger
        for kind, name in cas.items()
        if name in secrets and (trigger := force_request(annotations.get(name))) is not None
    }
    trust = _text(credentials, TRUSTSTORE)
    return TlsView(
        cluster_ca=_facts(_text(secrets.get(cas[CaKind.CLUSTER]), CA_CERT)),
        clients_ca=_facts(_text(secrets.get(cas[CaKind.CLIENTS]), CA_CERT)),
        brokers=_keystores(secrets.get(broker_certs)),
        zookeeper=_keystores(secrets.get(zookeeper_certs)),
        zookeeper_issued=annotation(zookeeper_certs, ISSUED_ANNOTATION),
        operator=_facts(_text(credentials, _KEYSTORE)),
        cluster_trust=bundle_fingerprints(
            _text(secrets.get(names.cluster_ca_cert_secret(spec.name)), CA_CERT)
        ),
        clients_trust=bundle_fingerprints(
            _text(secrets.get(names.clients_ca_cert_secret(spec.name)), CA_CERT)
        ),
        previous=previous,
        generations={
            kind: annotation(name, GENERATION_ANNOTATION)
            for kind, name in cas.items()
            if name in secrets
        },
        forces=forces,
        broker_generation=annotation(broker_certs, GENERATION_ANNOTATION),
        zookeeper_generation=annotation(zookeeper_certs, GENERATION_ANNOTATION),
        operator_generation=annotation(credentials_name, GENERATION_ANNOTATION),
        operator_trust=None if credentials is None else bundle_fingerprints(trust),
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


def _ordinal(pod: str) -> int:
    return int(pod.rsplit("-", 1)[1])


def _to_issue(
    entries: Mapping[str, CertificateFacts],
    count: int,
    pod: Callable[[int], str],
    hosts: Callable[[int], list[str]],
    ca: CertificateFacts | None,
    older: bool,
    signing: bool,
    now: datetime.datetime,
) -> tuple[int, ...]:
    """The ordinals below ``count`` whose leaf is stale; every one, and every entry of
    the Secret besides, when the Secret is of an older CA generation (``older``), so that
    the reissue covers the whole Secret, which then carries the current generation.
    While the CA's signing is paused (not ``signing``), only those that have no leaf at
    all: a pod cannot start without one, and the renewal waits for every pod."""
    if not signing:
        return tuple(i for i in range(count) if pod(i) not in entries)
    stale = {i for i in range(count) if older or _stale(entries.get(pod(i)), ca, hosts(i), now)}
    if older:
        stale |= {_ordinal(name) for name in entries}
    return tuple(sorted(stale))


def certificate_step(
    spec: ClusterSpec,
    view: TlsView,
    running: int,
    now: datetime.datetime,
    served: Mapping[int, str] | None = None,
    paused: frozenset[CaKind] = frozenset(),
) -> tuple[TlsCommand, ...]:
    """The commands that give the Cluster, with ``running`` brokers, what it lacks (all
    of it in its first pass: each handler reads what the one before it wrote), and that
    have each broker still serving another certificate than its Secret's (``served``:
    fingerprints by broker id) read its stores again, pass after pass until it serves
    it (the kubelet updates a mounted Secret within a minute or so).

    The bundles follow the CA Secrets (current and previous certificate); a leaf is
    stale too when its Secret is of an older CA generation; no leaf of a CA in
    ``paused`` is issued again (its renewal waits for the new CA to be trusted
    everywhere), only those missing; the operator's credentials trust what the cluster
    CA's bundle trusts."""
    commands: list[TlsCommand] = []
    if view.cluster_ca is None:
        commands.append(IssueCa(CaKind.CLUSTER))
    if view.clients_ca is None:
        commands.append(IssueCa(CaKind.CLIENTS))
    cluster_bundle = view.bundle(CaKind.CLUSTER)
    if view.cluster_ca is not None and view.cluster_trust != cluster_bundle:
        commands.append(WriteClusterTrust())
    if commands or view.clients_trust != view.bundle(CaKind.CLIENTS) | cluster_bundle:
        commands.append(WriteClientsTrust())
    signing = CaKind.CLUSTER not in paused
    generation = view.generation(CaKind.CLUSTER)
    stale = _to_issue(
        view.brokers,
        running,
        lambda i: names.broker_pod(spec.name, i),
        lambda i: broker_hosts(spec, i),
        view.cluster_ca,
        view.broker_generation < generation,
        signing,
        now,
    )
    if stale:
        commands.append(IssueBrokerCertificates(stale))
    servers = 0 if spec.zookeeper.external else spec.zookeeper.replicas
    stale_servers = _to_issue(
        view.zookeeper,
        servers,
        lambda i: f"{names.zookeeper_statefulset(spec.name)}-{i}",
        lambda i: zookeeper_hosts(spec, i),
        view.cluster_ca,
        servers > 0 and view.zookeeper_generation < generation,
        signing,
        now,
    )
    if stale_servers:
        commands.append(IssueZooKeeperCertificates(stale_servers))
    operator_stale = (
        _stale(view.operator, view.cluster_ca, [], now) or view.operator_generation < generation
    )
    if view.operator is None or (operator_stale and signing):
        commands.append(IssueOperatorCredentials())
    elif (
        view.operator is not None
        and view.operator_trust is not None
        and view.operator_trust != cluster_bundle
    ):
        commands.append(WriteOperatorTrust())
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


def ca_trust_markers(view: TlsView) -> tuple[str, str]:
    """The markers of the brokers' and ZooKeeper's pod templates
    (:data:`~tidelog_operator.builders.certificates.CA_TRUST_ANNOTATION`): the
    generations of the CAs their bundles trust, ``cluster=N`` or ``cluster=N+N-1``
    while the previous certificate is trusted too (brokers: ``,clients=M...`` beside).
    From the Secrets' annotations, not the certificates: a CA made in this very pass is
    generation 0 without a previous one, as predicted, so a new Cluster does not roll
    once its CAs exist."""

    def part(kind: CaKind) -> str:
        generation = view.generation(kind)
        previous = f"+{generation - 1}" if kind in view.previous else ""
        return f"{kind.value}={generation}{previous}"

    cluster = part(CaKind.CLUSTER)
    return f"{cluster},{part(CaKind.CLIENTS)}", cluster


def zookeeper_issue(view: TlsView, commands: tuple[TlsCommand, ...]) -> int:
    """How many times the ZooKeeper servers' certificates will have been issued once
    ``commands`` are carried out (their pod template carries it: a new issue restarts
    them, since ZooKeeper does not reload its certificates)."""
    issuing = any(isinstance(command, IssueZooKeeperCertificates) for command in commands)
    return view.zookeeper_issued + issuing
