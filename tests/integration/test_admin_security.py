"""The admin library's security calls (:mod:`tidelog.admin.security`) against a real
SASL_SSL cluster with the ACL authorizer (two brokers, SCRAM-SHA-512, the tests' admin a
super user), checked by what Kafka's own tools and real clients see: ACLs the calls make
are listed by ``kafka-acls.sh`` and enforced on other users' clients, ACLs the tool makes
are described, deletions remove exactly what their filters match; a credential the calls
write lets confluent-kafka log in until it is deleted; quotas the calls set are shown by
``kafka-configs.sh`` until removed. Every step that waits for the brokers to follow a
change polls for its effect. Each test uses its own users and resources."""

from __future__ import annotations

import pytest
from confluent_kafka import KafkaError, KafkaException, Producer
from confluent_kafka.admin import AdminClient as ConfluentAdmin

from integration.cluster import Cluster
from kafka_reference.tools import run_kafka_tool
from tidelog.admin import AdminClient, AdminError
from tidelog.admin.security import (
    CLIENT_ID,
    USER,
    AccessControlEntry,
    AccessControlEntryFilter,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ClientQuotaEntity,
    PatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
    ScramCredentialInfo,
    exact_filter,
)
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

pytestmark = pytest.mark.timeout(300)

OP = AclOperation
ALLOW = AclPermissionType.ALLOW


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, module_chroot):
    directory = tmp_path_factory.mktemp("admin-security")
    with Cluster(directory, module_chroot, size=2, security="sasl_ssl") as running:
        yield running


@pytest.fixture(scope="module")
def admin(cluster) -> AdminClient:
    return AdminClient(cluster.bootstrap, timeout=30, security=cluster.admin_security())


