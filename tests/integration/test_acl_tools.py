"""Kafka's ``kafka-acls.sh`` against a 3-broker tidelog cluster with the ACL authorizer:
through ``--bootstrap-server`` (CreateAcls, DescribeAcls, DeleteAcls) and through
``--authorizer-properties zookeeper.connect=...`` (the znodes), an ACL added either way
takes effect on every broker.

The clients are PLAINTEXT (``User:ANONYMOUS``), not a super user; with
``allow.everyone.if.no.acl.found`` a resource without ACLs is open to them, so the
cluster's own requests and the tool's pass, and an ACL on a topic shows at once."""

from __future__ import annotations

import io
import subprocess

import pytest
from confluent_kafka.admin import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ResourcePatternType,
    ResourceType,
)

from integration.cluster import Cluster
from kafka_reference.tools import run_kafka_tool
from tidelog.cli.acls import main as acls_main
from tidelog.protocol.errors import ErrorCode
from tidelog.server.process import TIDELOG_SERVER
from waiting import wait_until

AUTHORIZER = {
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, module_chroot):
    with Cluster(tmp_path_factory.mktemp("acl-tools"), module_chroot, overrides=AUTHORIZER) as made:
        yield made


def kafka_acls(*args: str) -> str:
    result = run_kafka_tool("kafka-acls", *args)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def topic_code(cluster: Cluster, broker_id: int, topic: str) -> ErrorCode:
    (found,) = cluster.metadata(broker_id, [topic]).topics
    return ErrorCode(found.error_code)


def everywhere(cluster: Cluster, topic: str, code: ErrorCode) -> bool:
    return all(topic_code(cluster, b, topic) == code for b in cluster.running)


