"""Kafka's AclAuthorizer decisions, table-driven: each row an ACL set, a request and the
answer Kafka's authorizer gives."""

from __future__ import annotations

import pytest

from tidelog.security.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tidelog.security.authorizer import AclAuthorizer, parse_super_users

OP = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY
TOPIC, GROUP, CLUSTER = ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER
LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED


def acl(name, principal, operation, permission=ALLOW, host="*", rtype=TOPIC, ptype=LIT):
    return ResourcePattern(rtype, name, ptype), AccessControlEntry(
        principal, host, operation, permission
    )


def authorizer(*acls, **options) -> AclAuthorizer:
    made = AclAuthorizer(**options)
    by_pattern: dict = {}
    for pattern, entry in acls:
        by_pattern.setdefault(pattern, set()).add(entry)
    for pattern, entries in by_pattern.items():
        made.set_acls(pattern, entries)
    return made


ALICE = "User:alice"
HOST = "10.0.0.5"

# (case, acls, operation, topic name, principal, host, expected)
CASES = [
    ("no acl, default deny", [], OP.READ, "t", ALICE, HOST, False),
    ("allow read", [acl("t", ALICE, OP.READ)], OP.READ, "t", ALICE, HOST, True),
    ("other principal", [acl("t", "User:bob", OP.READ)], OP.READ, "t", ALICE, HOST, False),
    ("other topic", [acl("u", ALICE, OP.READ)], OP.READ, "t", ALICE, HOST, False),
    ("read is not write", [acl("t", ALICE, OP.READ)], OP.WRITE, "t", ALICE, HOST, False),
    ("all allows write", [acl("t", ALICE, OP.ALL)], OP.WRITE, "t", ALICE, HOST, True),
    ("read implies describe", [acl("t", ALICE, OP.READ)], OP.DESCRIBE, "t", ALICE, HOST, True),
    ("write implies describe", [acl("t", ALICE, OP.WRITE)], OP.DESCRIBE, "t", ALICE, HOST, True),
    ("delete implies describe", [acl("t", ALICE, OP.DELETE)], OP.DESCRIBE, "t", ALICE, HOST, True),
    ("alter implies describe", [acl("t", ALICE, OP.ALTER)], OP.DESCRIBE, "t", ALICE, HOST, True),
    ("create does not", [acl("t", ALICE, OP.CREATE)], OP.DESCRIBE, "t", ALICE, HOST, False),
    (
        "alter configs implies describe configs",
        [acl("t", ALICE, OP.ALTER_CONFIGS)],
        OP.DESCRIBE_CONFIGS,
        "t",
        ALICE,
        HOST,
        True,
    ),
    ("describe implies nothing", [acl("t", ALICE, OP.DESCRIBE)], OP.READ, "t", ALICE, HOST, False),
    (
        "deny beats allow",
        [acl("t", ALICE, OP.READ), acl("t", ALICE, OP.READ, DENY)],
        OP.READ,
        "t",
        ALICE,
        HOST,
        False,
    ),
    (
        "deny all beats allow read",
        [acl("t", ALICE, OP.READ), acl("t", ALICE, OP.ALL, DENY)],
        OP.READ,
        "t",
        ALICE,
        HOST,
        False,
    ),
    (
        "deny read leaves describe implied by write",
        [acl("t", ALICE, OP.WRITE), acl("t", ALICE, OP.READ, DENY)],
        OP.DESCRIBE,
        "t",
        ALICE,
        HOST,
        True,
    ),
    (
        "deny on wildcard user",
        [acl("t", ALICE, OP.READ), acl("t", "User:*", OP.READ, DENY)],
        OP.READ,
        "t",
        ALICE,
        HOST,
        False,
    ),
    ("wildcard user", [acl("t", "User:*", OP.READ)], OP.READ, "t", ALICE, HOST, True),
    ("wildcard topic", [acl("*", ALICE, OP.READ)], OP.READ, "t", ALICE, HOST, True),
    ("host matches", [acl("t", ALICE, OP.READ, host=HOST)], OP.READ, "t", ALICE, HOST, True),
    (
        "other host",
        [acl("t", ALICE, OP.READ, host="10.0.0.6")],
        OP.READ,
        "t",
        ALICE,
        HOST,
        False,
    ),
    (
        "deny from one host only",
        [acl("t", ALICE, OP.READ), acl("t", ALICE, OP.READ, DENY, host="10.0.0.6")],
        OP.READ,
        "t",
        ALICE,
        HOST,
        True,
    ),
    ("prefix", [acl("pay", ALICE, OP.READ, ptype=PRE)], OP.READ, "payments", ALICE, HOST, True),
    ("not the prefix", [acl("pay", ALICE, OP.READ, ptype=PRE)], OP.READ, "pa", ALICE, HOST, False),
    (
        "literal name is no prefix",
        [acl("pay", ALICE, OP.READ)],
        OP.READ,
        "payments",
        ALICE,
        HOST,
        False,
    ),
    (
        "deny on a prefix",
        [acl("payments", ALICE, OP.READ), acl("pay", ALICE, OP.READ, DENY, ptype=PRE)],
        OP.READ,
        "payments",
        ALICE,
        HOST,
        False,
    ),
    (
        "a group acl is no topic acl",
        [acl("t", ALICE, OP.READ, rtype=GROUP)],
        OP.READ,
        "t",
        ALICE,
        HOST,
        False,
    ),
    ("principal type counts", [acl("t", "Group:alice", OP.READ)], OP.READ, "t", ALICE, HOST, False),
]


