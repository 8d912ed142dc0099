"""ConsumerGroup against real brokers, the operator run in-process on the test control
plane: the group's state, members and lag reach the status (and ``kubectl get``); a
reset waits while the group has members (ResetPending), is applied once they leave, and
only once per id."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from kubernetes import client

from integration.cluster import wait_until
from kube_operator.conftest import GROUP, VERSION

pytestmark = pytest.mark.timeout(300)


def group_object(kube_api, namespace: str) -> dict:
    return client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, "consumergroups", "readers"
    )


def condition(obj: dict, type_: str) -> dict:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), {})


def test_lag_and_a_reset_that_waits_for_the_members(
    brokers, run_operator, kube_api, kube_namespace, monkeypatch, tidelog_crds
):
    monkeypatch.setenv("TIDELOG_GROUP_SYNC_INTERVAL_S", "1")
    brokers.create_topic("events", partitions=2, replication_factor=2)
    producer = Producer({"bootstrap.servers": brokers.bootstrap})
    for n in range(20):
        producer.produce("events", b"%d" % n, partition=n % 2)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": brokers.bootstrap,
            "group.id": "readers",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
        }
    )
    consumer.subscribe(["events"])
    seen = 0
    while seen < 20:
        seen += len(consumer.consume(20, 1.0))
    consumer.commit(asynchronous=False)
    ns = kube_namespace
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ConsumerGroup",
        "metadata": {"name": "readers"},
        "spec": {"clusterRef": "local", "topics": ["events"]},
    }
    objects = client.CustomObjectsApi(kube_api)
    with run_operator("tidelog_operator.consumer_group.handlers"):
        objects.create_namespaced_custom_object(GROUP, VERSION, ns, "consumergroups", body)
        observed = wait_until(
            lambda: (g := group_object(kube_api, ns))["status"].get("state") == "Stable" and g,
            "the group observed",
        )
        assert observed["status"]["members"] == 1 and observed["status"]["totalLag"] == 0
        assert {
            (r["partition"], r["committed"], r["logEnd"]) for r in observed["status"]["lag"]
        } == {
            (0, 10, 10),
            (1, 10, 10),
        }

        reset = {"id": "replay-1", "to": "earliest"}
        objects.patch_namespaced_custom_object(
            GROUP, VERSION, ns, "consumergroups", "readers", {"spec": {"reset": reset}}
        )
        waiting = wait_until(
            lambda: condition(g := group_object(kube_api, ns), "ResetPending").get("status")
            == "True"
            and g,
            "the reset waiting",
        )
        assert condition(waiting, "ResetPending")["reason"] == "WaitingForMembersToLeave"
        consumer.close()

        applied = wait_until(
            lambda: (g := group_object(kube_api, ns))["status"].get("lastReset") and g,
            "the reset applied",
        )
        assert applied["status"]["lastReset"]["id"] == "replay-1"
        assert applied["status"]["lastReset"]["partitions"] == 2
        assert applied["status"]["totalLag"] == 20 and applied["status"]["state"] == "Empty"
        assert condition(applied, "ResetPending")["reason"] == "Applied"

        table = tidelog_crds.kubectl("get", "consumergroups", "-n", ns)
        assert table.stdout.splitlines()[1].split()[:6] == [
            "readers",
            "local",
            "readers",
            "Empty",
            "0",
            "20",
        ]

        # the same id again does nothing: consume, commit, and the lag stays at 0
        again = Consumer(
            {
                "bootstrap.servers": brokers.bootstrap,
                "group.id": "readers",
                "enable.auto.commit": False,
            }
        )
        again.subscribe(["events"])
        seen = 0
        while seen < 20:
            seen += len(again.consume(20, 1.0))
        again.commit(asynchronous=False)
        again.close()
        wait_until(
            lambda: group_object(kube_api, ns)["status"]["totalLag"] == 0, "lag 0 after reading"
        )
        assert group_object(kube_api, ns)["status"]["lastReset"]["id"] == "replay-1"