def kafka_tool(cluster: Cluster, tool: str, *args: str) -> str:
    result = run_kafka_tool(
        tool,
        *("--bootstrap-server", cluster.bootstrap),
        *("--command-config", str(cluster.client_properties_file())),
        *args,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result.stdout


def as_user(cluster: Cluster, user: str, password: str, **extra) -> dict:
    """confluent-kafka settings that log in as ``user`` with SCRAM-SHA-512."""
    return {**cluster.client_config(), "sasl.username": user, "sasl.password": password, **extra}


def produce(cluster: Cluster, topic: str, user: str, password: str) -> KafkaError | None:
    """One record produced to ``topic`` as ``user``: None when acknowledged, else the
    error its delivery failed with (a timeout while the brokers refuse the login)."""
    delivery: list[KafkaError | None] = []
    producer = Producer(as_user(cluster, user, password, **{"message.timeout.ms": 10000}))
    producer.produce(topic, b"x", on_delivery=lambda error, _: delivery.append(error))
    producer.flush(20)
    return delivery[0] if delivery else KafkaError(KafkaError._MSG_TIMED_OUT)


def logs_in(cluster: Cluster, user: str, password: str) -> bool:
    """Whether confluent-kafka logs in as ``user`` (its Metadata answered); False once
    the brokers refuse the login."""
    errors: list[KafkaError] = []
    client = ConfluentAdmin(as_user(cluster, user, password, error_cb=errors.append))
    try:
        client.list_topics(timeout=10)
    except KafkaException:
        # (the refusal reaches error_cb when the client's events are served)
        wait_until(
            lambda: client.poll(0.1) >= 0
            and any(e.code() == KafkaError._AUTHENTICATION for e in errors),
            f"the brokers' refusal of {user}'s login is reported",
            timeout=10,
        )
        return False
    return True


def topic_acl(topic: str, principal: str, operation: AclOperation, pattern=PatternType.LITERAL):
    return AclBinding(
        ResourcePattern(ResourceType.TOPIC, topic, pattern),
        AccessControlEntry(principal, "*", operation, ALLOW),
    )


def principal_filter(principal: str) -> AclBindingFilter:
    return AclBindingFilter(entry=AccessControlEntryFilter(principal=principal))


def test_acls_created_are_kafkas_and_enforced_on_other_users(cluster, admin):
    topic = "sec-orders"
    cluster.create_topic(topic, partitions=1, replication_factor=2)
    for user in ("alice", "bob"):
        admin.upsert_scram_credential(user, f"{user}-secret")
    granted = [
        topic_acl(topic, "User:alice", OP.WRITE),
        topic_acl(topic, "User:alice", OP.DESCRIBE),
    ]
    admin.create_acls(granted)

    assert admin.describe_acls(principal_filter("User:alice")) == sorted(granted)
    # (the tool may ask the other broker, which follows the ACLs through ZooKeeper)
    wait_until(
        lambda: all(
            f"(principal=User:alice, host=*, operation={operation}, permissionType=ALLOW)"
            in kafka_tool(cluster, "kafka-acls", "--list", "--topic", topic)
            for operation in ("WRITE", "DESCRIBE")
        ),
        "kafka-acls lists alice's ACLs",
    )
    wait_until(
        lambda: produce(cluster, topic, "alice", "alice-secret") is None,
        "alice may produce to the topic",
        timeout=60,
    )
    wait_until(
        lambda: produce(cluster, topic, "bob", "bob-secret").code()
        == KafkaError.TOPIC_AUTHORIZATION_FAILED,
        "bob logs in and may not produce to the topic",
        timeout=60,
    )


def test_describe_returns_kafka_tool_acls_and_delete_removes_exactly_the_filters(cluster, admin):
    kafka_tool(
        cluster,
        "kafka-acls",
        *("--add", "--allow-principal", "User:carol", "--operation", "Read"),
        *("--topic", "sec-pay", "--resource-pattern-type", "prefixed"),
    )
    kafka_tool(
        cluster,
        "kafka-acls",
        *("--add", "--allow-principal", "User:carol", "--allow-principal", "User:dave"),
        *("--operation", "Read", "--group", "sec-pay-group"),
    )
    carol_topic = topic_acl("sec-pay", "User:carol", OP.READ, PatternType.PREFIXED)
    group = ResourcePattern(ResourceType.GROUP, "sec-pay-group")
    carol_group, dave_group = (
        AclBinding(group, AccessControlEntry(p, "*", OP.READ, ALLOW))
        for p in ("User:carol", "User:dave")
    )
    on_group = AclBindingFilter(ResourcePatternFilter(ResourceType.GROUP, "sec-pay-group"))
    # (the tool may have asked the other broker, which the ACLs reach through ZooKeeper)
    wait_until(
        lambda: admin.describe_acls(principal_filter("User:carol"))
        == sorted([carol_topic, carol_group])
        and admin.describe_acls(on_group) == sorted([carol_group, dave_group]),
        "the tool's ACLs are described",
    )
    # MATCH: what applies to a topic of that name, the prefixed ACL included
    applying = AclBindingFilter(
        ResourcePatternFilter(ResourceType.TOPIC, "sec-pay-eu", PatternType.MATCH)
    )
    assert carol_topic in admin.describe_acls(applying)

    deleted = admin.delete_acls([exact_filter(carol_topic), exact_filter(carol_group)])
    assert deleted == sorted([carol_topic, carol_group])
    assert admin.describe_acls(principal_filter("User:carol")) == []
    assert admin.describe_acls(on_group) == [dave_group]
    wait_until(
        lambda: "User:dave" in (listed := kafka_tool(cluster, "kafka-acls", "--list"))
        and "User:carol" not in listed,
        "kafka-acls lists dave's ACL and none of carol's",
    )
    assert admin.delete_acls([exact_filter(carol_topic)]) == []

    with pytest.raises(AdminError) as refused:
        admin.create_acls(
            [AclBinding(ResourcePattern(ResourceType.CLUSTER, "c"), dave_group.entry)]
        )
    assert refused.value.code == ErrorCode.INVALID_REQUEST
    assert "kafka-cluster" in str(refused.value)


def test_scram_credential_lets_a_client_log_in_until_deleted(cluster, admin):
    admin.upsert_scram_credential("erin", "erin-secret")
    admin.upsert_scram_credential("erin", "erin-other", mechanism="SCRAM-SHA-256", iterations=8192)
    assert admin.describe_scram_credentials(["erin", "nobody"]) == {
        "erin": [
            ScramCredentialInfo("SCRAM-SHA-256", 8192),
            ScramCredentialInfo("SCRAM-SHA-512", 4096),
        ]
    }
    everyone = admin.describe_scram_credentials()
    assert everyone["admin"] == [ScramCredentialInfo("SCRAM-SHA-512", 4096)]
    assert "erin" in everyone
    described = kafka_tool(
        cluster, "kafka-configs", "--describe", "--entity-type", "users", "--entity-name", "erin"
    )
    assert "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096" in described

    wait_until(lambda: logs_in(cluster, "erin", "erin-secret"), "erin logs in", timeout=60)
    assert not logs_in(cluster, "erin", "erin-other")
    # a new password replaces the old one
    admin.upsert_scram_credential("erin", "erin-new")
    wait_until(lambda: logs_in(cluster, "erin", "erin-new"), "erin logs in anew", timeout=60)

    admin.delete_scram_credential("erin", "SCRAM-SHA-512")
    wait_until(lambda: not logs_in(cluster, "erin", "erin-new"), "erin is refused", timeout=60)
    assert admin.describe_scram_credentials(["erin"]) == {
        "erin": [ScramCredentialInfo("SCRAM-SHA-256", 8192)]
    }
    with pytest.raises(AdminError) as missing:
        admin.delete_scram_credential("erin", "SCRAM-SHA-512")
    assert missing.value.code == ErrorCode.RESOURCE_NOT_FOUND
    admin.delete_scram_credential("erin", "SCRAM-SHA-512", missing_ok=True)
    with pytest.raises(AdminError) as unknown:
        admin.upsert_scram_credential("erin", "x", mechanism="SCRAM-SHA-1")
    assert unknown.value.code == ErrorCode.UNSUPPORTED_SASL_MECHANISM
    with pytest.raises(AdminError) as weak:
        admin.upsert_scram_credential("erin", "x", iterations=1000)
    assert weak.value.code == ErrorCode.UNACCEPTABLE_CREDENTIAL


def test_quotas_set_are_described_by_kafka_configs_and_removed(cluster, admin):
    frank = ClientQuotaEntity.for_user("frank")
    admin.alter_client_quotas(
        "frank",
        set={"producer_byte_rate": 1024, "consumer_byte_rate": 2048.0, "request_percentage": 12.5},
    )
    assert admin.describe_client_quotas("frank") == {
        frank: {
            "consumer_byte_rate": 2048.0,
            "producer_byte_rate": 1024.0,
            "request_percentage": 12.5,
        }
    }

    def kafka_configs() -> str:
        return kafka_tool(
            cluster,
            "kafka-configs",
            *("--describe", "--entity-type", "users", "--entity-name", "frank"),
        )

    assert (
        "Quota configs for user-principal 'frank' are consumer_byte_rate=2048.0, "
        "producer_byte_rate=1024.0, request_percentage=12.5"
    ) in kafka_configs()
    # a quota of frank with a client id is his too, and every user's are listed
    kafka_tool(
        cluster,
        "kafka-configs",
        *("--alter", "--entity-type", "users", "--entity-name", "frank"),
        *("--entity-type", "clients", "--entity-name", "app"),
        *("--add-config", "producer_byte_rate=512"),
    )
    with_client = ClientQuotaEntity(((CLIENT_ID, "app"), (USER, "frank")))
    assert admin.describe_client_quotas("frank")[with_client] == {"producer_byte_rate": 512.0}
    assert frank in admin.describe_client_quotas()

    admin.alter_client_quotas(
        "frank",
        set={"producer_byte_rate": 4096},
        remove=["consumer_byte_rate", "request_percentage", "controller_mutation_rate"],
    )
    assert admin.describe_client_quotas("frank")[frank] == {"producer_byte_rate": 4096.0}
    assert "Quota configs for user-principal 'frank' are producer_byte_rate=4096.0" in (
        kafka_configs()
    )
    admin.alter_client_quotas("frank", remove=["producer_byte_rate"])
    assert frank not in admin.describe_client_quotas("frank")
    assert "Quota configs for user-principal 'frank' are" not in kafka_configs()

    with pytest.raises(AdminError) as refused:
        admin.alter_client_quotas("frank", set={"producer_byte_rate": 1.5, "bogus_rate": 1})
    assert refused.value.code == ErrorCode.INVALID_REQUEST
    assert frank not in admin.describe_client_quotas("frank")
