"""A User's status after a pass, from one function (pure): its ``Ready`` condition,
``username`` and ``secret`` (``crds/user.yaml``).

``Ready`` is True with ``Synced`` when the pass left the user as the spec says (its
credential, ACLs and quotas on the brokers, its Secret written); otherwise False with
the :class:`Problem` that stopped it, made by one of the functions below so that reasons
and messages are the same wherever the pass stops: ``ClusterNotFound``,
``ClusterNotReady`` (what the user needs from the Cluster is not there yet),
``PasswordSecretNotFound``, ``InvalidPassword``, ``SecretNotOwned`` (a Secret named like
the User that the operator did not write), ``SyncFailed`` (a broker refused a call or
did not answer). The Ready message names the state, not what the pass changed, so that a
pass that changes nothing writes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tidelog_operator import conditions
from tidelog_operator.conditions import Reason
from tidelog_operator.user.spec import SecretKeyRef, UserSpec

__all__ = [
    "Problem",
    "cluster_not_found",
    "cluster_not_ready",
    "invalid_password",
    "password_secret_not_found",
    "secret_not_owned",
    "sync_failed",
    "user_status",
]


@dataclass(frozen=True)
class Problem:
    """Why a User is not as its spec says: Ready False with ``reason``."""

    reason: str
    message: str


def cluster_not_found(spec: UserSpec) -> Problem:
    return Problem(
        Reason.CLUSTER_NOT_FOUND,
        f"Cluster {spec.cluster} not found in namespace {spec.namespace}",
    )


def cluster_not_ready(spec: UserSpec, waiting_for: str) -> Problem:
    """The Cluster exists but lacks what the user needs (``waiting_for``: its clients
    CA, brokers that answer)."""
    return Problem(Reason.CLUSTER_NOT_READY, f"Cluster {spec.cluster}: {waiting_for}")


def authorization_not_enabled(spec: UserSpec) -> Problem:
    """The User has ACLs, but its Cluster runs no authorizer to keep them (Kafka
    answers SECURITY_DISABLED to every ACL request then)."""
    return Problem(
        Reason.AUTHORIZATION_NOT_ENABLED,
        f"Cluster {spec.cluster} has no authorizer (spec.authorization): "
        f"the {len(spec.acls)} ACLs of {spec.principal} cannot be kept",
    )


def password_secret_not_found(ref: SecretKeyRef, secret_exists: bool) -> Problem:
    """``spec.authentication.password`` names a Secret, or a key of it, that is not there."""
    missing = f"has no key {ref.key}" if secret_exists else "not found"
    return Problem(Reason.PASSWORD_SECRET_NOT_FOUND, f"password Secret {ref.name} {missing}")


def invalid_password(ref: SecretKeyRef, why: str) -> Problem:
    """The password the spec names cannot be used (``secret.password_problem`` says
    ``why``)."""
    return Problem(Reason.INVALID_PASSWORD, f"password Secret {ref.name}, key {ref.key}: {why}")


def secret_not_owned(spec: UserSpec) -> Problem:
    return Problem(
        Reason.SECRET_NOT_OWNED,
        f"Secret {spec.secret_name} exists and was not written for this User; delete it "
        f"or give the User another name",
    )


def sync_failed(spec: UserSpec, step: str, error: object) -> Problem:
    """A broker refused ``step`` (``setting ACLs``, ...) or did not answer."""
    return Problem(Reason.SYNC_FAILED, f"{spec.principal}: {step}: {error}")


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def _synced_message(spec: UserSpec) -> str:
    quotas = ", ".join(f"{key}={_number(value)}" for key, value in sorted(spec.quotas.items()))
    return (
        f"{spec.principal}: {spec.authentication}, {len(spec.acls)} ACLs, "
        f"quotas {quotas or 'none'}; credentials in Secret {spec.secret_name}"
    )


def user_status(
    spec: UserSpec,
    current: Mapping[str, Any] | None,
    problem: Problem | None = None,
    *,
    generation: int | None,
    now: str,
) -> dict[str, Any]:
    """The status to write after a pass over ``spec`` whose ``current`` status was
    that: Ready from ``problem`` (None: the pass left the user as the spec says),
    ``username``, and ``secret`` once the pass wrote it (kept as it was otherwise).
    ``now`` is the transition time, should Ready change."""
    status = dict(current or {})
    if problem is None:
        ready = conditions.set_condition(
            status.get("conditions", []),
            conditions.READY,
            True,
            Reason.SYNCED,
            _synced_message(spec),
            generation=generation,
            now=now,
        )
        status["secret"] = spec.secret_name
    else:
        ready = conditions.set_condition(
            status.get("conditions", []),
            conditions.READY,
            False,
            problem.reason,
            problem.message,
            generation=generation,
            now=now,
        )
    status.update(conditions=ready, observedGeneration=generation, username=spec.name)
    return status
