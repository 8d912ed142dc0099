"""What a pass observes of its CAs for their renewal (pure): one
:class:`~ca_renewal.CaObserved` per CA from the snapshot and the status records, for
:func:`~ca_renewal.renewal_step` to decide on.

- ``trusted``: the fingerprints of the CA's certificates in its bundle (the clients
  CA's: ``<c>-clients-ca-cert`` without the cluster CA's bundle in it). The cluster CA
  is trusted in three places, its bundle, the clients CA's (the brokers' health checks)
  and the operator's credentials (which reach the brokers): none is counted trusted
  while they disagree, so that no step goes on before all three are written;
- ``rolled``: every pod that trusts the CA runs the pod template that carries the
  current trust marker (``certificate_step.ca_trust_markers``) and is ready. The
  brokers trust both CAs: their StatefulSet's template carries the marker, its
  controller has seen that spec, and every broker pod runs its update revision, ready
  (the roller restarts them). ZooKeeper trusts the cluster CA: its StatefulSet carries
  the marker and its controller's rolling update is done (current revision the update
  revision, every server ready); an external ensemble has nothing to roll;
- ``leaves_current``: every leaf the CA signs sits in a Secret of the CA's generation:
  for the cluster CA the brokers', ZooKeeper's (unless external) and the operator's;
  for the clients CA every TLS User's Secret (one not made yet is not current);
- ``served_current``: every live broker serves the certificate of its Secret (the
  brokers' TLS probe); not known, so False, when they did not answer. The clients CA
  signs nothing a broker serves.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tidelog_operator import names
from tidelog_operator.builders.certificates import CA_TRUST_ANNOTATION, GENERATION_ANNOTATION
from tidelog_operator.cluster.ca_renewal import CaObserved, CaRecord, status_key
from tidelog_operator.cluster.certificate_commands import CaKind
from tidelog_operator.cluster.certificate_step import TlsView, ca_trust_markers
from tidelog_operator.cluster.snapshot import ClusterSnapshot
from tidelog_operator.spec import ClusterSpec
from tidelog_operator.user.spec import parse_user

__all__ = [
    "brokers_rolled",
    "ca_observed",
    "served_current",
    "users_current",
    "zookeeper_rolled",
]


def brokers_rolled(snapshot: ClusterSnapshot, marker: str) -> bool:
    """Whether every broker runs, ready, the template that carries ``marker``."""
    live = snapshot.statefulset
    if live is None or live.going or live.update_revision is None:
        return False
    pods = {p.id: p for p in snapshot.pods}
    return (
        live.template_annotations.get(CA_TRUST_ANNOTATION) == marker
        and live.observed_generation == live.generation
        and all(
            (pod := pods.get(broker)) is not None
            and pod.revision == live.update_revision
            and pod.ready
            and not pod.going
            for broker in range(live.replicas)
        )
    )


def zookeeper_rolled(spec: ClusterSpec, snapshot: ClusterSnapshot, marker: str) -> bool:
    """Whether every ZooKeeper server runs, ready, the template that carries
    ``marker`` (True for an external ensemble)."""
    if spec.zookeeper.external:
        return True
    ensemble = snapshot.zookeeper
    return (
        ensemble is not None
        and ensemble.template_annotations.get(CA_TRUST_ANNOTATION) == marker
        and ensemble.rolled
    )


def served_current(spec: ClusterSpec, snapshot: ClusterSnapshot) -> bool:
    """Whether every live broker serves the certificate its Secret holds for it."""
    brokers = snapshot.brokers
    if brokers is None:
        return False
    leaves = snapshot.tls.brokers
    return all(
        (leaf := leaves.get(names.broker_pod(spec.name, broker))) is not None
        and brokers.served.get(broker) == leaf.sha256_fingerprint
        for broker in brokers.racks
    )


def users_current(spec: ClusterSpec, snapshot: ClusterSnapshot, generation: int) -> bool:
    """Whether every TLS User's Secret holds a certificate of clients CA ``generation``
    (or later)."""
    for observed in snapshot.users:
        if observed.deleting:
            continue
        user = parse_user(observed.name, spec.namespace, observed.body.get("spec") or {})
        if user.scram:
            continue
        secret = observed.secret
        if secret is None:
            return False
        held = int((secret.metadata.annotations or {}).get(GENERATION_ANNOTATION, "0"))
        if held < generation:
            return False
    return True


def _cluster_trusted(tls: TlsView) -> frozenset[str]:
    """What every trust of the cluster CA holds; nothing while they disagree."""
    trusts = [tls.cluster_trust, tls.clients_trust - tls.bundle(CaKind.CLIENTS)]
    if tls.operator_trust is not None:
        trusts.append(tls.operator_trust)
    return tls.cluster_trust if all(t == tls.cluster_trust for t in trusts) else frozenset()


def _cluster_leaves_current(spec: ClusterSpec, tls: TlsView) -> bool:
    generation = tls.generation(CaKind.CLUSTER)
    zookeeper = spec.zookeeper.external or tls.zookeeper_generation >= generation
    return (
        tls.broker_generation >= generation and tls.operator_generation >= generation and zookeeper
    )


def ca_observed(
    spec: ClusterSpec, snapshot: ClusterSnapshot, certificates: Mapping[str, Any]
) -> dict[CaKind, CaObserved]:
    """Each CA as its renewal sees it; ``certificates``: ``status.certificates``."""
    tls = snapshot.tls
    brokers_marker, zookeeper_marker = ca_trust_markers(tls)
    brokers = brokers_rolled(snapshot, brokers_marker)
    cluster_trust = tls.cluster_trust | tls.bundle(CaKind.CLUSTER)
    observed = {}
    for kind in CaKind:
        if kind is CaKind.CLUSTER:
            trusted = _cluster_trusted(tls)
            rolled = brokers and zookeeper_rolled(spec, snapshot, zookeeper_marker)
            leaves = _cluster_leaves_current(spec, tls)
            served = served_current(spec, snapshot)
        else:
            trusted = tls.clients_trust - cluster_trust
            rolled = brokers
            leaves = users_current(spec, snapshot, tls.generation(kind))
            served = True
        observed[kind] = CaObserved(
            kind=kind,
            current=tls.current(kind),
            previous=tls.previous.get(kind),
            generation=tls.generation(kind),
            force=tls.forces.get(kind),
            recorded=CaRecord.from_status(certificates.get(status_key(kind))),
            trusted=trusted,
            leaves_current=leaves,
            served_current=served,
            rolled=rolled,
        )
    return observed
