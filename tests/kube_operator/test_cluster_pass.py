"""The Cluster pass against a real API server and real brokers: the brokers' StatefulSet
has one writer, and no write undoes another.

* A write decided on an older StatefulSet fails its precondition (the generation the
  pass observed) instead of undoing a newer one.
* A spec change races the daemon's shrink: the daemon's pass, having drained broker 3,
  shrinks the StatefulSet from 4 to 3 while the spec handler's pass for a config change
  starts. The two passes share the Cluster's lock, so the spec handler's pass observes
  the shrunk StatefulSet and keeps it: the final size is the one the data movement
  decided, and the config change is applied too.

No kubelet runs here: the StatefulSet's pods, which the test control plane's controllers
make, are marked ready through the API as a kubelet would, so that the pass asks the
brokers (three real ones, ids 0-2; broker 3's pod has no broker behind it and holds no
replica).
"""

from __future__ import annotations

import threading

from kubernetes import client

from integration.cluster import Cluster
from kube_operator.pass_helpers import mark_broker_ready
from tidelog.admin import AdminClient
from tidelog_operator import names
from tidelog_operator.cluster import passes
from tidelog_operator.cluster.commands import ApplyChildren, Context, carry_out
from tidelog_operator.cluster.snapshot import observe
from tidelog_operator.spec import parse_cluster

GROUP, VERSION = "tidelog.dev", "v1alpha1"
NAME = "race"
RACE_WINDOW_S = 5.0  # how long the paused shrink leaves the spec handler to overtake it


def _cluster_body(replicas: int, config: dict | None = None) -> dict:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Cluster",
        "metadata": {"name": NAME},
        "spec": {
            "brokers": {"replicas": replicas, "config": config or {}},
            "storage": {"volumes": [{"id": 0, "size": "1Gi"}]},
            "zookeeper": {"connect": "zookeeper.example:2181"},
        },
    }


def _ignore(_cluster: dict, _event: passes.Event) -> None:
    """Events go nowhere here (kopf posts them inside the operator)."""


def _statefulset(apps: client.AppsV1Api, namespace: str) -> client.V1StatefulSet:
    return apps.read_namespaced_stateful_set(names.brokers_statefulset(NAME), namespace)


def test_a_write_decided_on_an_older_statefulset_does_not_undo_a_newer_one(
    tidelog_crds, kube_api, kube_namespace
):
    objects, apps = client.CustomObjectsApi(kube_api), client.AppsV1Api(kube_api)
    objects.create_namespaced_custom_object(
        GROUP, VERSION, kube_namespace, "clusters", _cluster_body(4)
    )
    passes.run_pass(kube_namespace, NAME, api=kube_api, tell=_ignore)
    assert _statefulset(apps, kube_namespace).spec.replicas == 4
    spec = parse_cluster(NAME, kube_namespace, _cluster_body(4)["spec"])
    older = observe(kube_api, spec, lambda: None, draining=lambda _: False)

    apps.patch_namespaced_stateful_set(
        names.brokers_statefulset(NAME), kube_namespace, {"spec": {"replicas": 3}}
    )
    cluster = objects.get_namespaced_custom_object(GROUP, VERSION, kube_namespace, "clusters", NAME)
    stale = passes._apply_children(spec, cluster, older, 4, spec.volumes, 1, 0)
    assert isinstance(stale, ApplyChildren)
    assert stale.precondition == older.statefulset.generation
    context = Context(kube_api, kube_namespace, NAME, lambda: None)
    assert carry_out(stale, context) is False
    assert _statefulset(apps, kube_namespace).spec.replicas == 3


def test_a_spec_change_racing_the_daemons_shrink_keeps_the_shrink(
    tmp_path, zk_chroot, tidelog_crds, kube_api, kube_namespace
):
    objects, apps = client.CustomObjectsApi(kube_api), client.AppsV1Api(kube_api)
    core = client.CoreV1Api(kube_api)
    with Cluster(tmp_path, zk_chroot, size=3, first_id=0) as brokers:
        brokers.create_topic("orders", assignment={0: [0, 1, 2], 1: [1, 2, 0], 2: [2, 0, 1]})
        objects.create_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, "clusters", _cluster_body(4)
        )
        admin = AdminClient(brokers.bootstrap, timeout=10)
        passes.run_pass(kube_namespace, NAME, api=kube_api, admin=lambda _: admin, tell=_ignore)
        for broker in range(4):
            mark_broker_ready(core, kube_namespace, NAME, broker)
        objects.patch_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, "clusters", NAME, {"spec": {"brokers": {"replicas": 3}}}
        )

        seen: dict[str, int | None] = {}
        told: list[passes.Event] = []
        spec_handler_observed = threading.Event()
        daemon_paused = threading.Event()

        def observed_by(who: str, wait_for: threading.Event | None):
            def make_admin(_spec):
                seen[who] = _statefulset(apps, kube_namespace).spec.replicas
                if who == "spec":
                    spec_handler_observed.set()
                else:
                    daemon_paused.set()
                    if wait_for is not None:
                        wait_for.wait(RACE_WINDOW_S)
                return admin

            return make_admin

        daemon = threading.Thread(
            target=passes.run_pass,
            args=(kube_namespace, NAME),
            kwargs={
                "api": kube_api,
                "admin": observed_by("daemon", spec_handler_observed),
                "tell": lambda _cluster, event: told.append(event),
            },
        )
        daemon.start()
        assert daemon_paused.wait(60), "the daemon's pass never asked the brokers"
        objects.patch_namespaced_custom_object(
            GROUP,
            VERSION,
            kube_namespace,
            "clusters",
            NAME,
            {"spec": {"brokers": {"config": {"log.retention.hours": "48"}}}},
        )
        spec_handler = threading.Thread(
            target=passes.run_pass,
            args=(kube_namespace, NAME),
            kwargs={"api": kube_api, "admin": observed_by("spec", None), "tell": _ignore},
        )
        spec_handler.start()
        daemon.join(120)
        spec_handler.join(120)
        assert not daemon.is_alive() and not spec_handler.is_alive()

    assert seen == {"daemon": 4, "spec": 3}, "the spec handler's pass overtook the shrink"
    assert passes.Event(False, "Scaling", "brokers 3 hold no replica") in told, told
    statefulset = _statefulset(apps, kube_namespace)
    assert statefulset.spec.replicas == 3
    config = core.read_namespaced_config_map(names.broker_config_map(NAME), kube_namespace)
    assert any("log.retention.hours=48" in text for text in config.data.values())
