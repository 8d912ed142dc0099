"""Security calls of :class:`~tidelog.admin.AdminClient` (the part of Kafka's Admin API
that the operator's ``User`` resource needs): ACLs (CreateAcls, DescribeAcls,
DeleteAcls), SCRAM credentials (DescribeUserScramCredentials,
AlterUserScramCredentials) and client quotas (DescribeClientQuotas, AlterClientQuotas).

ACLs are :mod:`tidelog.security.acls`' own model, re-exported here: an
:class:`AclBinding` is a :class:`ResourcePattern` (type, name, LITERAL or PREFIXED) and an
:class:`AccessControlEntry` (principal, host, operation, ALLOW or DENY); an
:class:`AclBindingFilter` selects bindings as the brokers do (ANY, MATCH, a None name).

Where each request goes, as Kafka's admin client sends it to a ZooKeeper-mode cluster:
AlterUserScramCredentials to the controller (a ZooKeeper-mode Kafka broker that is not
the controller answers NOT_CONTROLLER; the controller is found again and asked again until
the timeout), every other request to any broker (the first bootstrap address that
answers). Each call is one request. A refusal raises :class:`AdminError` with the
broker's error code and message.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, NamedTuple

from tidelog.admin.errors import AdminError
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.acls import (
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from tidelog.security.scram_credentials import SCRAM_MECHANISMS

__all__ = [
    "CLIENT_ID",
    "DEFAULT_SCRAM_MECHANISM",
    "USER",
    "USER_QUOTA_KEYS",
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "ClientQuotaEntity",
    "PatternType",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "ScramCredentialInfo",
    "SecurityMixin",
    "exact_filter",
]

DEFAULT_SCRAM_MECHANISM = "SCRAM-SHA-512"
SALT_BYTES = 32
# Kafka's client quota entity types (ip entities are not served by tidelog).
USER = "user"
CLIENT_ID = "client-id"
# Kafka's quota keys for a user entity.
USER_QUOTA_KEYS = (
    "producer_byte_rate",
    "consumer_byte_rate",
    "request_percentage",
    "controller_mutation_rate",
)
# DescribeClientQuotas' match types: a name, or any name.
_MATCH_EXACT, _MATCH_SPECIFIED = 0, 2
_MECHANISM_NAMES = {m.wire_type: name for name, m in SCRAM_MECHANISMS.items()}


class ScramCredentialInfo(NamedTuple):
    """A user's credential as the brokers describe it: never its keys or salt."""

    mechanism: str  # SCRAM-SHA-256, SCRAM-SHA-512 (UNKNOWN for one tidelog cannot name)
    iterations: int


@dataclass(frozen=True)
class ClientQuotaEntity:
    """Kafka's ClientQuotaEntity: the name of each of its entity types (:data:`USER`,
    :data:`CLIENT_ID`), None for that type's default entity, as pairs sorted by type."""

    parts: tuple[tuple[str, str | None], ...]

    @classmethod
    def for_user(cls, user: str | None) -> ClientQuotaEntity:
        """The entity of ``user`` alone (None: the default user)."""
        return cls(((USER, user),))


def exact_filter(binding: AclBinding) -> AclBindingFilter:
    """The filter that matches ``binding`` and nothing else (to delete just it)."""
    pattern, entry = binding.pattern, binding.entry
    return AclBindingFilter(
        ResourcePatternFilter(pattern.resource_type, pattern.name, pattern.pattern_type),
        AccessControlEntryFilter(
            entry.principal, entry.host, entry.operation, entry.permission_type
        ),
    )


def _check(code: int, message: str | None) -> None:
    """AdminError for an error code other than NONE, with the broker's message or
    Kafka's text for the code."""
    if code != ErrorCode.NONE:
        raise AdminError(code, message or None)


def _enum(cls, code: int):
    """``cls(code)``, or UNKNOWN for a code this version of tidelog does not know."""
    try:
        return cls(code)
    except ValueError:
        return cls.UNKNOWN


def _binding(data: Any, resource: Any = None) -> AclBinding:
    """A binding of a DescribeAcls resource (``resource``) and one of its ACLs
    (``data``), or of a DeleteAcls matching ACL (``data`` alone, holding both)."""
    resource = data if resource is None else resource
    return AclBinding(
        ResourcePattern(
            _enum(ResourceType, resource.resource_type),
            resource.resource_name,
            _enum(PatternType, resource.pattern_type),
        ),
        AccessControlEntry(
            data.principal,
            data.host,
            _enum(AclOperation, data.operation),
            _enum(AclPermissionType, data.permission_type),
        ),
    )


