"""CreateAcls, DescribeAcls and DeleteAcls (v0-v3, as Kafka 3.9 serves them).

Without an authorizer (``authorizer.class.name`` empty) each answers SECURITY_DISABLED.
Creations and deletions are written to ZooKeeper (:mod:`tidelog.security.acl_store`,
conditional writes and a change notification per resource pattern, which every other
broker follows) and applied to this broker's cache at once; DescribeAcls answers from
the cache. Creations are refused one by one as Kafka 3.9 refuses them: an empty name or
a cluster not named ``kafka-cluster`` with INVALID_REQUEST, an ANY, MATCH or UNKNOWN
value or a principal without a type with UNKNOWN_SERVER_ERROR (what Kafka's
ZooKeeper-mode broker answers); a filter with an UNKNOWN value answers INVALID_REQUEST.
The dispatcher has already checked the request's right (Describe, or Alter, on the
cluster).
"""

from __future__ import annotations

import asyncio
import functools
import logging

from tidelog.protocol import ApiKey, response_class
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
    invalid_resource_name,
    unusable_binding,
)

__all__ = ["handle_create_acls", "handle_delete_acls", "handle_describe_acls"]

logger = logging.getLogger(__name__)

CreateAclsResponse = response_class(ApiKey.CREATE_ACLS)
DescribeAclsResponse = response_class(ApiKey.DESCRIBE_ACLS)
DeleteAclsResponse = response_class(ApiKey.DELETE_ACLS)

NO_AUTHORIZER = "No Authorizer is configured on the broker"


def _enum(cls, code: int):
    try:
        return cls(code)
    except ValueError:
        return cls.UNKNOWN


def _binding(creation) -> AclBinding:
    return AclBinding(
        ResourcePattern(
            _enum(ResourceType, creation.resource_type),
            creation.resource_name,
            _enum(PatternType, creation.resource_pattern_type),
        ),
        AccessControlEntry(
            creation.principal,
            creation.host,
            _enum(AclOperation, creation.operation),
            _enum(AclPermissionType, creation.permission_type),
        ),
    )


def _filter(resource_type, name, pattern_type, principal, host, operation, permission):
    return AclBindingFilter(
        ResourcePatternFilter(
            _enum(ResourceType, resource_type), name, _enum(PatternType, pattern_type)
        ),
        AccessControlEntryFilter(
            principal,
            host,
            _enum(AclOperation, operation),
            _enum(AclPermissionType, permission),
        ),
    )


async def handle_create_acls(broker, header, request, context):
    if broker.authorizer is None:
        return CreateAclsResponse(
            results=[
                CreateAclsResponse.AclCreationResult(
                    error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER
                )
                for _ in request.creations
            ]
        )
    results: list = [None] * len(request.creations)
    wanted: dict[ResourcePattern, list[tuple[int, AccessControlEntry]]] = {}
    for index, creation in enumerate(request.creations):
        binding = _binding(creation)
        reason = invalid_resource_name(binding.pattern)
        unusable = unusable_binding(binding)
        if reason is not None:
            results[index] = (ErrorCode.INVALID_REQUEST, reason)
        elif unusable is not None:
            results[index] = (ErrorCode.UNKNOWN_SERVER_ERROR, unusable)
        else:
            wanted.setdefault(binding.pattern, []).append((index, binding.entry))
    outcomes = await _update(
        broker,
        {
            pattern: lambda current, added=frozenset(e for _, e in entries): current | added
            for pattern, entries in wanted.items()
        },
    )
    for pattern, entries in wanted.items():
        for index, _ in entries:
            results[index] = outcomes[pattern]
    return CreateAclsResponse(
        results=[
            CreateAclsResponse.AclCreationResult(error_code=code, error_message=message)
            for code, message in results
        ]
    )


async def _update(broker, changes) -> dict[ResourcePattern, tuple[ErrorCode, str | None]]:
    """Write the patterns' entries through the store (:meth:`AclStore.update_all`, all
    patterns in a few pipelined round trips) and into the cache; each pattern's outcome."""
    try:
        stored = await asyncio.to_thread(broker.zk_security.acl_changes.store.update_all, changes)
    except Exception as error:
        logger.exception("writing the ACLs of %d resource patterns failed", len(changes))
        failed = (ErrorCode.UNKNOWN_SERVER_ERROR, f"writing the ACLs failed: {error}")
        return dict.fromkeys(changes, failed)
    outcomes = {}
    for pattern, entries in stored.items():
        if isinstance(entries, Exception):
            logger.error("writing the ACLs of %s failed: %r", pattern, entries)
            message = f"writing the ACLs of {pattern} failed: {entries}"
            outcomes[pattern] = (ErrorCode.UNKNOWN_SERVER_ERROR, message)
        else:
            broker.authorizer.set_acls(pattern, entries)
            outcomes[pattern] = (ErrorCode.NONE, None)
    return outcomes


