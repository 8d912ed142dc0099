"""A User's spec read into the brokers' own terms: Strimzi's operation names and pattern
types as Kafka's, one binding per operation for principal User:<name>, the cluster
resource named kafka-cluster, the CRD's defaults, and quotas under Kafka's keys."""

from __future__ import annotations

import pytest

from tidelog.security.acls import (
    AccessControlEntry,
    AclBinding,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tidelog_operator.user.spec import SCRAM_SHA_512, TLS, SecretKeyRef, parse_user

FULL = {
    "clusterRef": "events",
    "authentication": {
        "type": "scram-sha-512",
        "password": {"valueFrom": {"secretKeyRef": {"name": "alice-password", "key": "pw"}}},
    },
    "authorization": {
        "type": "simple",
        "acls": [
            {
                "resource": {"type": "topic", "name": "orders", "patternType": "literal"},
                "operations": ["Read", "Describe"],
                "host": "*",
                "type": "allow",
            },
            {
                "resource": {"type": "group", "name": "billing-", "patternType": "prefix"},
                "operations": ["Read"],
            },
            {"resource": {"type": "cluster"}, "operations": ["IdempotentWrite"]},
            {
                "resource": {"type": "transactionalId", "name": "*"},
                "operations": ["Write"],
                "host": "10.0.0.7",
                "type": "deny",
            },
        ],
    },
    "quotas": {
        "producerByteRate": 1048576,
        "consumerByteRate": 2097152,
        "requestPercentage": 55,
        "controllerMutationRate": 0.5,
    },
}


def binding(resource_type, name, pattern, operation, host="*", permission="ALLOW"):
    return AclBinding(
        ResourcePattern(resource_type, name, pattern),
        AccessControlEntry("User:alice", host, operation, AclPermissionType[permission]),
    )


def test_a_full_spec_in_the_brokers_terms():
    user = parse_user("alice", "apps", FULL)
    assert (user.name, user.namespace, user.cluster) == ("alice", "apps", "events")
    assert user.authentication == SCRAM_SHA_512 and user.scram
    assert user.password_ref == SecretKeyRef("alice-password", "pw")
    assert user.principal == "User:alice" and user.secret_name == "alice"
    assert user.certificate_subject == "CN=alice"
    lit, pre = PatternType.LITERAL, PatternType.PREFIXED
    assert user.acls == tuple(
        sorted(
            [
                binding(ResourceType.TOPIC, "orders", lit, AclOperation.READ),
                binding(ResourceType.TOPIC, "orders", lit, AclOperation.DESCRIBE),
                binding(ResourceType.GROUP, "billing-", pre, AclOperation.READ),
                binding(ResourceType.CLUSTER, "kafka-cluster", lit, AclOperation.IDEMPOTENT_WRITE),
                binding(
                    ResourceType.TRANSACTIONAL_ID, "*", lit, AclOperation.WRITE, "10.0.0.7", "DENY"
                ),
            ]
        )
    )
    assert user.quotas == {
        "producer_byte_rate": 1048576.0,
        "consumer_byte_rate": 2097152.0,
        "request_percentage": 55.0,
        "controller_mutation_rate": 0.5,
    }


@pytest.mark.parametrize(
    ("strimzi", "kafka"),
    [
        ("Read", AclOperation.READ),
        ("Write", AclOperation.WRITE),
        ("Create", AclOperation.CREATE),
        ("Delete", AclOperation.DELETE),
        ("Alter", AclOperation.ALTER),
        ("Describe", AclOperation.DESCRIBE),
        ("ClusterAction", AclOperation.CLUSTER_ACTION),
        ("DescribeConfigs", AclOperation.DESCRIBE_CONFIGS),
        ("AlterConfigs", AclOperation.ALTER_CONFIGS),
        ("IdempotentWrite", AclOperation.IDEMPOTENT_WRITE),
        ("All", AclOperation.ALL),
    ],
)
def test_strimzi_operation_names_are_kafkas_operations(strimzi, kafka):
    spec = {
        "clusterRef": "events",
        "authentication": {"type": "tls"},
        "authorization": {"acls": [{"resource": {"type": "cluster"}, "operations": [strimzi]}]},
    }
    (only,) = parse_user("alice", "apps", spec).acls
    assert only.entry.operation is kafka


def test_defaults_apply_when_the_server_did_not_fill_them_in():
    spec = {
        "clusterRef": "events",
        "authentication": {"type": "tls"},
        "authorization": {
            "acls": [{"resource": {"type": "topic", "name": "orders"}, "operations": ["Write"]}]
        },
    }
    user = parse_user("alice", "apps", spec)
    assert user.acls == (
        binding(ResourceType.TOPIC, "orders", PatternType.LITERAL, AclOperation.WRITE),
    )
    assert user.authentication == TLS and not user.scram
    assert user.password_ref is None and user.quotas == {}


def test_the_same_acl_twice_is_one_binding():
    acl = {"resource": {"type": "topic", "name": "orders"}, "operations": ["Read"]}
    spec = {
        "clusterRef": "events",
        "authentication": {"type": "scram-sha-512"},
        "authorization": {"acls": [acl, {**acl, "operations": ["Read", "All"]}]},
    }
    operations = [b.entry.operation for b in parse_user("alice", "apps", spec).acls]
    assert operations == [AclOperation.ALL, AclOperation.READ]


def test_a_user_without_authorization_or_quotas_has_none():
    user = parse_user("bob", "apps", {"clusterRef": "c", "authentication": {"type": "tls"}})
    assert user.acls == () and user.quotas == {}


def test_an_operation_kafka_does_not_have_is_refused():
    spec = {
        "clusterRef": "c",
        "authentication": {"type": "tls"},
        "authorization": {"acls": [{"resource": {"type": "cluster"}, "operations": ["Any"]}]},
    }
    with pytest.raises(ValueError, match="unknown ACL operation 'Any'"):
        parse_user("bob", "apps", spec)
