"""The commands of a CA's renewal (:mod:`ca_renewal` decides them) and their handlers,
:data:`RENEWAL_HANDLERS`, for ``commands.HANDLERS``.

Both act on the CA's own Secret (``<c>-cluster-ca`` or ``<c>-clients-ca``), the durable
record of a renewal: ``ca.crt`` and ``ca.key`` the CA that signs, ``ca-previous.crt``
while a renewal runs the certificate it replaced (still trusted, through the bundle the
certificate step writes from this Secret), the annotation ``tidelog.dev/ca-generation``
the CA's generation. Each handler is idempotent, so that a pass that stopped anywhere
may be run again: it reads the Secret first and does only what is not done.

Users ask for a renewal with an annotation on that Secret (Strimzi's names, under
``tidelog.dev``):

- ``tidelog.dev/force-renew``: a new certificate for the same key and subject
  (Strimzi's renew-certificate policy): the leaves it signed verify under either;
- ``tidelog.dev/force-replace``: a new key and subject, ``CN=<c>-<kind>-ca v<N>``
  (Strimzi's replace-key policy).

Their presence is the request (whatever the value). :class:`RenewCa` removes them
once the Secret holds the new generation; users set them with ``kubectl annotate``,
whose field manager owns them, so they are removed with a JSON merge patch (a
server-side apply only drops fields the operator itself owns). For the same reason
``ca-previous.crt`` is dropped with a merge patch: the Secret may have been restored by
another manager, whose co-ownership would keep it through an apply.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass
from typing import Any

from tidelog.security.certificates import CertificateAuthority
from tidelog_operator import kube, names
from tidelog_operator.builders import certificates
from tidelog_operator.cluster.certificate_commands import CaKind
from tidelog_operator.cluster.command_base import Command, Context

__all__ = [
    "FORCE_RENEW_ANNOTATION",
    "FORCE_REPLACE_ANNOTATION",
    "PREVIOUS_CERT",
    "RENEWAL_HANDLERS",
    "ForgetPreviousCa",
    "RenewCa",
    "ca_subject",
]

FORCE_RENEW_ANNOTATION = "tidelog.dev/force-renew"
FORCE_REPLACE_ANNOTATION = "tidelog.dev/force-replace"
PREVIOUS_CERT = certificates.PREVIOUS_CERT


@dataclass(frozen=True)
class RenewCa(Command):
    """Make generation ``to`` of the ``kind`` CA, the current one kept as the previous,
    with a new key (``replace_key``) or the same; and remove the force annotations.
    Nothing is made when the Secret is at ``to`` or later already (the annotations are
    still removed: a pass that stopped between the two writes left them)."""

    kind: CaKind
    to: int
    replace_key: bool


@dataclass(frozen=True)
class ForgetPreviousCa(Command):
    """Drop the ``kind`` CA's previous certificate (``ca-previous.crt``) from its
    Secret: the bundle the certificate step writes then trusts the current one alone."""

    kind: CaKind


def ca_subject(cluster: str, kind: CaKind, generation: int) -> str:
    """The subject of the ``kind`` CA made with a new key at ``generation``."""
    return f"CN={cluster}-{kind.value}-ca v{generation},O={names.GROUP}"


def _secret_name(kind: CaKind, cluster: str) -> str:
    if kind is CaKind.CLUSTER:
        return names.cluster_ca_secret(cluster)
    return names.clients_ca_secret(cluster)


def _secret(context: Context, name: str) -> tuple[dict[str, bytes], dict[str, str]]:
    return kube.secret_with_annotations(context.api, context.namespace, name)


def _merge_patch(context: Context, name: str, body: dict[str, Any]) -> None:
    """A JSON merge patch of Secret ``name`` (``None`` values remove their key)."""
    kube.merge_patch(context.api, "v1", "Secret", name, context.namespace, body)


def _renew(command: RenewCa, context: Context) -> None:
    spec = context.spec
    name = _secret_name(command.kind, spec.name)
    data, annotations = _secret(context, name)
    if not data:
        return  # no CA to renew: the certificate step makes one
    generation = int(annotations.get(certificates.GENERATION_ANNOTATION, "0"))
    if generation < command.to:
        current = CertificateAuthority.from_pem(
            data[certificates.CA_CERT], data[certificates.CA_KEY]
        )
        days = spec.certificates.of(command.kind.value).validity_days
        if command.replace_key:
            subject = ca_subject(spec.name, command.kind, command.to)
            renewed = CertificateAuthority(subject, valid_days=days)
        else:
            renewed = current.renewed(valid_days=days)
        written = certificates.ca_secret(
            spec, name, renewed.certificate_pem, renewed.key_pem(), command.to
        )
        written["data"][PREVIOUS_CERT] = base64.b64encode(current.certificate_pem).decode()
        written["metadata"]["ownerReferences"] = [dict(context.owner)]
        kube.apply(context.api, written)
    forced = [
        key for key in (FORCE_RENEW_ANNOTATION, FORCE_REPLACE_ANNOTATION) if key in annotations
    ]
    if forced:
        _merge_patch(context, name, {"metadata": {"annotations": dict.fromkeys(forced)}})


def _forget_previous(command: ForgetPreviousCa, context: Context) -> None:
    name = _secret_name(command.kind, context.spec.name)
    if PREVIOUS_CERT in _secret(context, name)[0]:
        _merge_patch(context, name, {"data": {PREVIOUS_CERT: None}})


RENEWAL_HANDLERS = {
    RenewCa: _renew,
    ForgetPreviousCa: _forget_previous,
}
