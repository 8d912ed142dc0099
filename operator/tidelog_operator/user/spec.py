"""A User's spec (``crds/user.yaml``) as typed values, in the brokers' own terms.

The user is named like the User object; its principal is ``User:<name>`` whether it
authenticates with SCRAM-SHA-512 or with a certificate (``CN=<name>``, which the brokers'
principal mapping makes ``User:<name>``). Its Secret is named like it too.

Each entry of ``spec.authorization.acls`` becomes one :class:`AclBinding` per operation,
with Strimzi's names read as Kafka's (``DescribeConfigs`` → ``DESCRIBE_CONFIGS``,
``prefix`` → ``PREFIXED``, the cluster resource named ``kafka-cluster``), so that the
bindings compare equal to those DescribeAcls returns. Quotas take Kafka's keys
(``producer_byte_rate``, ...) and float values, as DescribeClientQuotas returns them.
The CRD's defaults (``patternType`` literal, ``host`` ``*``, ``type`` allow) are applied
here too, for objects written before a default existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tidelog.security.acls import (
    CLUSTER_NAME,
    WILDCARD,
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

__all__ = [
    "QUOTA_KEYS",
    "SCRAM_SHA_512",
    "TLS",
    "SecretKeyRef",
    "UserSpec",
    "parse_user",
    "principal",
]

SCRAM_SHA_512 = "scram-sha-512"
TLS = "tls"

# spec.quotas' names → Kafka's quota keys for a user entity
QUOTA_KEYS = {
    "producerByteRate": "producer_byte_rate",
    "consumerByteRate": "consumer_byte_rate",
    "requestPercentage": "request_percentage",
    "controllerMutationRate": "controller_mutation_rate",
}
_RESOURCE_TYPES = {
    "topic": ResourceType.TOPIC,
    "group": ResourceType.GROUP,
    "cluster": ResourceType.CLUSTER,
    "transactionalId": ResourceType.TRANSACTIONAL_ID,
}
_PATTERN_TYPES = {"literal": PatternType.LITERAL, "prefix": PatternType.PREFIXED}
_PERMISSIONS = {"allow": AclPermissionType.ALLOW, "deny": AclPermissionType.DENY}


@dataclass(frozen=True)
class SecretKeyRef:
    """A key of a Secret in the User's namespace."""

    name: str
    key: str


@dataclass(frozen=True)
class UserSpec:
    """A User as the operator carries it out.

    ``password_ref`` is where a SCRAM user's password comes from (None: the operator
    makes one); ``acls`` are sorted and each appears once; ``quotas`` has Kafka's keys.
    """

    name: str
    namespace: str
    cluster: str
    authentication: str  # SCRAM_SHA_512 or TLS
    password_ref: SecretKeyRef | None = None
    acls: tuple[AclBinding, ...] = ()
    quotas: Mapping[str, float] = field(default_factory=dict)

    @property
    def principal(self) -> str:
        """The principal the brokers know the user by (ACLs name it)."""
        return principal(self.name)

    @property
    def scram(self) -> bool:
        """Whether the user has a SCRAM-SHA-512 credential (else a certificate)."""
        return self.authentication == SCRAM_SHA_512

    @property
    def certificate_subject(self) -> str:
        """The subject of a TLS user's certificate (RFC 4514)."""
        return f"CN={self.name}"

    @property
    def secret_name(self) -> str:
        """The Secret the operator writes the user's credentials to."""
        return self.name


def principal(user: str) -> str:
    """``User:<user>``: a User's principal, the one its ACLs name."""
    return f"User:{user}"


def _operation(name: str) -> AclOperation:
    """Strimzi's CamelCase name (``IdempotentWrite``) as Kafka's operation; ValueError
    for one that is not an operation an ACL can hold."""
    operation = AclOperation.parse(name)
    if operation in (AclOperation.ANY, AclOperation.UNKNOWN):
        raise ValueError(f"unknown ACL operation {name!r}")
    return operation


def _bindings(user_principal: str, acl: Mapping[str, Any]) -> list[AclBinding]:
    resource = acl["resource"]
    resource_type = _RESOURCE_TYPES[resource["type"]]
    if resource_type is ResourceType.CLUSTER:
        pattern = ResourcePattern(resource_type, CLUSTER_NAME, PatternType.LITERAL)
    else:
        pattern = ResourcePattern(
            resource_type,
            resource["name"],
            _PATTERN_TYPES[resource.get("patternType", "literal")],
        )
    host = acl.get("host", WILDCARD)
    permission = _PERMISSIONS[acl.get("type", "allow")]
    return [
        AclBinding(pattern, AccessControlEntry(user_principal, host, _operation(op), permission))
        for op in acl["operations"]
    ]


def parse_user(name: str, namespace: str, spec: Mapping[str, Any]) -> UserSpec:
    """The User ``name`` of ``namespace`` from its ``spec``; KeyError or ValueError for
    a spec the CRD would have refused."""
    authentication = spec["authentication"]
    kind = authentication["type"]
    if kind not in (SCRAM_SHA_512, TLS):
        raise ValueError(f"unknown authentication type {kind!r}")
    password_ref = None
    if kind == SCRAM_SHA_512 and authentication.get("password"):
        ref = authentication["password"]["valueFrom"]["secretKeyRef"]
        password_ref = SecretKeyRef(ref["name"], ref["key"])
    user_principal = principal(name)
    acls = {
        binding
        for acl in (spec.get("authorization") or {}).get("acls") or ()
        for binding in _bindings(user_principal, acl)
    }
    quotas = {
        QUOTA_KEYS[key]: float(value)
        for key, value in (spec.get("quotas") or {}).items()
        if value is not None
    }
    return UserSpec(
        name=name,
        namespace=namespace,
        cluster=spec["clusterRef"],
        authentication=kind,
        password_ref=password_ref,
        acls=tuple(sorted(acls)),
        quotas=quotas,
    )