def _by_pattern(bindings) -> dict[ResourcePattern, list[AccessControlEntry]]:
    grouped: dict[ResourcePattern, list[AccessControlEntry]] = {}
    for binding in bindings:
        grouped.setdefault(binding.pattern, []).append(binding.entry)
    return grouped


async def handle_describe_acls(broker, header, request, context):
    if broker.authorizer is None:
        return DescribeAclsResponse(
            error_code=ErrorCode.SECURITY_DISABLED, error_message=NO_AUTHORIZER, resources=[]
        )
    wanted = _filter(
        request.resource_type_filter,
        request.resource_name_filter,
        request.pattern_type_filter,
        request.principal_filter,
        request.host_filter,
        request.operation,
        request.permission_type,
    )
    reason = wanted.unknown_element()
    if reason is not None:
        return DescribeAclsResponse(
            error_code=ErrorCode.INVALID_REQUEST, error_message=reason, resources=[]
        )
    return DescribeAclsResponse(
        error_code=ErrorCode.NONE,
        error_message=None,
        resources=[
            DescribeAclsResponse.DescribeAclsResource(
                resource_type=pattern.resource_type,
                resource_name=pattern.name,
                pattern_type=pattern.pattern_type,
                acls=[
                    DescribeAclsResponse.AclDescription(
                        principal=entry.principal,
                        host=entry.host,
                        operation=entry.operation,
                        permission_type=entry.permission_type,
                    )
                    for entry in entries
                ],
            )
            for pattern, entries in _by_pattern(broker.authorizer.acls(wanted)).items()
        ],
    )


def _matching_acl(binding: AclBinding, code=ErrorCode.NONE, message=None):
    pattern, entry = binding.pattern, binding.entry
    return DeleteAclsResponse.DeleteAclsMatchingAcl(
        error_code=code,
        error_message=message,
        resource_type=pattern.resource_type,
        resource_name=pattern.name,
        pattern_type=pattern.pattern_type,
        principal=entry.principal,
        host=entry.host,
        operation=entry.operation,
        permission_type=entry.permission_type,
    )


async def handle_delete_acls(broker, header, request, context):
    """Every filter's matches, found in the cache, are removed from each pattern's znode
    with one write per pattern; each filter's result lists the bindings it removed."""
    result_class = DeleteAclsResponse.DeleteAclsFilterResult
    if broker.authorizer is None:
        return DeleteAclsResponse(
            filter_results=[
                result_class(
                    error_code=ErrorCode.SECURITY_DISABLED,
                    error_message=NO_AUTHORIZER,
                    matching_acls=[],
                )
                for _ in request.filters
            ]
        )
    filters = [
        _filter(
            f.resource_type_filter,
            f.resource_name_filter,
            f.pattern_type_filter,
            f.principal_filter,
            f.host_filter,
            f.operation,
            f.permission_type,
        )
        for f in request.filters
    ]
    valid = [f for f in filters if f.unknown_element() is None]
    patterns = sorted({b.pattern for f in valid for b in broker.authorizer.acls(f)})
    # What each pattern's change removed, from the entries it was last applied to.
    gone: dict[ResourcePattern, set[AclBinding]] = {pattern: set() for pattern in patterns}

    def change(current, pattern):
        gone[pattern] = {
            AclBinding(pattern, e)
            for e in current
            if any(f.matches(AclBinding(pattern, e)) for f in valid)
        }
        return frozenset(e for e in current if AclBinding(pattern, e) not in gone[pattern])

    outcomes = await _update(
        broker, {pattern: functools.partial(change, pattern=pattern) for pattern in patterns}
    )
    removed: dict[AclBinding, tuple[ErrorCode, str | None]] = {}
    for pattern, bindings in gone.items():
        removed.update(dict.fromkeys(bindings, outcomes[pattern]))
    results = []
    for wanted in filters:
        reason = wanted.unknown_element()
        if reason is not None:
            results.append(
                result_class(
                    error_code=ErrorCode.INVALID_REQUEST, error_message=reason, matching_acls=[]
                )
            )
            continue
        results.append(
            result_class(
                error_code=ErrorCode.NONE,
                error_message=None,
                matching_acls=[
                    _matching_acl(binding, *removed[binding])
                    for binding in sorted(removed)
                    if wanted.matches(binding)
                ],
            )
        )
    return DeleteAclsResponse(filter_results=results)
