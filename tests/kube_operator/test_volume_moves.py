"""A volume removed from a running Cluster, against real brokers (ids from 0, two log
dirs each named as the operator's volumes, ``data-0`` and ``data-1``) and a real API
server, driven pass after pass as the operator drives it, while an idempotent
acks=all producer writes: the brokers drain the removed volume's dir, only then does the
StatefulSet lose the volume (made anew, its pods left running), and once the pods are
restarted without it the draining entries go and the removal is done. Every
acknowledged record is kept.

Then, pure, the removal's record on the status from pass to pass (``removal_step``)."""

from __future__ import annotations

import datetime
from dataclasses import replace

from kubernetes import client

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from integration.cluster import Cluster
from kube_operator.cluster_values import outcome
from tidelog.admin import AdminClient
from tidelog_operator import kube
from tidelog_operator.builders.brokers import service_account, statefulset
from tidelog_operator.cluster.commands import Context, apply_statefulset, carry_out
from tidelog_operator.cluster.disks import VolumeAction, VolumeObservation
from tidelog_operator.cluster.snapshot import observe
from tidelog_operator.cluster.status import cluster_status
from tidelog_operator.cluster.volume_step import (
    VOLUMES,
    removal_step,
    volume_step,
    volumes_to_mount,
)
from tidelog_operator.spec import parse_cluster
from waiting import wait_until

TOPIC = "orders"
SELECTOR = "tidelog.dev/cluster=local,app.kubernetes.io/component=broker"


def spec_with(volumes: list[int], namespace: str):
    return parse_cluster(
        "local",
        namespace,
        {
            "brokers": {"replicas": 3},
            "storage": {
                "volumes": [{"id": v, "size": "1Gi"} for v in volumes],
                "claimRetention": "Delete",
            },
            "zookeeper": {"connect": "zookeeper.example:2181"},
        },
    )


def mark_ready(core: client.CoreV1Api, namespace: str) -> int:
    """The brokers' pods that the StatefulSet made, marked running and ready as a
    kubelet would (none runs here; the brokers themselves run outside); how many."""
    pods = core.list_namespaced_pod(namespace, label_selector=SELECTOR).items
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    for pod in pods:
        if any(c.type == "Ready" for c in pod.status.conditions or []):
            continue
        core.patch_namespaced_pod_status(
            pod.metadata.name,
            namespace,
            {
                "status": {
                    "phase": "Running",
                    "conditions": [{"type": "Ready", "status": "True", "lastTransitionTime": now}],
                    "containerStatuses": [
                        {
                            "name": "broker",
                            "image": pod.spec.containers[0].image,
                            "imageID": "",
                            "ready": True,
                            "started": True,
                            "restartCount": 0,
                            "state": {"running": {"startedAt": now}},
                        }
                    ],
                }
            },
        )
    return len(pods)


def test_a_removed_volume_is_drained_then_unmounted_then_forgotten(
    tmp_path, zk_chroot, kube_api, kube_namespace
):
    before, after = spec_with([0, 1], kube_namespace), spec_with([0], kube_namespace)
    apps, core = client.AppsV1Api(kube_api), client.CoreV1Api(kube_api)

    kube.apply(kube_api, service_account(before))
    assert apply_statefulset(kube_api, statefulset(before, "hash"), None)
    wait_until(
        lambda: mark_ready(core, kube_namespace) == 3, "the brokers' pods (marked ready here)"
    )
    with Cluster(tmp_path, zk_chroot, size=3, first_id=0) as cluster:
        admin = AdminClient(cluster.bootstrap, timeout=10)
        cluster.create_topic(
            TOPIC, partitions=12, replication_factor=3, configs={"min.insync.replicas": "2"}
        )
        held = _held_in(admin, "data-1")
        assert held > 0, "the placement put nothing in data-1"
        context = Context(kube_api, kube_namespace, "local", lambda: admin)
        status: dict = {}
        actions: list[VolumeAction] = []

        def step() -> str:
            """One pass as far as volumes go: observe, the volume step, its commands, the
            StatefulSet with the volumes it keeps (on the generation observed)."""
            nonlocal status
            mark_ready(core, kube_namespace)
            seen = observe(kube_api, after, lambda: admin, draining=lambda templates: True)
            done = volume_step(
                seen, after, status, generation=1, now=datetime.datetime.now(datetime.UTC)
            )
            for command in done.commands:
                carry_out(command, context)
            live = seen.statefulset
            mount = volumes_to_mount(after, done.decision.mount, seen.known_volumes)
            apply_statefulset(
                kube_api,
                statefulset(replace(after, volumes=mount), "hash"),
                None if live is None or live.going else live.generation,
            )
            status = cluster_status(
                status, seen, after, outcome(volumes=done), generation=1, now="now"
            )
            actions.append(done.decision.action)
            return (status.get(VOLUMES) or {}).get("state", "")

        with ContinuousProducer(cluster.bootstrap, TOPIC, 12, per_second=200) as producer:
            producer.wait_for_more(500, "records before the removal")
            assert step() == "Draining"
            assert actions == [VolumeAction.DRAIN]
            assert status[VOLUMES]["replicasLeft"] == held
            progressing = next(c for c in status["conditions"] if c["type"] == "Progressing")
            assert progressing["reason"] == "DrainingVolumes"
            for broker in cluster.brokers.values():
                assert admin.draining_dirs(broker.broker_id) == {str(broker.log_dirs[1])}
            wait_until(lambda: step() == "Unmounted", "data-1 drained and unmounted", 120)
            assert actions[-1] is VolumeAction.UNMOUNT
            assert _held_in(admin, "data-1") == 0
            producer.wait_for_more(500, "records after the drain")
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after the drain")

        def remade() -> bool:
            step()
            live = apps.list_namespaced_stateful_set(kube_namespace).items
            return [[t.metadata.name for t in s.spec.volume_claim_templates] for s in live] == [
                ["data-0"]
            ]

        wait_until(remade, "the StatefulSet made anew without data-1")
        assert step() == "Unmounted"  # the pods still mount it: the roller restarts them
        assert actions[-1] is VolumeAction.NONE
        core.delete_collection_namespaced_pod(kube_namespace, label_selector=SELECTOR)
        wait_until(lambda: step() == "Done", "the removal done once no pod mounts it", 60)
        assert actions[-1] is VolumeAction.CLEAR
        for broker in cluster.brokers:
            assert admin.draining_dirs(broker) == set()

        def claims_of_data_1() -> list[str]:
            claims = core.list_namespaced_persistent_volume_claim(kube_namespace).items
            return [c.metadata.name for c in claims if c.metadata.name.startswith("data-1-")]

        wait_until(lambda: not claims_of_data_1(), "data-1's claims gone (claimRetention)")


