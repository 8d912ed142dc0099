"""ACLs in ZooKeeper: tidelog's store and Kafka's own ``kafka-acls.sh
--authorizer-properties zookeeper.connect=...`` read and write the same znodes, and a
broker's follower applies a change made by Kafka's tool."""

from __future__ import annotations

import asyncio

import pytest
from kazoo.client import KazooClient

from kafka_reference.tools import run_kafka_tool
from tidelog.security.acl_store import AclChangeFollower, AclStore
from tidelog.security.acls import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from tidelog.security.authorizer import AclAuthorizer
from waiting import wait_until_async

ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


@pytest.fixture
def store(zk_chroot):
    client = KazooClient(hosts=zk_chroot)
    client.start(timeout=10)
    yield AclStore(client)
    client.stop()
    client.close()


def kafka_acls(zk_chroot: str, *args: str) -> str:
    result = run_kafka_tool(
        "kafka-acls", "--authorizer-properties", f"zookeeper.connect={zk_chroot}", *args
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def test_kafka_tool_and_tidelog_share_the_znodes(zk_chroot, store):
    kafka_acls(
        zk_chroot,
        *("--add", "--allow-principal", "User:alice", "--operation", "Read", "--topic", "t1"),
    )
    kafka_acls(
        zk_chroot,
        *("--add", "--deny-principal", "User:bob", "--deny-host", "10.0.0.1"),
        *("--operation", "Write", "--topic", "pay", "--resource-pattern-type", "prefixed"),
    )
    assert store.load_all() == {
        ResourcePattern(ResourceType.TOPIC, "t1"): {
            AccessControlEntry("User:alice", "*", AclOperation.READ, ALLOW)
        },
        ResourcePattern(ResourceType.TOPIC, "pay", PatternType.PREFIXED): {
            AccessControlEntry("User:bob", "10.0.0.1", AclOperation.WRITE, DENY)
        },
    }
    store.update(
        ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx"),
        lambda entries: entries
        | {AccessControlEntry("User:carol", "*", AclOperation.DESCRIBE, ALLOW)},
    )
    store.update(
        ResourcePattern(ResourceType.TOPIC, "t1"),
        lambda entries: entries
        | {AccessControlEntry("User:carol", "*", AclOperation.IDEMPOTENT_WRITE, ALLOW)},
    )
    listed = kafka_acls(zk_chroot, "--list")
    assert (
        "Current ACLs for resource `ResourcePattern(resourceType=TRANSACTIONAL_ID, name=tx, "
        "patternType=LITERAL)`: \n \t(principal=User:carol, host=*, operation=DESCRIBE, "
        "permissionType=ALLOW)" in listed
    )
    assert "(principal=User:carol, host=*, operation=IDEMPOTENT_WRITE" in listed
    assert "(principal=User:alice, host=*, operation=READ, permissionType=ALLOW)" in listed
    # a pattern left without entries loses its znode
    store.update(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx"), lambda _: frozenset())
    assert store.zk.exists("/kafka-acl/TransactionalId/tx") is None
    assert "TRANSACTIONAL_ID" not in kafka_acls(zk_chroot, "--list")


def test_follower_applies_what_kafkas_tool_changes(zk_chroot, store):
    pattern = ResourcePattern(ResourceType.GROUP, "g")
    store.update(pattern, lambda _: {AccessControlEntry("User:a", "*", AclOperation.READ, ALLOW)})

    async def run() -> None:
        authorizer = AclAuthorizer()
        follower = AclChangeFollower(store, authorizer)
        await follower.load()
        assert authorizer.authorize("User:a", "h", AclOperation.READ, ResourceType.GROUP, "g")
        task = asyncio.create_task(follower.follow())
        try:
            await asyncio.to_thread(
                kafka_acls,
                zk_chroot,
                *("--add", "--allow-principal", "User:b", "--operation", "Read"),
                *("--group", "gr", "--resource-pattern-type", "prefixed"),
            )
            await wait_until_async(
                lambda: authorizer.authorize(
                    "User:b", "h", AclOperation.READ, ResourceType.GROUP, "group-1"
                ),
                "the prefixed ACL Kafka's tool added is applied",
            )
            await asyncio.to_thread(
                kafka_acls,
                zk_chroot,
                *("--remove", "--force", "--allow-principal", "User:a"),
                *("--operation", "Read", "--group", "g"),
            )
            await wait_until_async(
                lambda: not authorizer.authorize(
                    "User:a", "h", AclOperation.READ, ResourceType.GROUP, "g"
                ),
                "the literal ACL Kafka's tool removed is gone",
            )
        finally:
            task.cancel()

    asyncio.run(run())
