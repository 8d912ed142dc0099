"""What a User needs done: its spec set against the user as the brokers have it (a pure
function; the Cluster's pass carries the plan out through ``tidelog.admin``).

Kubernetes is the source of truth, as for Topics: the user's ACLs become exactly the
spec's (bindings the spec lacks are deleted, whoever made them), its quotas exactly the
spec's (a key the spec does not give is removed), and it has a SCRAM-SHA-512 credential
exactly when it is a SCRAM user. A deleted User (``desired`` None) leaves nothing behind.

A SCRAM credential cannot be read back (the brokers keep only salted keys), so a
credential is made again when there is none or when the password changed
(:attr:`Actual.password_changed`: the password to use is not the one the user's Secret
holds). The order to carry a plan out in: the credential first, then the user's Secret,
which is thus the record of the password the credential was made from; a pass stopped
in between makes the credential again in the next.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tidelog.security.acls import AclBinding
from tidelog_operator.user.spec import UserSpec

__all__ = ["Actual", "UserPlan", "plan_user"]


@dataclass(frozen=True)
class Actual:
    """The user as the brokers have it.

    ``acls``: DescribeAcls for the user's principal (``User:<name>``) exactly;
    ``quotas``: DescribeClientQuotas' values for the user's own entity (not those of the
    user with a client id); ``scram_credential``: whether DescribeUserScramCredentials
    lists a SCRAM-SHA-512 credential; ``password_changed``: the password to use is not
    the one the user's Secret holds, or there is no such Secret
    (``secret.scram_password`` says).
    """

    acls: frozenset[AclBinding] = frozenset()
    quotas: Mapping[str, float] = field(default_factory=dict)
    scram_credential: bool = False
    password_changed: bool = False


@dataclass(frozen=True)
class UserPlan:
    """Calls to make: CreateAcls of ``create_acls``, DeleteAcls of ``delete_acls`` (each
    with its exact filter), AlterClientQuotas setting ``set_quotas`` and removing
    ``remove_quotas``, AlterUserScramCredentials upserting the SCRAM-SHA-512 credential
    (``upsert_scram``) or deleting it (``delete_scram``)."""

    create_acls: tuple[AclBinding, ...] = ()
    delete_acls: tuple[AclBinding, ...] = ()
    set_quotas: dict[str, float] = field(default_factory=dict)
    remove_quotas: tuple[str, ...] = ()
    upsert_scram: bool = False
    delete_scram: bool = False

    @property
    def nothing_to_do(self) -> bool:
        return not (
            self.create_acls
            or self.delete_acls
            or self.set_quotas
            or self.remove_quotas
            or self.upsert_scram
            or self.delete_scram
        )

    def describe(self) -> str:
        """What the plan changes, in one line (for an event or a log), or ``nothing``."""
        parts = []
        if self.upsert_scram:
            parts.append("SCRAM-SHA-512 credential set")
        if self.delete_scram:
            parts.append("SCRAM-SHA-512 credential deleted")
        if self.create_acls:
            parts.append(f"{len(self.create_acls)} ACLs created")
        if self.delete_acls:
            parts.append(f"{len(self.delete_acls)} ACLs deleted")
        if self.set_quotas:
            parts.append("quotas set: " + ", ".join(sorted(self.set_quotas)))
        if self.remove_quotas:
            parts.append("quotas removed: " + ", ".join(self.remove_quotas))
        return "; ".join(parts) or "nothing"


def plan_user(desired: UserSpec | None, actual: Actual) -> UserPlan:
    """The calls that make ``actual`` what ``desired`` says (None: the User is deleted,
    so everything it has goes)."""
    if desired is None:
        return UserPlan(
            delete_acls=tuple(sorted(actual.acls)),
            remove_quotas=tuple(sorted(actual.quotas)),
            delete_scram=actual.scram_credential,
        )
    wanted, have = frozenset(desired.acls), frozenset(actual.acls)
    return UserPlan(
        create_acls=tuple(sorted(wanted - have)),
        delete_acls=tuple(sorted(have - wanted)),
        set_quotas={
            key: value
            for key, value in sorted(desired.quotas.items())
            if actual.quotas.get(key) != value
        },
        remove_quotas=tuple(sorted(key for key in actual.quotas if key not in desired.quotas)),
        upsert_scram=desired.scram and (not actual.scram_credential or actual.password_changed),
        delete_scram=not desired.scram and actual.scram_credential,
    )
