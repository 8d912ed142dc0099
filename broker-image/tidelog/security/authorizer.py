"""The ACL authorizer: Kafka's ``AclAuthorizer`` decisions over a cache of every ACL.

A request is allowed when its principal is one of ``super.users``; or when no ACL at
all applies to the resource and ``allow.everyone.if.no.acl.found`` is true; or when an
ALLOW entry applies and no DENY entry does (deny beats allow). An entry applies to a
principal that it names or when it names ``User:*``, to a host it names or ``*``, and to
its operation or to every one when it says ALL. ALLOW entries of READ, WRITE, DELETE or
ALTER also allow DESCRIBE, and ALTER_CONFIGS also allows DESCRIBE_CONFIGS; a DENY entry
denies only its own operation (or all, for ALL). The ACLs that apply to a resource are
those of its literal name, of the wildcard name ``*``, and of every PREFIXED pattern its
name starts with.

The cache holds each resource pattern's entries as ZooKeeper last gave them
(:mod:`.acl_store` loads it at start and replaces a pattern's entries on each change
notification); reads and writes happen on the event loop. Decisions are remembered per
(principal, host, operation, resource) until the ACLs change: a resource with thousands
of entries costs a walk through them once, not at every request (measured by ``make
bench`` S15: 10,000 ACLs, half of them on the producer's topic, cost its produce
throughput a quarter without this).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from tidelog.security.acls import (
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tidelog.security.principal import KafkaPrincipal

__all__ = ["AclAuthorizer", "parse_super_users"]

_IMPLIED_BY = {
    AclOperation.DESCRIBE: (
        AclOperation.DESCRIBE,
        AclOperation.READ,
        AclOperation.WRITE,
        AclOperation.DELETE,
        AclOperation.ALTER,
    ),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS),
}
# The name Kafka's authorizeByResourceType asks about first: allowed there, allowed on all.
_ANY_NAME = "hardcode"
# Decisions remembered at most; past it, the memory starts again (a bound for clients
# that name endless resources).
MAX_REMEMBERED_DECISIONS = 100_000


def parse_super_users(text: str) -> frozenset[str]:
    """``super.users`` (``User:alice;User:bob``) → the principals, each ``type:name``;
    ValueError for an entry without a type."""
    users = set()
    for item in text.split(";"):
        if item.strip():
            users.add(str(KafkaPrincipal.parse(item.strip())))
    return frozenset(users)


class AclAuthorizer:
    def __init__(self, super_users: Iterable[str] = (), allow_everyone_if_no_acl_found=False):
        self.super_users = frozenset(super_users)
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        # (type, name) -> entries, per pattern type
        self._literal: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        self._prefixed: dict[tuple[ResourceType, str], frozenset[AccessControlEntry]] = {}
        self._decisions: dict[tuple, bool] = {}

    # -- the cache ---------------------------------------------------------------------

    def set_acls(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Replace the entries of ``pattern`` (none: the pattern has no ACL any more)."""
        table = self._literal if pattern.pattern_type is PatternType.LITERAL else self._prefixed
        key = (pattern.resource_type, pattern.name)
        entries = frozenset(entries)
        if entries:
            table[key] = entries
        else:
            table.pop(key, None)
        self._decisions.clear()

    def entries(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        table = self._literal if pattern.pattern_type is PatternType.LITERAL else self._prefixed
        return table.get((pattern.resource_type, pattern.name), frozenset())

    def bindings(self) -> Iterator[AclBinding]:
        for pattern_type, table in (
            (PatternType.LITERAL, self._literal),
            (PatternType.PREFIXED, self._prefixed),
        ):
            for (resource_type, name), entries in table.items():
                pattern = ResourcePattern(resource_type, name, pattern_type)
                for entry in entries:
                    yield AclBinding(pattern, entry)

    def acls(self, wanted: AclBindingFilter) -> list[AclBinding]:
        """The bindings ``wanted`` matches, sorted."""
        return sorted(binding for binding in self.bindings() if wanted.matches(binding))

    # -- decisions ---------------------------------------------------------------------

    def _applying(self, resource_type: ResourceType, name: str) -> list[AccessControlEntry]:
        """Every entry that applies to the resource: literal, wildcard and prefixes."""
        found: list[AccessControlEntry] = []
        for key in ((resource_type, name), (resource_type, WILDCARD)):
            found.extend(self._literal.get(key, ()))
        if self._prefixed:
            for end in range(1, len(name) + 1):
                found.extend(self._prefixed.get((resource_type, name[:end]), ()))
        return found

    def authorize(
        self,
        principal: KafkaPrincipal | str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """Whether ``principal`` connecting from ``host`` may do ``operation`` on the
        resource (Kafka's AclAuthorizer.authorize for one literal resource)."""
        principal = str(principal)
        if principal in self.super_users:
            return True
        key = (principal, host, operation, resource_type, name)
        decision = self._decisions.get(key)
        if decision is None:
            if len(self._decisions) >= MAX_REMEMBERED_DECISIONS:
                self._decisions.clear()
            decision = self._decisions[key] = self._decide(*key)
        return decision

    def _decide(
        self,
        principal: str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        entries = self._applying(resource_type, name)
        if not entries:
            return self.allow_everyone_if_no_acl_found
        principals = (principal, WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD)
        allowed = _IMPLIED_BY.get(operation, (operation,))
        allow = False
        for entry in entries:
            if entry.principal not in principals or entry.host not in hosts:
                continue
            if entry.permission_type is AclPermissionType.DENY:
                if entry.operation in (operation, AclOperation.ALL):
                    return False
            elif entry.operation in allowed or entry.operation is AclOperation.ALL:
                allow = True
        return allow

    def authorize_by_resource_type(
        self,
        principal: KafkaPrincipal | str,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
    ) -> bool:
        """Whether ``principal`` may do ``operation`` on at least one resource of the
        type (Kafka's authorizeByResourceType: an ALLOW pattern that no DENY pattern
        covers; a DENY on ``*`` covers every one, a DENY prefix every pattern under it)."""
        principal = str(principal)
        if self.authorize(principal, host, operation, resource_type, _ANY_NAME):
            return True
        principals = (principal, WILDCARD_PRINCIPAL)
        hosts = (host, WILDCARD)
        allowed: list[ResourcePattern] = []
        denied: list[ResourcePattern] = []
        for binding in self.bindings():
            entry, pattern = binding.entry, binding.pattern
            if pattern.resource_type is not resource_type:
                continue
            if entry.principal not in principals or entry.host not in hosts:
                continue
            if entry.operation not in (operation, AclOperation.ALL):
                continue
            if entry.permission_type is AclPermissionType.DENY:
                denied.append(pattern)
            else:
                allowed.append(pattern)
        return any(not _covered(pattern, denied) for pattern in allowed)


def _covered(allowed: ResourcePattern, denied: list[ResourcePattern]) -> bool:
    for deny in denied:
        if deny.pattern_type is PatternType.LITERAL:
            if deny.name == WILDCARD or (
                allowed.pattern_type is PatternType.LITERAL and deny.name == allowed.name
            ):
                return True
        elif allowed.name.startswith(deny.name):
            return True
    return False