def _filter_body(wanted: AclBindingFilter) -> dict:
    pattern, entry = wanted.pattern, wanted.entry
    return {
        "resource_type_filter": pattern.resource_type,
        "resource_name_filter": pattern.name,
        "pattern_type_filter": pattern.pattern_type,
        "principal_filter": entry.principal,
        "host_filter": entry.host,
        "operation": entry.operation,
        "permission_type": entry.permission_type,
    }


class SecurityMixin:
    """ACL, SCRAM credential and client quota calls; mixed into
    :class:`~tidelog.admin.AdminClient`, which provides ``_send`` and
    ``_controller_request``."""

    _send: Callable[..., tuple[Any, int]]
    _controller_request: Callable[..., tuple[Any, int]]

    # -- ACLs (version 1+: the first with pattern types) ---------------------------------

    def create_acls(self, bindings: Iterable[AclBinding]) -> None:
        """CreateAcls: every binding (one that exists already stays as it is); the first
        refused raises AdminError, the others having been created."""
        bindings = list(bindings)
        if not bindings:
            return
        creations = [
            {
                "resource_type": b.pattern.resource_type,
                "resource_name": b.pattern.name,
                "resource_pattern_type": b.pattern.pattern_type,
                "principal": b.entry.principal,
                "host": b.entry.host,
                "operation": b.entry.operation,
                "permission_type": b.entry.permission_type,
            }
            for b in bindings
        ]
        response, _ = self._send(
            None, ApiKey.CREATE_ACLS, lambda v: {"creations": creations}, min_version=1
        )
        for result in response.results:
            _check(result.error_code, result.error_message)

    def describe_acls(self, wanted: AclBindingFilter | None = None) -> list[AclBinding]:
        """DescribeAcls: the bindings ``wanted`` matches (every binding when None),
        sorted."""
        response, _ = self._send(
            None,
            ApiKey.DESCRIBE_ACLS,
            lambda v: _filter_body(wanted or AclBindingFilter()),
            min_version=1,
        )
        _check(response.error_code, response.error_message)
        return sorted(
            _binding(acl, resource) for resource in response.resources for acl in resource.acls
        )

    def delete_acls(self, filters: Iterable[AclBindingFilter]) -> list[AclBinding]:
        """DeleteAcls: every binding one of ``filters`` matches; what was deleted, sorted
        (a binding matched by several filters once). A filter or a deletion refused
        raises AdminError, what the other filters matched having been deleted."""
        bodies = [_filter_body(f) for f in filters]
        if not bodies:
            return []
        response, _ = self._send(
            None, ApiKey.DELETE_ACLS, lambda v: {"filters": bodies}, min_version=1
        )
        deleted: set[AclBinding] = set()
        for result in response.filter_results:
            _check(result.error_code, result.error_message)
            for matching in result.matching_acls:
                _check(matching.error_code, matching.error_message)
                deleted.add(_binding(matching))
        return sorted(deleted)

    # -- SCRAM credentials ---------------------------------------------------------------

    def describe_scram_credentials(
        self, users: Iterable[str] | None = None
    ) -> dict[str, list[ScramCredentialInfo]]:
        """DescribeUserScramCredentials: each user's credentials, by mechanism number;
        every user that has one when ``users`` is None. A named user without credentials
        is left out (the broker's RESOURCE_NOT_FOUND); another refusal raises AdminError."""
        names = None if users is None else list(dict.fromkeys(users))
        if names == []:
            return {}
        response, _ = self._send(
            None,
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            lambda v: {"users": None if names is None else [{"name": n} for n in names]},
        )
        _check(response.error_code, response.error_message)
        found = {}
        for result in response.results:
            if result.error_code == ErrorCode.RESOURCE_NOT_FOUND:
                continue
            _check(result.error_code, result.error_message)
            found[result.user] = [
                ScramCredentialInfo(_MECHANISM_NAMES.get(i.mechanism, "UNKNOWN"), i.iterations)
                for i in sorted(result.credential_infos, key=lambda i: i.mechanism)
            ]
        return found

    def upsert_scram_credential(
        self,
        user: str,
        password: str,
        *,
        mechanism: str = DEFAULT_SCRAM_MECHANISM,
        iterations: int = 4096,
    ) -> None:
        """AlterUserScramCredentials: ``user``'s credential for ``mechanism`` made or
        replaced. As Kafka's admin client, the password never leaves: a random salt is
        made here and the salted password (RFC 5802's Hi) is sent; the broker derives the
        keys. An unknown mechanism raises AdminError UNSUPPORTED_SASL_MECHANISM before
        anything is sent; iterations out of Kafka's bounds are the broker's
        UNACCEPTABLE_CREDENTIAL."""
        scram = SCRAM_MECHANISMS.get(mechanism)
        if scram is None:
            raise AdminError(
                ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"unknown SCRAM mechanism {mechanism!r}"
            )
        salt = os.urandom(SALT_BYTES)
        upsertion = {
            "name": user,
            "mechanism": scram.wire_type,
            "iterations": iterations,
            "salt": salt,
            "salted_password": scram.salted_password(password, salt, iterations),
        }
        self._alter_scram_credentials({"deletions": [], "upsertions": [upsertion]})

    def delete_scram_credential(
        self, user: str, mechanism: str = DEFAULT_SCRAM_MECHANISM, *, missing_ok: bool = False
    ) -> None:
        """AlterUserScramCredentials: ``user``'s credential for ``mechanism`` deleted (the
        user's other credentials and quotas stay). One that does not exist raises
        AdminError RESOURCE_NOT_FOUND unless ``missing_ok``."""
        scram = SCRAM_MECHANISMS.get(mechanism)
        if scram is None:
            raise AdminError(
                ErrorCode.UNSUPPORTED_SASL_MECHANISM, f"unknown SCRAM mechanism {mechanism!r}"
            )
        deletion = {"name": user, "mechanism": scram.wire_type}
        try:
            self._alter_scram_credentials({"deletions": [deletion], "upsertions": []})
        except AdminError as error:
            if not (missing_ok and error.code == ErrorCode.RESOURCE_NOT_FOUND):
                raise

    def _alter_scram_credentials(self, body: dict) -> None:
        response, _ = self._controller_request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            lambda v: body,
            lambda r, v: [result.error_code for result in r.results],
        )
        for result in response.results:
            _check(result.error_code, result.error_message)

    # -- client quotas -------------------------------------------------------------------

    def describe_client_quotas(
        self, user: str | None = None
    ) -> dict[ClientQuotaEntity, dict[str, float]]:
        """DescribeClientQuotas: the quotas of every entity of ``user`` (the user's own
        and those of the user with a client id), or, when ``user`` is None, of every
        entity naming a user (the default user included); an entity without quotas is
        not listed."""
        match = (
            {"match_type": _MATCH_SPECIFIED, "match": None}
            if user is None
            else {"match_type": _MATCH_EXACT, "match": user}
        )
        response, _ = self._send(
            None,
            ApiKey.DESCRIBE_CLIENT_QUOTAS,
            lambda v: {"components": [{"entity_type": USER, **match}], "strict": False},
        )
        _check(response.error_code, response.error_message)
        return {
            ClientQuotaEntity(
                tuple(sorted((e.entity_type, e.entity_name) for e in entry.entity))
            ): {value.key: value.value for value in entry.values}
            for entry in response.entries or ()
        }

    def alter_client_quotas(
        self,
        user: str,
        set: Mapping[str, float] | None = None,
        remove: Iterable[str] = (),
    ) -> None:
        """AlterClientQuotas for ``user``'s own entity: each key of ``set`` set to its
        value, each key of ``remove`` removed (one not set is no error). A key Kafka does
        not have (see :data:`USER_QUOTA_KEYS`), or a rate that must be whole and is not,
        raises AdminError INVALID_REQUEST and changes nothing."""
        ops = [{"key": k, "value": float(v), "remove": False} for k, v in (set or {}).items()]
        ops += [{"key": k, "value": 0.0, "remove": True} for k in remove]
        if not ops:
            return
        entry = {"entity": [{"entity_type": USER, "entity_name": user}], "ops": ops}
        response, _ = self._send(
            None,
            ApiKey.ALTER_CLIENT_QUOTAS,
            lambda v: {"entries": [entry], "validate_only": False},
        )
        for result in response.entries:
            _check(result.error_code, result.error_message)
