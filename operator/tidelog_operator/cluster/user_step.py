"""What each User of a Cluster needs, decided in the Cluster's pass (pure): the brokers'
ACLs, quotas and SCRAM credential made exactly the spec's (``user.plan``), and the
User's Secret written (SCRAM: its password; TLS: a certificate from the clients CA)
whenever it is missing, holds another password than the credential's, another
certificate than a current one of the clients CA (or one of an older generation of it:
``tidelog.dev/ca-generation``), or another ``ca.crt`` than the cluster CA's bundle. No
certificate is issued while the clients CA's renewal holds its signing. A deleted User
has everything it had on the brokers removed (its Secret, which it owns, goes with it).

A User that cannot be served says why in its status (``user.status``'s problems): the
Cluster without certificates or brokers that answer, a password Secret missing or
unusable, a Secret of its name that is not its own.
"""

from __future__ import annotations

import base64
import datetime
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidelog.security.certificates import CertificateFacts, certificates_in
from tidelog_operator.builders.certificates import GENERATION_ANNOTATION
from tidelog_operator.cluster.certificate_commands import CaKind
from tidelog_operator.cluster.certificate_step import RENEWAL_DAYS, TlsView, bundle_fingerprints
from tidelog_operator.cluster.command_base import Command
from tidelog_operator.cluster.user_commands import IssueUserCertificate, SyncUser, WriteScramSecret
from tidelog_operator.cluster.users import BrokerUsers, ObservedUser
from tidelog_operator.spec import ClusterSpec
from tidelog_operator.user import status as problems
from tidelog_operator.user.plan import Actual, plan_user
from tidelog_operator.user.secret import (
    CA_CERT,
    USER_CRT,
    owned_by,
    password_problem,
    scram_password,
    secret_value,
)
from tidelog_operator.user.spec import UserSpec, parse_user

__all__ = ["UserDecision", "user_step"]


@dataclass(frozen=True)
class UserDecision:
    """A User's commands, in order, and what stops it being served (None: nothing)."""

    observed: ObservedUser
    spec: UserSpec
    commands: tuple[Command, ...] = ()
    problem: problems.Problem | None = None


