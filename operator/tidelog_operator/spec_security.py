"""A Cluster's security spec as typed values: its listeners (``spec.listeners``), its
authorization (``spec.authorization``) and its certificate authorities
(``spec.certificates``), with the CRD's defaults (``crds/cluster.yaml``) for objects made
before a default existed.

Each listener is one Kafka listener of every broker, named as the spec names it in upper
case (``internal`` → ``INTERNAL``). Its security protocol follows from ``tls`` and
``authentication`` as Kafka's does (PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL); mutual TLS
(``authentication: tls``) needs ``tls``, which the CRD checks. Beside them every broker has
the operator's own listener, ``REPLICATION`` on :data:`REPLICATION_PORT`: mutual TLS with
the cluster CA's certificates, for the brokers' traffic among themselves and the
operator's own admin connection, never for applications (Strimzi's design too).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from tidelog_operator.maintenance import CronExpression, parse_cron

__all__ = [
    "AUTHENTICATION_NONE",
    "AUTHENTICATION_SCRAM",
    "AUTHENTICATION_TLS",
    "DEFAULT_LISTENERS",
    "REPLICATION_LISTENER",
    "REPLICATION_PORT",
    "AuthorizationSpec",
    "CaSpec",
    "CertificatesSpec",
    "ListenerSpec",
    "parse_authorization",
    "parse_certificates",
    "parse_listeners",
]

REPLICATION_LISTENER = "REPLICATION"
REPLICATION_PORT = 9091

AUTHENTICATION_NONE = "none"
AUTHENTICATION_SCRAM = "scram-sha-512"
AUTHENTICATION_TLS = "tls"

INTERNAL = "internal"
NODEPORT = "nodeport"


@dataclass(frozen=True)
class ListenerSpec:
    """One listener of the spec: reached inside Kubernetes through the bootstrap and
    headless Services (``internal``), or from outside at each node's address and port
    ``node_port_base + broker id`` (``nodeport``; advertised as ``host``, else the node's
    address). ``network_policy_peers`` are Kubernetes NetworkPolicyPeers, as the spec
    gives them, admitted to the listener's port; none admits everyone."""

    name: str
    port: int
    tls: bool = True
    authentication: str = AUTHENTICATION_SCRAM
    type: str = INTERNAL
    node_port_base: int | None = None
    host: str | None = None
    network_policy_peers: tuple[Mapping[str, Any], ...] = ()

    @property
    def kafka_name(self) -> str:
        """The listener's name in the brokers' configuration."""
        return self.name.upper()

    @property
    def security_protocol(self) -> str:
        sasl = self.authentication == AUTHENTICATION_SCRAM
        if self.tls:
            return "SASL_SSL" if sasl else "SSL"
        return "SASL_PLAINTEXT" if sasl else "PLAINTEXT"

    @property
    def internal(self) -> bool:
        return self.type == INTERNAL

    @property
    def node_port(self) -> bool:
        return self.type == NODEPORT


DEFAULT_LISTENERS = (ListenerSpec(INTERNAL, 9092),)


@dataclass(frozen=True)
class AuthorizationSpec:
    """Kafka's ACL authorizer when ``enabled`` (``type: simple``); ``super_users`` are
    principals (``User:<name>``) allowed everything, beside the operator and the brokers."""

    enabled: bool = False
    super_users: tuple[str, ...] = field(default_factory=tuple)


def _listener(raw: Mapping[str, Any]) -> ListenerSpec:
    return ListenerSpec(
        name=raw["name"],
        port=raw["port"],
        tls=raw.get("tls", True),
        authentication=raw.get("authentication", AUTHENTICATION_SCRAM),
        type=raw.get("type", INTERNAL),
        node_port_base=raw.get("nodePortBase"),
        host=raw.get("host"),
        network_policy_peers=tuple(raw.get("networkPolicyPeers") or ()),
    )


def parse_listeners(raw: Sequence[Mapping[str, Any]] | None) -> tuple[ListenerSpec, ...]:
    """``spec.listeners``; the CRD's default (one internal listener with TLS and
    SCRAM-SHA-512) when absent."""
    if not raw:
        return DEFAULT_LISTENERS
    return tuple(_listener(listener) for listener in raw)


def _principal(user: str) -> str:
    return user if ":" in user else f"User:{user}"


def parse_authorization(raw: Mapping[str, Any] | None) -> AuthorizationSpec:
    """``spec.authorization``: none (every authenticated client may do everything) when
    absent; super users given by name become ``User:<name>``."""
    if not raw:
        return AuthorizationSpec()
    users = tuple(_principal(user) for user in raw.get("superUsers") or ())
    return AuthorizationSpec(enabled=raw.get("type") == "simple", super_users=users)


@dataclass(frozen=True)
class CaSpec:
    """One CA's validity, and how long before its end it is renewed (Strimzi's
    defaults: a year, and 30 days)."""

    validity_days: int = 365
    renewal_days: int = 30


@dataclass(frozen=True)
class CertificatesSpec:
    """The cluster CA's and the clients CA's :class:`CaSpec`, and the maintenance
    windows a renewal starts in (none: any time)."""

    cluster_ca: CaSpec = field(default_factory=CaSpec)
    clients_ca: CaSpec = field(default_factory=CaSpec)
    maintenance_windows: tuple[CronExpression, ...] = ()

    def of(self, ca: str) -> CaSpec:
        """The :class:`CaSpec` of CA ``ca``: ``"cluster"`` or ``"clients"``."""
        return self.cluster_ca if ca == "cluster" else self.clients_ca


def _ca(raw: Mapping[str, Any] | None) -> CaSpec:
    raw = raw or {}
    return CaSpec(
        validity_days=raw.get("validityDays", CaSpec.validity_days),
        renewal_days=raw.get("renewalDays", CaSpec.renewal_days),
    )


def parse_certificates(raw: Mapping[str, Any] | None) -> CertificatesSpec:
    """``spec.certificates``; ValueError naming the maintenance window that is not a cron
    expression (the CRD's pattern lets through numbers out of their field's range)."""
    raw = raw or {}
    windows = []
    for index, text in enumerate(raw.get("maintenanceWindows") or ()):
        try:
            windows.append(parse_cron(text))
        except ValueError as error:
            raise ValueError(f"spec.certificates.maintenanceWindows[{index}]: {error}") from None
    return CertificatesSpec(
        cluster_ca=_ca(raw.get("clusterCa")),
        clients_ca=_ca(raw.get("clientsCa")),
        maintenance_windows=tuple(windows),
    )
