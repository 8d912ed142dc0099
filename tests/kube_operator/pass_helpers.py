"""What tests that call the Cluster pass directly share: a small Cluster made through the
API, a pass over Cluster ``events`` with no broker to ask, and a broker pod marked ready
through the API as a kubelet would mark it (no kubelet runs against the test control
plane)."""

from __future__ import annotations

import datetime

import pytest
from kubernetes import client

from tidelog_operator import kube, names
from tidelog_operator.cluster import passes
from tidelog_operator.names import GROUP, VERSION
from waiting import wait_until

__all__ = ["create_cluster", "mark_broker_ready", "pass_without_brokers"]


def create_cluster(kube_api, namespace: str, replicas: int = 1, **spec) -> dict:
    """Cluster ``events``: ``replicas`` brokers on one 1Gi volume each, an external
    ZooKeeper (no ensemble of its own to make), and ``spec``'s fields beside or instead
    of those."""
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Cluster",
        "metadata": {"name": "events"},
        "spec": {
            "brokers": {"replicas": replicas},
            "storage": {"volumes": [{"id": 0, "size": "1Gi"}]},
            "zookeeper": {"connect": "zookeeper.example:2181"},
            **spec,
        },
    }
    return client.CustomObjectsApi(kube_api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "clusters", body
    )


def pass_without_brokers(kube_api, namespace: str, cluster: str = "events") -> None:
    """One pass over ``cluster``, failing the test should it ask the brokers."""
    passes.run_pass(
        namespace,
        cluster,
        api=kube_api,
        admin=lambda spec: pytest.fail("no broker is ready: none is asked"),
        tell=lambda obj, event: None,
    )


def mark_broker_ready(core: client.CoreV1Api, namespace: str, cluster: str, broker: int) -> None:
    """The StatefulSet's pod of ``broker`` (the test control plane's controllers make it)
    marked running, started and ready."""
    pod = names.broker_pod(cluster, broker)
    wait_until(lambda: kube.found(core.read_namespaced_pod, pod, namespace), f"pod {pod} made", 60)
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    status = {
        "phase": "Running",
        "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
        "containerStatuses": [
            {
                "name": "broker",
                "image": "tidelog-broker:test",
                "imageID": "",
                "ready": True,
                "started": True,
                "restartCount": 0,
                "state": {"running": {"startedAt": now}},
            }
        ],
    }
    core.patch_namespaced_pod_status(pod, namespace, {"status": status})