def _held_in(admin: AdminClient, volume_dir: str) -> int:
    """Replicas in the brokers' log dirs named ``volume_dir``."""
    return sum(
        len(d.replicas)
        for dirs in admin.describe_log_dirs().values()
        for d in dirs
        if d.path.rstrip("/").endswith(f"/{volume_dir}")
    )


NOW = datetime.datetime(2026, 11, 26, 0, 4, 53, tzinfo=datetime.UTC)
LATER = NOW + datetime.timedelta(seconds=10)


def observed(desired, statefulset, pods=(0, 1), draining=None) -> VolumeObservation:
    """Three live brokers, each with the log dirs of the volumes its pod mounts and
    replicas only in data-0 and data-1."""
    return VolumeObservation(
        desired=frozenset(desired),
        statefulset=None if statefulset is None else frozenset(statefulset),
        pods=frozenset(pods),
        brokers=frozenset({0, 1, 2}),
        holding={b: frozenset(pods) for b in (0, 1, 2)},
        draining={b: frozenset(v) for b, v in (draining or {}).items()},
        replicas_in={0: 20, 1: 16},
    )


def test_a_volume_removed_before_any_pod_mounted_it_is_done_once_the_statefulset_lost_it():
    """A disk added, then removed before the roll mounted it on any pod: the
    StatefulSet made anew for the addition has data-2, no broker has its dir, so it is
    unmounted without a drain, and the record names it so that the next pass, with no
    pod mounting it, can finish the removal (it once stayed Unmounted for good)."""
    unmount = removal_step(observed({0, 1}, {0, 1, 2}), {}, NOW)
    assert (unmount.decision.action, unmount.decision.mount) == (
        VolumeAction.UNMOUNT,
        frozenset({0, 1}),
    )
    status = unmount.status
    assert status[VOLUMES] == {
        "removed": [2],
        "state": "Unmounted",
        "replicasLeft": 0,
        "startedAt": "2026-11-26T00:04:53Z",
        "message": "data-2 empty on every broker: the brokers restart without it",
    }
    for templates in (None, {0, 1}):  # being made anew, then made
        step = removal_step(observed({0, 1}, templates), status[VOLUMES], LATER)
        assert (step.decision.action, step.decision.volumes) == (VolumeAction.CLEAR, (2,))
        assert step.status[VOLUMES] == status[VOLUMES] | {
            "state": "Done",
            "finishedAt": "2026-11-26T00:05:03Z",
            "message": "data-2 gone from every broker",
        }


def test_an_unmount_without_a_drain_starts_a_record_of_its_own():
    """The last removal's record (data-1, done) is not carried on to another one."""
    done = {
        "removed": [1],
        "state": "Done",
        "replicasLeft": 0,
        "startedAt": "2026-11-25T22:00:00Z",
        "finishedAt": "2026-11-25T22:10:00Z",
        "message": "data-1 gone from every broker",
    }
    step = removal_step(observed({0, 1}, {0, 1, 2}), done, NOW)
    assert step.status[VOLUMES] == {
        "removed": [2],
        "state": "Unmounted",
        "replicasLeft": 0,
        "startedAt": "2026-11-26T00:04:53Z",
        "message": "data-2 empty on every broker: the brokers restart without it",
    }


def test_a_drained_volume_keeps_its_record_when_unmounted():
    """Draining, then unmounted: one record, from when the drain started."""
    every = {b: {2} for b in (0, 1, 2)}
    drain = removal_step(observed({0, 1}, {0, 1, 2}, pods=(0, 1, 2)), {}, NOW)
    assert drain.decision.action is VolumeAction.DRAIN
    drained = observed({0, 1}, {0, 1, 2}, pods=(0, 1, 2), draining=every)
    unmount = removal_step(drained, drain.status[VOLUMES], LATER)
    assert unmount.decision.action is VolumeAction.UNMOUNT
    assert unmount.status[VOLUMES] == {
        "removed": [2],
        "state": "Unmounted",
        "replicasLeft": 0,
        "startedAt": "2026-11-26T00:04:53Z",
        "message": "data-2 empty on every broker: the brokers restart without it",
    }
