"""ConsumerGroup against real brokers, the operator run in-process on the test control
plane: the group's state, members and lag reach the status (and ``kubectl get``); a
reset waits while the group has members (ResetPending), is applied once they leave, and
only once per id."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer
from kubernetes import client

from kube_operator.conftest import GROUP, VERSION
from tidelog_operator import names
from tidelog_operator.consumer_group.spark_runner import spec_digest
from waiting import wait_until

pytestmark = pytest.mark.timeout(300)
HELD = "tidelog.test/held"  # a finalizer of the test's own


def group_object(kube_api, namespace: str, name: str = "readers") -> dict:
    return client.CustomObjectsApi(kube_api).get_namespaced_custom_object(
        GROUP, VERSION, namespace, "consumergroups", name
    )


def condition(obj: dict, type_: str) -> dict:
    return next((c for c in obj.get("status", {}).get("conditions", []) if c["type"] == type_), {})


def spark_group(cluster: str, **spark) -> dict:
    """The ConsumerGroup ``bars`` of topic ``ticks``, of Cluster ``cluster``, with the
    pipeline as its Spark application and ``spark`` in its ``spec.spark``."""
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "ConsumerGroup",
        "metadata": {"name": "bars"},
        "spec": {
            "clusterRef": cluster,
            "topics": ["ticks"],
            "spark": {"application": {"module": "pipeline"}, **spark},
        },
    }


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


def test_a_spark_section_is_submitted_and_submitted_again_when_its_driver_is_gone(
    run_operator, kube_api, kube_namespace, monkeypatch, tidelog_crds
):
    """The objects of a submission on a real API server (no kubelet: the submitter Job
    never runs, so its deletion stands for a driver gone with its node)."""
    monkeypatch.setenv("TIDELOG_GROUP_SYNC_INTERVAL_S", "1")
    ns = kube_namespace
    body = spark_group("events", arguments=["--trigger", "1s"])
    objects = client.CustomObjectsApi(kube_api)
    core, batch = client.CoreV1Api(kube_api), client.BatchV1Api(kube_api)
    rbac = client.RbacAuthorizationV1Api(kube_api)

    def stored() -> dict:
        return objects.get_namespaced_custom_object(GROUP, VERSION, ns, "consumergroups", "bars")

    def application() -> dict:
        return stored().get("status", {}).get("application", {})

    with run_operator("tidelog_operator.consumer_group.handlers"):
        created = objects.create_namespaced_custom_object(
            GROUP, VERSION, ns, "consumergroups", body
        )
        submitted = wait_until(
            lambda: (a := application()).get("submission") == 1 and a, "submitted"
        )
        assert submitted == {
            "submission": 1,
            "state": "Submitted",
            "restarts": 0,
            "driverPod": "bars-driver-1",
            "specDigest": spec_digest(stored()["spec"]["spark"]),  # with the CRD's defaults
        }
        job = batch.read_namespaced_job("bars-submit-1", ns)
        assert [o.uid for o in job.metadata.owner_references] == [created["metadata"]["uid"]]
        args = job.spec.template.spec.containers[0].args
        assert args[:5] == [
            "submit",
            "--master",
            "k8s://https://kubernetes.default.svc",
            "--deploy-mode",
            "cluster",
        ]
        assert "spark.kubernetes.driverEnv.TIDELOG_BOOTSTRAP_SERVERS=events-bootstrap:9092" in args
        assert args[-3:] == ["local:///opt/tidelog/apps/pipeline.py", "--trigger", "1s"]
        assert core.read_namespaced_service_account("bars-spark", ns).metadata.owner_references
        binding = rbac.read_namespaced_role_binding("bars-spark", ns)
        assert binding.role_ref.name == "tidelog-spark-driver"
        claim = core.read_namespaced_persistent_volume_claim("bars-spark-state", ns)
        assert claim.spec.resources.requests["storage"] == "1Gi"
        templates = core.read_namespaced_config_map("bars-spark-templates", ns)
        assert set(templates.data) == {"driver.yaml", "executor.yaml"}

        batch.delete_namespaced_job("bars-submit-1", ns, propagation_policy="Background")
        again = wait_until(lambda: (a := application()).get("submission") == 2 and a, "again")
        assert again["restarts"] == 1 and again["driverPod"] == "bars-driver-2"
        assert batch.read_namespaced_job("bars-submit-2", ns).spec.backoff_limit == 0
        events = core.list_namespaced_event(ns, field_selector="involvedObject.name=bars").items
        messages = [e.message for e in events if e.reason == "ApplicationSubmitted"]
        assert "submission 2: the driver pod of submission 1 is gone" in messages

        # a new spec: the application is submitted anew with it
        arguments = {"spark": {"arguments": ["--trigger", "2s"]}}
        objects.patch_namespaced_custom_object(
            GROUP, VERSION, ns, "consumergroups", "bars", {"spec": arguments}
        )
        anew = wait_until(lambda: (a := application()).get("submission") == 3 and a, "anew")
        assert anew["restarts"] == 2
        job = batch.read_namespaced_job("bars-submit-3", ns)
        assert job.spec.template.spec.containers[0].args[-1] == "2s"

        objects.patch_namespaced_custom_object(
            GROUP, VERSION, ns, "consumergroups", "bars", {"spec": {"spark": None}}
        )
        wait_until(lambda: not application(), "the application gone from the status")


def test_a_driver_pod_is_followed_as_it_runs_and_goes_and_a_reset_restarts_at_once(
    brokers, run_operator, kube_api, kube_namespace, monkeypatch, tidelog_crds
):
    """With the periodic sync an hour away, only the driver pod's own changes (the
    operator watches Spark's driver pods) and the spec's can move the application: its
    driver seen Running, then gone (submitted again), then a reset (stopped, and once
    the driver is gone the reset applied and the application started again), then a
    reset of a failed application (applied and started in one pass). No kubelet: the
    test makes and changes the driver pods as spark-submit and a kubelet would."""
    monkeypatch.setenv("TIDELOG_GROUP_SYNC_INTERVAL_S", "3600")
    brokers.create_topic("ticks", partitions=2, replication_factor=2)
    ns = kube_namespace
    body = spark_group("local")
    objects = client.CustomObjectsApi(kube_api)
    core, batch = client.CoreV1Api(kube_api), client.BatchV1Api(kube_api)

    def application() -> dict:
        return group_object(kube_api, ns, "bars").get("status", {}).get("application", {})

    def driver_made(submission: int, finalizers: tuple[str, ...] = ()) -> None:
        """What submission ``submission``'s spark-submit does: it makes the driver pod,
        and its Job is done (here: deleted). ``finalizers`` hold the pod once deleted,
        as a kubelet does while its containers stop."""
        labels = {**names.consumer_group_labels("bars"), names.SPARK_ROLE_LABEL: "driver"}
        pod = {
            "metadata": {
                "name": f"bars-driver-{submission}",
                "labels": labels,
                "finalizers": list(finalizers),
            },
            "spec": {"containers": [{"name": "spark-kubernetes-driver", "image": "spark"}]},
        }
        core.create_namespaced_pod(ns, pod)
        job = f"bars-submit-{submission}"
        batch.delete_namespaced_job(job, ns, propagation_policy="Background")

    producer = Producer({"bootstrap.servers": brokers.bootstrap})

    def passes_after(pod: str, records: int) -> None:
        """A pass of the group that began after now: one more record in ``ticks``, a
        change of ``pod`` to bring a pass, and the status's lag counting ``records``
        (a pass reads the lag after the pods)."""
        producer.produce("ticks", b"tick", partition=0)
        assert producer.flush(30) == 0
        marked = {"metadata": {"annotations": {"tidelog.test/records": str(records)}}}
        core.patch_namespaced_pod(pod, ns, marked)
        wait_until(
            lambda: group_object(kube_api, ns, "bars")["status"].get("totalLag") == records,
            f"a pass reporting {records} records in ticks",
        )

    def reasons() -> list[str]:
        found = core.list_namespaced_event(ns, field_selector="involvedObject.name=bars").items
        found.sort(key=lambda e: e.event_time or e.metadata.creation_timestamp)
        return [f"{e.reason}: {e.message}" for e in found]

    with run_operator("tidelog_operator.consumer_group.handlers"):
        objects.create_namespaced_custom_object(GROUP, VERSION, ns, "consumergroups", body)
        wait_until(lambda: application().get("submission") == 1, "submitted on creation")
        driver_made(1, finalizers=(HELD,))
        running = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        core.patch_namespaced_pod_status("bars-driver-1", ns, {"status": running})
        wait_until(lambda: application().get("state") == "Running", "the driver seen running")

        # deleted, its driver stops with SIGTERM and ends Failed before the pod goes:
        # no failure, it is submitted again once gone
        core.delete_namespaced_pod("bars-driver-1", ns)
        core.patch_namespaced_pod_status("bars-driver-1", ns, {"status": {"phase": "Failed"}})
        # A pass must see the pod deleted and Failed before it goes. Passes of a group
        # run one at a time, so the pass that reports the second record began after the
        # one that reported the first had ended, itself after the Failed phase was set.
        passes_after("bars-driver-1", 1)
        passes_after("bars-driver-1", 2)
        core.patch_namespaced_pod("bars-driver-1", ns, {"metadata": {"finalizers": None}})
        again = wait_until(lambda: (a := application()).get("submission") == 2 and a, "again")
        assert again["state"] == "Submitted" and again["restarts"] == 1
        assert not again.get("failures") and "lastError" not in again
        assert not any("ApplicationFailed" in r for r in reasons())
        assert "ApplicationSubmitted: submission 2: the driver pod of submission 1 is gone" in (
            reasons()
        )

        driver_made(2)
        reset = {"id": "replay-1", "to": "earliest"}
        objects.patch_namespaced_custom_object(
            GROUP, VERSION, ns, "consumergroups", "bars", {"spec": {"reset": reset}}
        )
        anew = wait_until(lambda: (a := application()).get("submission") == 3 and a, "anew")
        assert anew["state"] == "Submitted" and anew["restarts"] == 2
        assert group_object(kube_api, ns, "bars")["status"]["lastReset"]["id"] == "replay-1"
        told = reasons()
        stopping = told.index(
            "ApplicationStopping: stopping the application to apply the offset reset"
        )
        applied = told.index("ResetApplied: reset replay-1 applied to 2 partitions")
        started = told.index("ApplicationSubmitted: submission 3: starting the application")
        assert stopping < applied < started

        # a failed driver waits for its back-off (a pass of the sync); a reset meanwhile
        # is applied at once, and the application starts in the same pass
        driver_made(3)
        core.patch_namespaced_pod_status("bars-driver-3", ns, {"status": {"phase": "Failed"}})
        wait_until(lambda: application().get("state") == "Failed", "the driver seen failed")
        reset = {"id": "replay-2", "to": "latest"}
        objects.patch_namespaced_custom_object(
            GROUP, VERSION, ns, "consumergroups", "bars", {"spec": {"reset": reset}}
        )
        wait_until(lambda: application().get("submission") == 4, "started after the reset")
        told = reasons()
        applied = told.index("ResetApplied: reset replay-2 applied to 2 partitions")
        assert told[applied + 1] == "ApplicationSubmitted: submission 4: starting the application"
