"""The commands that carry a User's plan out, and their handlers (joined into
``commands.HANDLERS``): the brokers' SCRAM credential, ACLs and quotas through the admin
client, in that order; the User's Secret (owned by the User) written after the
credential, so that it records the password the credential was made from.

Passwords travel in commands but never show: the fields are left out of their repr
(commands are logged).
"""

from __future__ import annotations

import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidelog.admin.security import exact_filter
from tidelog.security.certificates import CertificateAuthority
from tidelog_operator import kube, names
from tidelog_operator.builders.certificates import CA_CERT, CA_KEY, GENERATION_ANNOTATION
from tidelog_operator.cluster.command_base import Command, Context
from tidelog_operator.user.plan import UserPlan
from tidelog_operator.user.secret import scram_secret, tls_secret
from tidelog_operator.user.spec import UserSpec

__all__ = [
    "USER_CERTIFICATE_DAYS",
    "USER_HANDLERS",
    "IssueUserCertificate",
    "SyncUser",
    "WriteScramSecret",
]

USER_CERTIFICATE_DAYS = 365


@dataclass(frozen=True)
class SyncUser(Command):
    """Carry ``plan`` out for user ``user`` (``password``: the SCRAM credential's)."""

    user: str
    plan: UserPlan
    password: str | None = field(default=None, repr=False)


@dataclass(frozen=True)
class WriteScramSecret(Command):
    """Write a SCRAM user's Secret: its password, JAAS line and the cluster CA bundle."""

    user: UserSpec
    owner: Mapping[str, Any] = field(repr=False)
    password: str = field(default="", repr=False)


@dataclass(frozen=True)
class IssueUserCertificate(Command):
    """Issue a TLS user a certificate from the clients CA and write its Secret, marked
    with the CA's generation (``tidelog.dev/ca-generation``)."""

    user: UserSpec
    owner: Mapping[str, Any] = field(repr=False)


def _apply(context: Context, secret: dict[str, Any], owner: Mapping[str, Any]) -> None:
    secret["metadata"]["ownerReferences"] = [dict(owner)]
    kube.apply(context.api, secret)


def _sync(command: SyncUser, context: Context) -> None:
    admin, plan = context.admin(), command.plan
    if plan.upsert_scram:
        admin.upsert_scram_credential(command.user, command.password)
    if plan.delete_scram:
        admin.delete_scram_credential(command.user, missing_ok=True)
    if plan.delete_acls:
        admin.delete_acls([exact_filter(binding) for binding in plan.delete_acls])
    if plan.create_acls:
        admin.create_acls(plan.create_acls)
    if plan.set_quotas or plan.remove_quotas:
        admin.alter_client_quotas(command.user, set=plan.set_quotas, remove=plan.remove_quotas)


def _write_scram(command: WriteScramSecret, context: Context) -> None:
    bundle = kube.secret_data(
        context.api, context.namespace, names.cluster_ca_cert_secret(context.cluster)
    )[CA_CERT]
    _apply(context, scram_secret(command.user, command.password, bundle), command.owner)


def _issue_certificate(command: IssueUserCertificate, context: Context) -> None:
    ca_data, ca_annotations = kube.secret_with_annotations(
        context.api, context.namespace, names.clients_ca_secret(context.cluster)
    )
    if not ca_data:
        return  # no clients CA yet: the certificate step makes it
    authority = CertificateAuthority.from_pem(ca_data[CA_CERT], ca_data[CA_KEY])
    generation = ca_annotations.get(GENERATION_ANNOTATION, "0")
    bundle = kube.secret_data(
        context.api, context.namespace, names.cluster_ca_cert_secret(context.cluster)
    )[CA_CERT]
    issued = authority.issue(command.user.certificate_subject, valid_days=USER_CERTIFICATE_DAYS)
    store_password = secrets.token_urlsafe(24)
    secret = tls_secret(command.user, issued, bundle, store_password)
    secret["metadata"].setdefault("annotations", {})[GENERATION_ANNOTATION] = generation
    _apply(context, secret, command.owner)


USER_HANDLERS = {
    SyncUser: _sync,
    WriteScramSecret: _write_scram,
    IssueUserCertificate: _issue_certificate,
}