def _owner(body: Mapping[str, Any]) -> dict[str, Any]:
    meta = body["metadata"]
    return {
        "apiVersion": body["apiVersion"],
        "kind": body["kind"],
        "name": meta["name"],
        "uid": meta["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }


def _fingerprints(pem: bytes | None) -> frozenset[str]:
    try:
        return frozenset(
            CertificateFacts.of(c).sha256_fingerprint for c in certificates_in(pem or b"")
        )
    except ValueError:
        return frozenset()


def _certificate_current(data: Mapping[str, str], tls: TlsView, now: datetime.datetime) -> bool:
    """Whether a TLS user's Secret holds a certificate of the current clients CA, not
    ending within the renewal period (unless its CA ends first)."""
    pem = data.get(USER_CRT)
    if not pem or tls.clients_ca is None:
        return False
    try:
        leaf = CertificateFacts.of(certificates_in(base64.b64decode(pem))[0])
    except ValueError:
        return False
    ca = tls.clients_ca
    ending = leaf.not_after - now < datetime.timedelta(days=RENEWAL_DAYS)
    return (
        leaf.authority_key_id == ca.subject_key_id
        and leaf.issuer == ca.subject
        and not (ending and leaf.not_after < ca.not_after)
    )


def _password(observed: ObservedUser, spec: UserSpec) -> tuple[str, bool] | problems.Problem:
    """The SCRAM user's password and whether it is not the one its Secret holds, or the
    problem with the Secret the spec names."""
    held = secret_value(observed.secret.data if observed.secret else None, "password")
    referenced = None
    if spec.password_ref is not None:
        found = observed.password_secret
        referenced = secret_value(found.data if found else None, spec.password_ref.key)
        if referenced is None:
            return problems.password_secret_not_found(spec.password_ref, found is not None)
        why = password_problem(referenced)
        if why is not None:
            return problems.invalid_password(spec.password_ref, why)
    return scram_password(referenced, held)


def _older(observed: ObservedUser, tls: TlsView) -> bool:
    """Whether the User's Secret is of an older clients CA generation than the CA's."""
    annotations = observed.secret.metadata.annotations if observed.secret is not None else None
    held = int((annotations or {}).get(GENERATION_ANNOTATION, "0"))
    return held < tls.generation(CaKind.CLIENTS)


def _decide(
    cluster: ClusterSpec,
    observed: ObservedUser,
    spec: UserSpec,
    brokers: BrokerUsers | None,
    tls: TlsView,
    now: datetime.datetime,
    paused: bool,
) -> UserDecision:
    if observed.secret is not None and not owned_by(observed.secret.metadata.labels, spec):
        return UserDecision(observed, spec, problem=problems.secret_not_owned(spec))
    if tls.clients_ca is None or not tls.cluster_trust:
        waiting = problems.cluster_not_ready(spec, "its certificate authorities")
        return UserDecision(observed, spec, problem=waiting)
    if spec.acls and not cluster.authorization.enabled:
        return UserDecision(observed, spec, problem=problems.authorization_not_enabled(spec))
    password, changed = None, False
    if spec.scram:
        found = _password(observed, spec)
        if isinstance(found, problems.Problem):
            return UserDecision(observed, spec, problem=found)
        password, changed = found
    if brokers is None:
        waiting = problems.cluster_not_ready(spec, "brokers that answer")
        return UserDecision(observed, spec, problem=waiting)
    actual = Actual(
        acls=brokers.acls.get(spec.principal, frozenset()),
        quotas=brokers.quotas.get(spec.name, {}),
        scram_credential=spec.name in brokers.scram,
        password_changed=changed,
    )
    plan = plan_user(spec, actual)
    commands: list[Command] = []
    if not plan.nothing_to_do:
        commands.append(SyncUser(spec.name, plan, password))
    data = (observed.secret.data if observed.secret else None) or {}
    trusted = bundle_fingerprints(base64.b64decode(data[CA_CERT]) if data.get(CA_CERT) else None)
    stale_trust = trusted != tls.cluster_trust
    owner = _owner(observed.body)
    if spec.scram and (observed.secret is None or changed or stale_trust):
        commands.append(WriteScramSecret(spec, owner, password))
    stale = stale_trust or not _certificate_current(data, tls, now) or _older(observed, tls)
    if not spec.scram and not paused and stale:
        commands.append(IssueUserCertificate(spec, owner))
    return UserDecision(observed, spec, tuple(commands))


def user_step(
    cluster: ClusterSpec,
    users: tuple[ObservedUser, ...],
    brokers: BrokerUsers | None,
    tls: TlsView,
    now: datetime.datetime,
    paused: bool = False,
) -> tuple[UserDecision, ...]:
    """Each User's decision; a deleted User's is to remove what it has on the brokers
    (which waits for brokers that answer). ``paused``: the clients CA's renewal holds
    its signing (no certificate is issued)."""
    decisions = []
    for observed in users:
        body = observed.body
        spec = parse_user(observed.name, cluster.namespace, body.get("spec") or {})
        if not observed.deleting:
            decisions.append(_decide(cluster, observed, spec, brokers, tls, now, paused))
            continue
        if brokers is None:
            waiting = problems.cluster_not_ready(spec, "brokers that answer")
            decisions.append(UserDecision(observed, spec, problem=waiting))
            continue
        actual = Actual(
            acls=brokers.acls.get(spec.principal, frozenset()),
            quotas=brokers.quotas.get(spec.name, {}),
            scram_credential=spec.name in brokers.scram,
        )
        plan = plan_user(None, actual)
        commands = () if plan.nothing_to_do else (SyncUser(spec.name, plan, None),)
        decisions.append(UserDecision(observed, spec, commands))
    return tuple(decisions)
