"""The operator, run in this process with kopf, against a real API server: a Cluster
gets its children (owned by it, so that deleting it collects them), its ConfigValid
condition and a Warning event naming refused keys, and a status reporting brokers that
are not ready (no kubelet runs here: pods stay Pending). Fixing the config rolls the
config hash into the brokers' pod template."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from waiting import wait_until

GROUP, VERSION = "tidelog.dev", "v1alpha1"


@pytest.fixture
def operator(run_operator) -> Iterator[None]:
    with run_operator("tidelog_operator.cluster.handlers"):
        yield


def found(read, *args):
    """What ``read(*args)`` returns, None while it is not there."""
    try:
        return read(*args)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


def condition(obj: dict, type_: str) -> dict | None:
    return next(
        (c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), None
    )


def test_a_cluster_gets_its_children_conditions_and_status(operator, kube_api, kube_namespace):
    ns = kube_namespace
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Cluster",
        "metadata": {"name": "events"},
        "spec": {
            "brokers": {"replicas": 3, "config": {"min.insync.replicas": 2, "no.such.key": "x"}},
            "storage": {"volumes": [{"id": 0, "size": "1Gi"}, {"id": 1, "size": "1Gi"}]},
        },
    }
    created = custom(kube_api).create_namespaced_custom_object(GROUP, VERSION, ns, "clusters", body)
    uid = created["metadata"]["uid"]
    apps, core = client.AppsV1Api(kube_api), client.CoreV1Api(kube_api)
    brokers = wait_until(
        lambda: found(apps.read_namespaced_stateful_set, "events-broker", ns),
        "the brokers' StatefulSet",
    )
    assert brokers.spec.replicas == 3
    assert [t.metadata.name for t in brokers.spec.volume_claim_templates] == ["data-0", "data-1"]
    assert brokers.metadata.owner_references[0].uid == uid
    zookeeper = apps.read_namespaced_stateful_set("events-zookeeper", ns)
    assert zookeeper.spec.replicas == 3 and zookeeper.metadata.owner_references[0].uid == uid
    properties = core.read_namespaced_config_map("events-broker-config", ns).data[
        "server.properties"
    ]
    assert "min.insync.replicas=2" in properties and "no.such.key" not in properties
    assert "log.dirs=/var/lib/tidelog/data-0,/var/lib/tidelog/data-1" in properties
    services = {s.metadata.name for s in core.list_namespaced_service(ns).items}
    assert {"events-brokers", "events-bootstrap", "events-zookeeper"} <= services
    budget = client.PolicyV1Api(kube_api).read_namespaced_pod_disruption_budget("events-broker", ns)
    assert budget.spec.max_unavailable == 1

    def status_reported() -> dict | None:
        current = custom(kube_api).get_namespaced_custom_object(
            GROUP, VERSION, ns, "clusters", "events"
        )
        return (
            current if condition(current, "Ready") and condition(current, "ConfigValid") else None
        )

    reported = wait_until(status_reported, "the Cluster's status")
    valid = condition(reported, "ConfigValid")
    assert (valid["status"], valid["reason"]) == ("False", "InvalidConfig")
    assert "no.such.key: not a broker config" in valid["message"]
    ready = condition(reported, "Ready")
    assert (ready["status"], ready["reason"]) == ("False", "ZooKeeperNotReady")
    assert reported["status"]["readyBrokers"] == 0
    assert reported["status"]["bootstrap"] == f"events-bootstrap.{ns}.svc:9092"
    events = core.list_namespaced_event(ns, field_selector="involvedObject.name=events").items
    assert any(e.type == "Warning" and e.reason == "InvalidConfig" for e in events)

    # a fixed config, with a key more, is applied: the ConfigMap and the pods' hash change
    before = brokers.spec.template.metadata.annotations["tidelog.dev/config-hash"]
    custom(kube_api).patch_namespaced_custom_object(
        GROUP,
        VERSION,
        ns,
        "clusters",
        "events",
        {"spec": {"brokers": {"config": {"no.such.key": None, "num.io.threads": 4}}}},
    )

    def config_applied() -> bool:
        current = custom(kube_api).get_namespaced_custom_object(
            GROUP, VERSION, ns, "clusters", "events"
        )
        return (condition(current, "ConfigValid") or {}).get("status") == "True"

    wait_until(config_applied, "ConfigValid true")
    after = apps.read_namespaced_stateful_set("events-broker", ns)
    assert after.spec.template.metadata.annotations["tidelog.dev/config-hash"] != before
    properties = core.read_namespaced_config_map("events-broker-config", ns).data[
        "server.properties"
    ]
    assert "num.io.threads=4" in properties

    custom(kube_api).delete_namespaced_custom_object(GROUP, VERSION, ns, "clusters", "events")

    def collected() -> bool:
        try:
            apps.read_namespaced_stateful_set("events-broker", ns)
        except ApiException as error:
            return error.status == 404
        return False

    wait_until(collected, "the children collected with the Cluster", timeout=60)


def test_an_added_volume_makes_the_statefulset_anew_and_leaves_its_pods_running(
    operator, kube_api, kube_namespace
):
    """Claim templates cannot change in place: the StatefulSet is deleted orphaning its
    pods and made anew with the new volume, and the same pods (no kubelet here: Pending)
    are adopted by it, on the old template for the roller to restart."""
    ns = kube_namespace
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Cluster",
        "metadata": {"name": "grows"},
        "spec": {
            "brokers": {"replicas": 2},
            "storage": {"volumes": [{"id": 0, "size": "1Gi"}]},
            "zookeeper": {"connect": "zookeeper.example:2181"},
        },
    }
    custom(kube_api).create_namespaced_custom_object(GROUP, VERSION, ns, "clusters", body)
    apps, core = client.AppsV1Api(kube_api), client.CoreV1Api(kube_api)
    selector = "tidelog.dev/cluster=grows,app.kubernetes.io/component=broker"

    def pods() -> dict[str, client.V1Pod]:
        return {
            p.metadata.name: p for p in core.list_namespaced_pod(ns, label_selector=selector).items
        }

    before = wait_until(lambda: len(pods()) == 2 and pods(), "the brokers' pods")
    first = apps.read_namespaced_stateful_set("grows-broker", ns)
    volumes = [{"id": 0, "size": "1Gi"}, {"id": 1, "size": "2Gi"}]
    custom(kube_api).patch_namespaced_custom_object(
        GROUP, VERSION, ns, "clusters", "grows", {"spec": {"storage": {"volumes": volumes}}}
    )

    def remade() -> client.V1StatefulSet | None:
        current = found(apps.read_namespaced_stateful_set, "grows-broker", ns)
        if current is None or current.metadata.uid == first.metadata.uid:
            return None
        return current

    second = wait_until(remade, "the StatefulSet made anew", timeout=60)
    claims = {
        t.metadata.name: t.spec.resources.requests["storage"]
        for t in second.spec.volume_claim_templates
    }
    assert claims == {"data-0": "1Gi", "data-1": "2Gi"}
    mounts = [m.mount_path for m in second.spec.template.spec.containers[0].volume_mounts]
    assert "/var/lib/tidelog/data-1" in mounts

    def adopted() -> bool:
        now = pods()
        return all(
            now[name].metadata.uid == pod.metadata.uid
            and [o.uid for o in now[name].metadata.owner_references or []] == [second.metadata.uid]
            for name, pod in before.items()
        )

    wait_until(adopted, "the same pods adopted by the new StatefulSet", timeout=60)
    properties = core.read_namespaced_config_map("grows-broker-config", ns).data[
        "server.properties"
    ]
    assert "log.dirs=/var/lib/tidelog/data-0,/var/lib/tidelog/data-1" in properties