@pytest.mark.parametrize(
    ("acls", "operation", "name", "principal", "host", "expected"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_authorize(acls, operation, name, principal, host, expected):
    assert authorizer(*acls).authorize(principal, host, operation, TOPIC, name) is expected


def test_super_users_pass_even_denied():
    made = authorizer(
        acl("t", ALICE, OP.ALL, DENY), super_users=parse_super_users("User:bob; User:alice")
    )
    assert made.authorize(ALICE, HOST, OP.WRITE, TOPIC, "t")
    assert not made.authorize("User:carol", HOST, OP.WRITE, TOPIC, "t")


@pytest.mark.parametrize(
    ("acls", "expected"),
    [
        ([], True),  # no acl on the resource
        ([acl("t", "User:bob", OP.READ)], False),  # an acl exists, for someone else
        ([acl("other", "User:bob", OP.READ)], True),  # an acl on another resource only
        ([acl("*", "User:bob", OP.READ)], False),  # the wildcard applies to t
    ],
)
def test_allow_everyone_if_no_acl_found(acls, expected):
    made = authorizer(*acls, allow_everyone_if_no_acl_found=True)
    assert made.authorize(ALICE, HOST, OP.READ, TOPIC, "t") is expected


def test_acls_removed_from_the_cache_no_longer_apply():
    made = authorizer(acl("t", ALICE, OP.READ))
    made.set_acls(ResourcePattern(TOPIC, "t"), [])
    assert not made.authorize(ALICE, HOST, OP.READ, TOPIC, "t")
    assert list(made.bindings()) == []


@pytest.mark.parametrize(
    ("acls", "expected"),
    [
        ([], False),
        ([acl("t", ALICE, OP.WRITE)], True),
        ([acl("t", ALICE, OP.READ)], False),
        ([acl("t", ALICE, OP.WRITE), acl("t", ALICE, OP.WRITE, DENY)], False),
        ([acl("t", ALICE, OP.WRITE), acl("*", ALICE, OP.WRITE, DENY)], False),
        ([acl("t1", ALICE, OP.WRITE), acl("t", ALICE, OP.WRITE, DENY, ptype=PRE)], False),
        ([acl("t1", ALICE, OP.WRITE), acl("t2", ALICE, OP.WRITE, DENY)], True),
        ([acl("p", ALICE, OP.ALL, ptype=PRE)], True),
        ([acl("*", ALICE, OP.WRITE)], True),
    ],
)
def test_authorize_by_resource_type(acls, expected):
    made = authorizer(*acls)
    assert made.authorize_by_resource_type(ALICE, HOST, OP.WRITE, TOPIC) is expected


def test_parse_super_users_refuses_a_principal_without_type():
    with pytest.raises(ValueError, match="alice"):
        parse_super_users("User:bob;alice")


def test_a_remembered_decision_follows_the_acls_as_they_change():
    """Decisions are remembered per request's principal, host, operation and resource;
    a change of any pattern's ACLs forgets them, so the next request decides again."""
    made = authorizer(acl("t", ALICE, OP.WRITE))
    assert made.authorize(ALICE, HOST, OP.WRITE, TOPIC, "t")
    assert made.authorize(ALICE, HOST, OP.WRITE, TOPIC, "t")  # remembered
    deny, entry = acl("t", ALICE, OP.WRITE, DENY)
    made.set_acls(deny, {entry, *made.entries(deny)})
    assert not made.authorize(ALICE, HOST, OP.WRITE, TOPIC, "t")
    _, everyone = acl("u", "User:*", OP.WRITE, ptype=PRE)
    made.set_acls(ResourcePattern(TOPIC, "u", PRE), {everyone})
    assert made.authorize("User:bob", HOST, OP.WRITE, TOPIC, "u-1")
    made.set_acls(ResourcePattern(TOPIC, "u", PRE), set())
    assert not made.authorize("User:bob", HOST, OP.WRITE, TOPIC, "u-1")