def test_zookeeper_tool_acl_takes_effect_on_every_broker(cluster):
    cluster.create_topic("acl-zk", partitions=1, replication_factor=3)
    assert everywhere(cluster, "acl-zk", ErrorCode.NONE)
    kafka_acls(
        *("--authorizer-properties", f"zookeeper.connect={cluster.zk_connect}"),
        *("--add", "--deny-principal", "User:ANONYMOUS", "--operation", "Describe"),
        *("--topic", "acl-zk"),
    )
    wait_until(
        lambda: everywhere(cluster, "acl-zk", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        "every broker refuses to describe acl-zk",
    )
    kafka_acls(
        *("--authorizer-properties", f"zookeeper.connect={cluster.zk_connect}"),
        *("--remove", "--force", "--deny-principal", "User:ANONYMOUS"),
        *("--operation", "Describe", "--topic", "acl-zk"),
    )
    wait_until(
        lambda: everywhere(cluster, "acl-zk", ErrorCode.NONE),
        "every broker describes acl-zk again",
    )


def test_bootstrap_server_tool_adds_lists_and_removes(cluster):
    bootstrap = ("--bootstrap-server", cluster.bootstrap)
    cluster.create_topic("acl-boot", partitions=1, replication_factor=3)
    out = kafka_acls(
        *bootstrap,
        *("--add", "--allow-principal", "User:alice", "--allow-host", "10.0.0.1"),
        *("--operation", "Read", "--operation", "Write", "--topic", "acl-boot"),
    )
    assert (
        "Adding ACLs for resource `ResourcePattern(resourceType=TOPIC, name=acl-boot, "
        "patternType=LITERAL)`:" in out
    )
    kafka_acls(
        *bootstrap,
        "--add",
        "--consumer",
        "--allow-principal",
        "User:bob",
        "--topic",
        "pay",
        "--group",
        "pay-",
        "--resource-pattern-type",
        "prefixed",
    )
    listed = kafka_acls(*bootstrap, "--list")
    for line in (
        "(principal=User:alice, host=10.0.0.1, operation=READ, permissionType=ALLOW)",
        "(principal=User:alice, host=10.0.0.1, operation=WRITE, permissionType=ALLOW)",
        "`ResourcePattern(resourceType=GROUP, name=pay-, patternType=PREFIXED)`",
        "(principal=User:bob, host=*, operation=DESCRIBE, permissionType=ALLOW)",
    ):
        assert line in listed, listed
    # the znodes Kafka's ZooKeeper-mode tool reads
    via_zk = kafka_acls(
        "--authorizer-properties", f"zookeeper.connect={cluster.zk_connect}", "--list"
    )
    assert "(principal=User:alice, host=10.0.0.1, operation=WRITE" in via_zk
    # an ACL on the topic (for alice) closes it to everyone else, on every broker
    wait_until(
        lambda: everywhere(cluster, "acl-boot", ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        "every broker refuses acl-boot to ANONYMOUS",
    )
    kafka_acls(*bootstrap, "--remove", "--force", "--topic", "acl-boot")
    wait_until(
        lambda: everywhere(cluster, "acl-boot", ErrorCode.NONE),
        "every broker describes acl-boot again",
    )
    listed = kafka_acls(*bootstrap, "--list", "--topic", "acl-boot")
    assert "User:alice" not in listed
    kafka_acls(
        *bootstrap,
        "--remove",
        "--force",
        "--resource-pattern-type",
        "prefixed",
        "--topic",
        "pay",
        "--group",
        "pay-",
    )
    assert "User:bob" not in kafka_acls(*bootstrap, "--list")


def test_a_thousand_patterns_in_one_request_each_way(cluster):
    """One CreateAcls with 2,000 ACLs on 1,000 topics, then one DeleteAcls matching them
    all, through confluent-kafka's AdminClient: every ACL is stored and answered, every
    broker follows both changes, and the deletion lists each binding it removed."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    topics = [f"crowd-{n}" for n in range(1000)]
    cluster.create_topic(topics[-1], partitions=1, replication_factor=3)
    crowd = [
        AclBinding(
            ResourceType.TOPIC,
            topic,
            ResourcePatternType.LITERAL,
            principal,
            "*",
            AclOperation.DESCRIBE,
            AclPermissionType.DENY,
        )
        for topic in topics
        for principal in ("User:ANONYMOUS", "User:mallory")
    ]
    for future in admin.create_acls(crowd, request_timeout=120).values():
        future.result()
    anyone = AclBindingFilter(
        ResourceType.TOPIC,
        None,
        ResourcePatternType.ANY,
        None,
        None,
        AclOperation.DESCRIBE,
        AclPermissionType.DENY,
    )
    assert set(admin.describe_acls(anyone, request_timeout=60).result()) == set(crowd)
    wait_until(
        lambda: everywhere(cluster, topics[-1], ErrorCode.TOPIC_AUTHORIZATION_FAILED),
        "every broker refuses the last crowded topic",
    )
    (deleted,) = admin.delete_acls([anyone], request_timeout=120).values()
    assert set(deleted.result()) == set(crowd)
    assert admin.describe_acls(anyone, request_timeout=60).result() == []
    wait_until(
        lambda: everywhere(cluster, topics[-1], ErrorCode.NONE),
        "every broker describes the last crowded topic again",
    )


def tidelog_acls(*args: str) -> str:
    out, err = io.StringIO(), io.StringIO()
    assert acls_main(list(args), out, err) == 0, err.getvalue()
    return out.getvalue()


def blocks(output: str) -> dict[str, set[str]]:
    """A listing's blocks, header -> entries: Kafka prints both in its maps' and sets'
    order, which is no order to compare."""
    found = {}
    for block in output.split(" \n\n"):
        if block.strip():
            header, _, entries = block.partition(": \n \t")
            found[header.strip()] = set(entries.split("\n\t"))
    return found


def test_tidelog_acls_prints_what_kafka_acls_prints(cluster):
    bootstrap = ("--bootstrap-server", cluster.bootstrap)
    add = (
        *("--add", "--allow-principal", "User:carol", "--deny-principal", "User:dave"),
        *("--deny-host", "10.1.1.1", "--operation", "Read", "--group", "acl-cli"),
    )
    ours = tidelog_acls(*bootstrap, *add)
    assert ours.startswith(
        "Adding ACLs for resource `ResourcePattern(resourceType=GROUP, name=acl-cli, "
        "patternType=LITERAL)`: \n \t"
    )
    assert "(principal=User:dave, host=10.1.1.1, operation=READ, permissionType=DENY)" in ours
    for listing in (
        ("--list",),
        ("--list", "--group", "acl-cli"),
        ("--list", "--principal", "User:carol"),
    ):
        assert tidelog_acls(*bootstrap, *listing) == kafka_acls(*bootstrap, *listing)
    # (an ACL on the cluster would close it to ANONYMOUS, the cluster's own principal here)
    tidelog_acls(
        *bootstrap,
        *("--add", "--producer", "--allow-principal", "User:p"),
        *("--topic", "acl-prod", "--transactional-id", "acl-tx"),
    )
    assert blocks(tidelog_acls(*bootstrap, "--list")) == blocks(kafka_acls(*bootstrap, "--list"))
    assert "operation=CREATE" in tidelog_acls(*bootstrap, "--list", "--topic", "acl-prod")
    tidelog_acls(*bootstrap, "--remove", "--force", "--group", "acl-cli")
    tidelog_acls(
        *bootstrap, "--remove", "--force", "--topic", "acl-prod", "--transactional-id", "acl-tx"
    )
    assert kafka_acls(*bootstrap, "--list") == ""


def test_the_server_refuses_an_unknown_authorizer_in_one_line(tmp_path):
    """(Before ZooKeeper is asked: the configuration is read first.)"""
    config = tmp_path / "server.properties"
    config.write_text(
        "zookeeper.connect=127.0.0.1:1\nauthorizer.class.name=com.example.MyAuthorizer\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    result = subprocess.run(
        [str(TIDELOG_SERVER), str(config)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert "com.example.MyAuthorizer" in result.stderr.splitlines()[-1]
