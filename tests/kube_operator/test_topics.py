"""Topic reconciliation against real brokers, with the operator run in this process on
the test control plane: the Cluster named by clusterRef reports the brokers' bootstrap
address in its status (here, three brokers on loopback). A Topic creates its topic;
partitions grow and never shrink; drift made with Kafka's kafka-configs.sh is reverted; the
replication factor changes through a reassignment (one the brokers cannot hold is
refused); a topic that is not ours is refused; deleting the Topic deletes the topic."""

from __future__ import annotations

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kafka_reference.tools import run_kafka_tool
from kube_operator.conftest import GROUP, VERSION
from tidelog.admin import AdminClient
from tidelog.admin.topics import ConfigResourceType, NewTopic
from tidelog_operator.topic.handlers import progressing
from waiting import wait_until

pytestmark = pytest.mark.timeout(300)


def topic_object(kube_api, namespace: str, name: str) -> dict:
    return client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, "topics", name
    )


def condition(obj: dict, type_: str) -> dict:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), {})


def ready(obj: dict) -> dict:
    return condition(obj, "Ready")


def apply_topic(kube_api, namespace: str, name: str, spec: dict) -> None:
    """Create the Topic, or set the spec of the one there."""
    objects = client.CustomObjectsApi(kube_api)
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Topic",
        "metadata": {"name": name},
        "spec": spec,
    }
    try:
        objects.create_namespaced_custom_object(GROUP, VERSION, namespace, "topics", body)
    except ApiException as error:
        assert error.status == 409, error
        objects.patch_namespaced_custom_object(
            GROUP, VERSION, namespace, "topics", name, {"spec": spec}
        )


def test_a_topic_follows_its_spec_and_reverts_drift(
    brokers, run_operator, kube_api, kube_namespace, monkeypatch
):
    monkeypatch.setenv("TIDELOG_TOPIC_SYNC_INTERVAL_S", "2")
    admin = AdminClient(brokers.bootstrap)
    ns = kube_namespace
    spec = {
        "clusterRef": "local",
        "partitions": 3,
        "replicationFactor": 2,
        "config": {"retention.ms": 3600000},
    }
    with run_operator("tidelog_operator.topic.handlers"):
        apply_topic(kube_api, ns, "orders", spec)
        synced = wait_until(
            lambda: (t := topic_object(kube_api, ns, "orders"))
            and ready(t).get("reason") == "Synced"
            and t,
            "the topic created",
        )
        description = admin.describe_topics(["orders"])["orders"]
        assert len(description.partitions) == 3 and len(description.partitions[0].replicas) == 2
        assert synced["status"]["topicId"] and synced["status"]["partitions"] == 3
        assert sum(synced["status"]["leaders"].values()) == 3
        configs = admin.describe_configs(ConfigResourceType.TOPIC, ["orders"])["orders"]
        assert configs["retention.ms"].value == "3600000"

        # more partitions
        apply_topic(kube_api, ns, "orders", {**spec, "partitions": 5})
        wait_until(
            lambda: len(admin.describe_topics(["orders"])["orders"].partitions) == 5, "5 partitions"
        )

        # drift made with Apache Kafka's kafka-configs.sh goes back
        altered = run_kafka_tool(
            "kafka-configs",
            "--bootstrap-server",
            brokers.bootstrap,
            "--alter",
            "--entity-type",
            "topics",
            "--entity-name",
            "orders",
            "--add-config",
            "retention.ms=1000,cleanup.policy=compact",
        )
        assert altered.returncode == 0, altered.stderr

        def reverted() -> bool:
            configs = admin.describe_configs(ConfigResourceType.TOPIC, ["orders"])["orders"]
            return (
                configs["retention.ms"].value == "3600000"
                and configs["cleanup.policy"].value == "delete"
            )

        wait_until(reverted, "the drift reverted")

        # fewer partitions: refused, nothing changes
        apply_topic(kube_api, ns, "orders", {**spec, "partitions": 2})
        refused = wait_until(
            lambda: (t := topic_object(kube_api, ns, "orders"))
            and ready(t).get("reason") == "PartitionsDecreaseRefused"
            and t,
            "the decrease refused",
        )
        assert "has 5 partitions and partitions cannot be removed" in ready(refused)["message"]
        assert len(admin.describe_topics(["orders"])["orders"].partitions) == 5

        # a replication factor above the brokers': refused, nothing moves
        apply_topic(kube_api, ns, "orders", {**spec, "partitions": 5, "replicationFactor": 4})
        refused = wait_until(
            lambda: (t := topic_object(kube_api, ns, "orders"))
            and ready(t).get("reason") == "ReplicationFactorRefused"
            and t,
            "the factor 4 refused",
        )
        assert "replication factor 4" in ready(refused)["message"]
        assert not admin.list_reassignments()

        # replication factor 2 → 3 through a reassignment, then nothing progressing
        apply_topic(kube_api, ns, "orders", {**spec, "partitions": 5, "replicationFactor": 3})
        wait_until(
            lambda: all(
                len(p.replicas) == 3 for p in admin.describe_topics(["orders"])["orders"].partitions
            )
            and not admin.list_reassignments(),
            "every partition on 3 brokers",
            timeout=60,
        )
        wait_until(
            lambda: (t := topic_object(kube_api, ns, "orders"))
            and ready(t).get("reason") == "Synced"
            and condition(t, "Progressing").get("reason") == "Idle",
            "the Topic synced, nothing moving",
        )

        # a topic that is not ours
        assert admin.create_topics([NewTopic("foreign", 1, 1)])["foreign"] is None
        apply_topic(
            kube_api,
            ns,
            "foreign",
            {"clusterRef": "local", "partitions": 1, "replicationFactor": 1},
        )
        wait_until(
            lambda: ready(topic_object(kube_api, ns, "foreign")).get("reason") == "NotOwned",
            "refused",
        )

        # deleting the Topic deletes the topic, and leaves a foreign one alone
        objects = client.CustomObjectsApi(kube_api)
        objects.delete_namespaced_custom_object(GROUP, VERSION, ns, "topics", "orders")
        objects.delete_namespaced_custom_object(GROUP, VERSION, ns, "topics", "foreign")
        wait_until(lambda: "orders" not in admin.list_topics(), "the topic deleted")
        wait_until(
            lambda: not objects.list_namespaced_custom_object(GROUP, VERSION, ns, "topics")[
                "items"
            ],
            "the Topics gone",
        )
        assert "foreign" in admin.list_topics()


def test_a_topics_progressing_says_how_many_partitions_move():
    moving = {"reassignment": {"partitionsMoving": 2, "partitionsTotal": 5}}
    assert progressing(moving) == (True, "Reassigning", "2 of 5 partitions moving")
    assert progressing({"reassignment": None}) == (False, "Idle", "no partition moving")
