"""Kafka's ACL model: resource patterns, access control entries, bindings and the filters
that select them, with the wire protocol's numeric codes and Kafka's matching.

* :class:`ResourcePattern` (type, name, LITERAL or PREFIXED) and
  :class:`AccessControlEntry` (principal, host, operation, ALLOW or DENY) make an
  :class:`AclBinding`, the unit CreateAcls creates and ZooKeeper stores.
* :class:`AclBindingFilter` selects bindings as DescribeAcls and DeleteAcls do: ANY
  matches every type, operation or permission, a null name, principal or host matches
  every one, pattern type ANY matches the filter's name exactly in both pattern types,
  and MATCH matches what would apply to a resource of that name: the literal name, the
  wildcard ``*``, and every prefix pattern the name starts with.

Every enum has Kafka's code (``code``), its name as Kafka's tools print it (``name``:
``TRANSACTIONAL_ID``) and its name as ZooKeeper keeps it (``zk_name``:
``TransactionalId``); :meth:`parse` reads either, in any case.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

__all__ = [
    "CLUSTER_NAME",
    "WILDCARD",
    "WILDCARD_PRINCIPAL",
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "invalid_resource_name",
    "unusable_binding",
]

WILDCARD = "*"
"""The resource name, and the host, that match every one."""
WILDCARD_PRINCIPAL = "User:*"
CLUSTER_NAME = "kafka-cluster"
"""The cluster resource's only name."""


class _KafkaEnum(enum.IntEnum):
    @property
    def zk_name(self) -> str:
        """The name ZooKeeper documents and paths use: ``TransactionalId``."""
        return "".join(word.capitalize() for word in self.name.split("_"))

    @classmethod
    def parse(cls, text: str):
        """``TRANSACTIONAL_ID``, ``TransactionalId``, ``transactional_id`` → the member;
        ValueError for a name Kafka does not have."""
        wanted = text.replace("_", "").lower()
        for member in cls:
            if member.name.replace("_", "").lower() == wanted:
                return member
        raise ValueError(f"unknown {cls.__name__} {text!r}")


class ResourceType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class AclOperation(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class AclPermissionType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class PatternType(_KafkaEnum):
    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


# The values a binding (what is stored) may not hold: only filters hold them.
_INDEFINITE = {
    ResourceType: (ResourceType.UNKNOWN, ResourceType.ANY),
    AclOperation: (AclOperation.UNKNOWN, AclOperation.ANY),
    AclPermissionType: (AclPermissionType.UNKNOWN, AclPermissionType.ANY),
    PatternType: (PatternType.UNKNOWN, PatternType.ANY, PatternType.MATCH),
}


@dataclass(frozen=True, order=True)
class ResourcePattern:
    resource_type: ResourceType
    name: str
    pattern_type: PatternType = PatternType.LITERAL

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )


@dataclass(frozen=True, order=True)
class AccessControlEntry:
    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, "
            f"operation={self.operation.name}, permissionType={self.permission_type.name})"
        )


@dataclass(frozen=True, order=True)
class AclBinding:
    pattern: ResourcePattern
    entry: AccessControlEntry


def unusable_binding(binding: AclBinding) -> str | None:
    """Why ``binding`` cannot be stored, or None: a value only filters hold (ANY, MATCH,
    UNKNOWN) or a principal without a type. (Kafka 3.9 in ZooKeeper mode answers such a
    creation UNKNOWN_SERVER_ERROR.)"""
    pattern, entry = binding.pattern, binding.entry
    for value in (
        pattern.resource_type,
        pattern.pattern_type,
        entry.operation,
        entry.permission_type,
    ):
        if value in _INDEFINITE[type(value)]:
            return f"Invalid ACL: {type(value).__name__} {value.name} is not allowed"
    principal_type, sep, _ = entry.principal.partition(":")
    if not sep or not principal_type:
        return f"Invalid principal: {entry.principal!r} is not <type>:<name>"
    return None


def invalid_resource_name(pattern: ResourcePattern) -> str | None:
    """Why CreateAcls refuses the pattern's name (INVALID_REQUEST), or None."""
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        return f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}"
    if not pattern.name:
        return "Invalid empty resource name"
    return None


@dataclass(frozen=True)
class ResourcePatternFilter:
    resource_type: ResourceType = ResourceType.ANY
    name: str | None = None
    pattern_type: PatternType = PatternType.ANY

    def matches(self, pattern: ResourcePattern) -> bool:
        if self.resource_type not in (ResourceType.ANY, pattern.resource_type):
            return False
        wanted = self.pattern_type
        if wanted not in (PatternType.ANY, PatternType.MATCH, pattern.pattern_type):
            return False
        if self.name is None:
            return True
        if wanted in (PatternType.ANY, pattern.pattern_type):
            return self.name == pattern.name
        # MATCH: the patterns that apply to a resource named self.name
        if pattern.pattern_type is PatternType.LITERAL:
            return pattern.name in (self.name, WILDCARD)
        return pattern.pattern_type is PatternType.PREFIXED and self.name.startswith(pattern.name)


@dataclass(frozen=True)
class AccessControlEntryFilter:
    principal: str | None = None
    host: str | None = None
    operation: AclOperation = AclOperation.ANY
    permission_type: AclPermissionType = AclPermissionType.ANY

    def matches(self, entry: AccessControlEntry) -> bool:
        return (
            self.principal in (None, entry.principal)
            and self.host in (None, entry.host)
            and self.operation in (AclOperation.ANY, entry.operation)
            and self.permission_type in (AclPermissionType.ANY, entry.permission_type)
        )


@dataclass(frozen=True)
class AclBindingFilter:
    pattern: ResourcePatternFilter = field(default_factory=ResourcePatternFilter)
    entry: AccessControlEntryFilter = field(default_factory=AccessControlEntryFilter)

    def matches(self, binding: AclBinding) -> bool:
        return self.pattern.matches(binding.pattern) and self.entry.matches(binding.entry)

    def unknown_element(self) -> str | None:
        """A filter with an UNKNOWN value matches nothing Kafka can name: DescribeAcls
        and DeleteAcls refuse it (INVALID_REQUEST); the reason, or None."""
        for value in (
            self.pattern.resource_type,
            self.pattern.pattern_type,
            self.entry.operation,
            self.entry.permission_type,
        ):
            if value.name == "UNKNOWN":
                return f"Invalid filter: {type(value).__name__} UNKNOWN"
        return None
