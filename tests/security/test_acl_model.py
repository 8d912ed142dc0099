"""Kafka's ACL model: names and codes, filters' matching, and what CreateAcls refuses."""

from __future__ import annotations

import pytest

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

TOPIC, GROUP = ResourceType.TOPIC, ResourceType.GROUP
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def test_codes_and_names_are_kafkas():
    assert ResourceType.TRANSACTIONAL_ID == 5 and ResourceType.TRANSACTIONAL_ID.zk_name == (
        "TransactionalId"
    )
    assert AclOperation.IDEMPOTENT_WRITE == 12 and AclOperation.CLUSTER_ACTION.zk_name == (
        "ClusterAction"
    )
    assert (AclPermissionType.DENY, AclPermissionType.ALLOW) == (2, 3)
    assert (PatternType.MATCH, PatternType.LITERAL, PatternType.PREFIXED) == (2, 3, 4)
    for text in ("TransactionalId", "TRANSACTIONAL_ID", "transactional_id"):
        assert ResourceType.parse(text) is ResourceType.TRANSACTIONAL_ID
    with pytest.raises(ValueError, match="Topics"):
        ResourceType.parse("Topics")


PATTERNS = {
    "lit-payments": ResourcePattern(TOPIC, "payments", LIT),
    "lit-star": ResourcePattern(TOPIC, "*", LIT),
    "pre-pay": ResourcePattern(TOPIC, "pay", PRE),
    "pre-payments": ResourcePattern(TOPIC, "payments", PRE),
    "pre-x": ResourcePattern(TOPIC, "x", PRE),
    "group-payments": ResourcePattern(GROUP, "payments", LIT),
}


@pytest.mark.parametrize(
    ("wanted", "expected"),
    [
        (ResourcePatternFilter(), set(PATTERNS)),
        (ResourcePatternFilter(TOPIC), set(PATTERNS) - {"group-payments"}),
        (
            ResourcePatternFilter(TOPIC, "payments", PatternType.ANY),
            {"lit-payments", "pre-payments"},
        ),
        (ResourcePatternFilter(TOPIC, "payments", LIT), {"lit-payments"}),
        (ResourcePatternFilter(TOPIC, None, PRE), {"pre-pay", "pre-payments", "pre-x"}),
        (
            ResourcePatternFilter(TOPIC, "payments", PatternType.MATCH),
            {"lit-payments", "lit-star", "pre-pay", "pre-payments"},
        ),
        (
            ResourcePatternFilter(ResourceType.ANY, "payments", LIT),
            {"lit-payments", "group-payments"},
        ),
    ],
)
def test_pattern_filters_match_as_kafkas(wanted, expected):
    assert {name for name, p in PATTERNS.items() if wanted.matches(p)} == expected


def test_entry_filter():
    entry = AccessControlEntry("User:a", "*", AclOperation.READ, AclPermissionType.ALLOW)
    assert AccessControlEntryFilter().matches(entry)
    assert AccessControlEntryFilter("User:a", "*", AclOperation.READ).matches(entry)
    assert not AccessControlEntryFilter("User:b").matches(entry)
    assert not AccessControlEntryFilter(host="10.0.0.1").matches(entry)
    assert not AccessControlEntryFilter(operation=AclOperation.ALL).matches(entry)
    assert not AccessControlEntryFilter(permission_type=AclPermissionType.DENY).matches(entry)
    binding = AclBinding(PATTERNS["lit-payments"], entry)
    assert AclBindingFilter(
        ResourcePatternFilter(TOPIC), AccessControlEntryFilter("User:a")
    ).matches(binding)
    assert (
        AclBindingFilter(ResourcePatternFilter(), AccessControlEntryFilter()).unknown_element()
        is None
    )
    assert (
        "UNKNOWN" in AclBindingFilter(ResourcePatternFilter(ResourceType.UNKNOWN)).unknown_element()
    )


def _binding(rtype=TOPIC, name="t", ptype=LIT, principal="User:a", op=AclOperation.READ):
    return AclBinding(
        ResourcePattern(rtype, name, ptype),
        AccessControlEntry(principal, "*", op, AclPermissionType.ALLOW),
    )


@pytest.mark.parametrize(
    ("binding", "reason"),
    [
        (_binding(), None),
        (_binding(ptype=PatternType.MATCH), "PatternType MATCH"),
        (_binding(rtype=ResourceType.ANY), "ResourceType ANY"),
        (_binding(op=AclOperation.ANY), "AclOperation ANY"),
        (_binding(principal="alice"), "Invalid principal"),
    ],
)
def test_unusable_bindings(binding, reason):
    found = unusable_binding(binding)
    assert (found is None) if reason is None else (reason in found)


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        (ResourcePattern(TOPIC, "t"), None),
        (ResourcePattern(TOPIC, ""), "Invalid empty resource name"),
        (ResourcePattern(ResourceType.CLUSTER, "c"), "kafka-cluster"),
        (ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"), None),
    ],
)
def test_invalid_resource_names(pattern, reason):
    found = invalid_resource_name(pattern)
    assert (found is None) if reason is None else (reason in found)
