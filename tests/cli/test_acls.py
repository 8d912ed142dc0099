"""``tidelog-acls``'s option checks and the ACLs its options name (the tool against
brokers, beside Kafka's kafka-acls.sh: tests/integration/test_acl_tools.py)."""

from __future__ import annotations

import pytest

from tidelog.cli.acls import parse_args
from tidelog.cli.common import UsageError
from tidelog.security.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)

B = ("--bootstrap-server", "h:9092")
OP = AclOperation
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*B], "exactly one action"),
        ([*B, "--add", "--list"], "exactly one action"),
        (["--list"], "bootstrap-server"),
        ([*B, "--add", "--allow-principal", "User:a"], "at least one resource"),
        ([*B, "--add", "--topic", "t"], "--allow-principal, --deny-principal"),
        ([*B, "--add", "--allow-principal", "alice", "--topic", "t"], "<type>:<name>"),
        ([*B, "--add", "--allow-principal", "User:a", "--topic", "t", "--operation", "Eat"], "Eat"),
        ([*B, "--add", "--consumer", "--allow-principal", "User:a", "--topic", "t"], "--group"),
        (
            [
                *B,
                "--add",
                "--allow-principal",
                "User:a",
                "--topic",
                "t",
                "--resource-pattern-type",
                "match",
            ],
            "not valid when adding",
        ),
        ([*B, "--list", "--command-config", "/nonexistent/x"], "Cannot read --command-config"),
    ],
)
def test_bad_options_are_refused_with_one_line(argv, message):
    with pytest.raises(UsageError, match=message):
        parse_args(argv)


def test_hosts_operations_and_permissions():
    options = parse_args(
        [
            *B,
            *("--add", "--allow-principal", "User:a", "--deny-principal", "User:b"),
            *("--deny-host", "10.0.0.1", "--operation", "Read", "--operation", "DescribeConfigs"),
            *("--topic", "t", "--resource-pattern-type", "prefixed"),
        ]
    )
    pattern = ResourcePattern(ResourceType.TOPIC, "t", PatternType.PREFIXED)
    assert options.entries == {
        pattern: [
            AccessControlEntry("User:a", "*", OP.READ, ALLOW),
            AccessControlEntry("User:a", "*", OP.DESCRIBE_CONFIGS, ALLOW),
            AccessControlEntry("User:b", "10.0.0.1", OP.READ, DENY),
            AccessControlEntry("User:b", "10.0.0.1", OP.DESCRIBE_CONFIGS, DENY),
        ]
    }


def test_producer_and_consumer_sets_are_kafkas():
    producer = parse_args(
        [*B, "--add", "--producer", "--idempotent", "--allow-principal", "User:p", "--topic", "t"]
    )
    ops = {
        p.resource_type: [e.operation for e in entries] for p, entries in producer.entries.items()
    }
    assert ops == {
        ResourceType.TOPIC: [OP.WRITE, OP.DESCRIBE, OP.CREATE],
        ResourceType.CLUSTER: [OP.IDEMPOTENT_WRITE],
    }
    consumer = parse_args(
        [*B, "--add", "--consumer", "--allow-principal", "User:c", "--topic", "t", "--group", "g"]
    )
    ops = {
        p.resource_type: [e.operation for e in entries] for p, entries in consumer.entries.items()
    }
    assert ops == {ResourceType.TOPIC: [OP.READ, OP.DESCRIBE], ResourceType.GROUP: [OP.READ]}


def test_remove_without_principal_names_every_acl_of_the_resource():
    options = parse_args([*B, "--remove", "--force", "--group", "g", "--cluster"])
    assert set(options.entries) == {
        ResourcePattern(ResourceType.GROUP, "g"),
        ResourcePattern(ResourceType.CLUSTER, "kafka-cluster"),
    }
    assert all(entries == [] for entries in options.entries.values())
