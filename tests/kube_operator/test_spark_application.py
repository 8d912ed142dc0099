"""A ConsumerGroup's Spark application, its pure parts: the step the operator takes for
what it observed (submit, follow, restart after a back-off, stop for a reset), the line
of a failed pod's log that says why, and the objects of the submission. The whole of it
runs on kind in e2e/test_operator.py."""

from __future__ import annotations

import datetime

import pytest
import yaml

from tidelog_operator.builders import spark as build
from tidelog_operator.consumer_group.application import (
    Observed,
    backoff_s,
    error_summary,
    plan,
)

NOW = datetime.datetime(2026, 11, 25, 12, 0, 0, tzinfo=datetime.UTC)
SPARK = {"application": {"module": "pipeline"}, "arguments": ["--trigger", "5 seconds"]}
OWNER = {
    "apiVersion": "tidelog.dev/v1alpha1",
    "kind": "ConsumerGroup",
    "metadata": {"name": "bars", "uid": "0b1c"},
}


def step(app: dict, seen: Observed, reset_waiting: bool = False, now=NOW):
    return plan(app, seen, reset_waiting=reset_waiting, now=now)


def test_a_new_application_is_submitted_then_followed():
    first = step({}, Observed())
    assert first.action == "submit"
    assert first.application == {"submission": 1, "state": "Submitted", "restarts": 0}
    assert first.event[0] == "ApplicationSubmitted"
    app = first.application
    assert step(app, Observed(job="active")).application["state"] == "Submitted"
    assert step(app, Observed(job="succeeded", driver="Pending")).application["state"] == (
        "Submitted"
    )
    running = step(app, Observed(job="succeeded", driver="Running"))
    assert (running.action, running.application["state"]) == (None, "Running")
    done = step(app, Observed(job="succeeded", driver="Succeeded"))
    assert (done.action, done.application["state"]) == (None, "Completed")
    gone_after_completion = step(done.application, Observed(job="succeeded"))
    assert gone_after_completion.action is None


def test_a_driver_gone_is_submitted_again_at_once():
    app = {"submission": 1, "state": "Running", "restarts": 0}
    again = step(app, Observed(job="succeeded", driver=None))
    assert again.action == "submit"
    assert again.application["submission"] == 2 and again.application["restarts"] == 1
    assert "the driver pod of submission 1 is gone" in again.event[1]


def test_a_driver_being_deleted_is_no_failure_whatever_phase_it_ends_in():
    app = {"submission": 1, "state": "Running", "restarts": 0}
    deleted = Observed(job="succeeded", driver="Terminating")
    waiting = step(app, deleted)
    assert (waiting.action, waiting.application, waiting.event) == (None, app, None)
    # a reset waits until it is gone: it could still commit offsets
    assert step(app, deleted, reset_waiting=True).action == "stop"


def test_a_failure_is_told_once_and_restarted_after_a_growing_back_off():
    app = {"submission": 1, "state": "Running", "restarts": 0}
    seen = Observed(job="succeeded", driver="Failed", error="ValueError: bad tick")
    failed = step(app, seen)
    assert failed.action is None and failed.application["state"] == "Failed"
    assert failed.application["lastError"] == "the driver failed: ValueError: bad tick"
    assert failed.event == (
        "ApplicationFailed",
        "the driver failed: ValueError: bad tick (restart in 10 s)",
    )
    app = failed.application
    waiting = step(app, seen, now=NOW + datetime.timedelta(seconds=9))
    assert waiting.action is None and waiting.event is None
    restarted = step(app, seen, now=NOW + datetime.timedelta(seconds=10))
    assert restarted.action == "submit" and restarted.application["submission"] == 2
    again = step(restarted.application, Observed(job="failed", error="Exception in thread x"))
    assert again.application["failures"] == 2
    assert again.application["lastError"] == "spark-submit failed: Exception in thread x"
    assert again.event[1].endswith("(restart in 20 s)")
    assert [backoff_s(n) for n in (1, 2, 3, 6, 20)] == [10, 20, 40, 300, 300]


def test_failures_are_forgotten_once_a_driver_has_run_a_while():
    app = {"submission": 3, "state": "Running", "restarts": 2, "failures": 2}
    short = step(app, Observed(job="succeeded", driver="Running", running_s=60))
    assert short.application["failures"] == 2
    stable = step(app, Observed(job="succeeded", driver="Running", running_s=600))
    assert stable.application["failures"] == 0


def test_a_reset_stops_the_application_and_it_starts_once_applied():
    app = {"submission": 1, "state": "Running", "restarts": 0}
    stopping = step(app, Observed(job="succeeded", driver="Running"), reset_waiting=True)
    assert (stopping.action, stopping.application["state"]) == ("stop", "Stopping")
    assert stopping.event[0] == "ApplicationStopping"
    terminating = Observed(job="succeeded", driver="Running")
    still = step(stopping.application, terminating, reset_waiting=True)
    assert (still.action, still.application["state"], still.event) == ("stop", "Stopping", None)
    submitting = step(app, Observed(job="active"), reset_waiting=True)
    assert (submitting.action, submitting.application["state"]) == ("stop", "Stopping")
    stopped = step(stopping.application, Observed(job="succeeded"), reset_waiting=True)
    assert (stopped.action, stopped.application["state"]) == (None, "Stopped")
    started = step(stopped.application, Observed(job="succeeded"))
    assert started.action == "submit" and started.application["submission"] == 2


def test_a_new_spec_stops_the_application_and_submits_it_a_failed_one_at_once():
    app = {"submission": 1, "state": "Running", "restarts": 0}
    running = Observed(job="succeeded", driver="Running")
    stopping = plan(app, running, reset_waiting=False, spec_changed=True, now=NOW)
    assert (stopping.action, stopping.application["state"]) == ("stop", "Stopping")
    assert stopping.event[1] == "stopping the application to start it with its new spec"
    gone = plan(
        stopping.application,
        Observed(job="succeeded"),
        reset_waiting=False,
        spec_changed=True,
        now=NOW,
    )
    assert gone.action == "submit" and gone.application["submission"] == 2
    failed = {**app, "state": "Failed", "failures": 4, "failedAt": "2026-11-25T12:00:00Z"}
    fixed = plan(failed, Observed(job="failed"), reset_waiting=False, spec_changed=True, now=NOW)
    assert fixed.action == "submit"  # no back-off: the user changed what failed


def test_the_error_is_the_line_that_names_it_with_its_deepest_cause():
    java = (
        'Exception in thread "main" io.fabric8.KubernetesClientException: forbidden\n'
        "\tat io.fabric8.Client.patch(Client.java:12)\n"
        "Caused by: java.io.IOException: refused\n"
        "\t... 12 more\n"
        "26/11/25 09:56:16 INFO ShutdownHookManager: Shutdown hook called\n"
    )
    assert error_summary(java) == (
        'Exception in thread "main" io.fabric8.KubernetesClientException: forbidden'
        " ... caused by java.io.IOException: refused"
    )
    python = (
        "Traceback (most recent call last):\n"
        '  File "/opt/tidelog/apps/pipeline.py", line 3, in <module>\n'
        "py4j.protocol.Py4JJavaError: An error occurred while calling o191.start.\n"
        ": java.io.IOException: mkdir of file:/state/checkpoint failed\n"
    )
    assert error_summary(python) == (
        "py4j.protocol.Py4JJavaError: An error occurred while calling o191.start."
        " ... caused by java.io.IOException: mkdir of file:/state/checkpoint failed"
    )
    context = (
        "py4j.protocol.Py4JJavaError: An error occurred while calling"
        " None.org.apache.spark.api.java.JavaSparkContext.\n"
        ": org.apache.spark.SparkException: Failed to start the driver\n"
        "\tat org.apache.spark.SparkContext.<init>(SparkContext.scala:622)\n"
        "Caused by: java.net.BindException: Cannot assign requested address\n"
        "\t... 15 more\n"
    )
    assert error_summary(context).endswith(
        "JavaSparkContext. ... caused by java.net.BindException: Cannot assign requested address"
    )
    logged = "2026-11-25 10:00:00,000 ERROR tidelog_spark.pipeline: the query failed: x\n"
    assert error_summary(logged) == logged.strip()
    assert error_summary("just this\n\n") == "just this"
    assert error_summary("") == ""


def conf_of(arguments: list[str]) -> dict[str, str]:
    pairs = [arguments[i + 1] for i, a in enumerate(arguments) if a == "--conf"]
    return dict(p.split("=", 1) for p in pairs)


def test_spark_submit_runs_in_cluster_mode_with_the_groups_names():
    arguments = build.submit_arguments(
        "bars",
        "prod",
        SPARK,
        group_id="bars-v2",
        bootstrap="events-bootstrap:9092",
        image="tidelog-spark:0.1.0",
        submission=3,
    )
    assert arguments[:7] == [
        "submit",
        "--master",
        "k8s://https://kubernetes.default.svc",
        "--deploy-mode",
        "cluster",
        "--name",
        "bars",
    ]
    assert arguments[-3:] == ["local:///opt/tidelog/apps/pipeline.py", "--trigger", "5 seconds"]
    conf = conf_of(arguments)
    assert conf["spark.kubernetes.driver.pod.name"] == "bars-driver-3"
    assert conf["spark.kubernetes.submission.waitAppCompletion"] == "false"
    assert conf["spark.kubernetes.authenticate.driver.serviceAccountName"] == "bars-spark"
    assert conf["spark.kubernetes.driverEnv.TIDELOG_GROUP_ID"] == "bars-v2"
    assert conf["spark.kubernetes.driverEnv.TIDELOG_BOOTSTRAP_SERVERS"] == "events-bootstrap:9092"
    assert conf["spark.kubernetes.driverEnv.TIDELOG_STATE_DIR"] == build.STATE_DIR
    for role in ("driver", "executor"):
        volume = f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.state"
        assert conf[f"{volume}.options.claimName"] == "bars-spark-state"
        assert conf[f"{volume}.mount.path"] == build.STATE_DIR
        assert conf[f"spark.kubernetes.{role}.label.tidelog.dev/consumer-group"] == "bars"
    assert (conf["spark.executor.instances"], conf["spark.driver.memory"]) == ("1", "512m")


def test_the_users_conf_and_resources_win_and_a_user_file_is_mounted():
    spark = {
        "application": {"configMap": {"name": "my-job", "key": "job.py"}},
        "executor": {"instances": 2, "memory": "1g", "cpuRequest": "500m"},
        "conf": {"spark.executor.memory": "2g", "spark.sql.shuffle.partitions": "8"},
    }
    arguments = build.submit_arguments(
        "j", "prod", spark, group_id="j", bootstrap="b:9092", image="i", submission=1
    )
    conf = conf_of(arguments)
    assert conf["spark.executor.memory"] == "2g"  # spec.spark.conf over the resources
    assert conf["spark.executor.instances"] == "2"
    assert conf["spark.kubernetes.executor.request.cores"] == "500m"
    assert conf["spark.sql.shuffle.partitions"] == "8"
    assert arguments[-1] == "local:///opt/tidelog/user-app/job.py"
    templates = build.pod_templates("j", "prod", spark, OWNER)["data"]
    driver = yaml.safe_load(templates["driver.yaml"])
    assert driver["spec"]["volumes"] == [{"name": "user-app", "configMap": {"name": "my-job"}}]
    (container,) = driver["spec"]["containers"]
    assert container["volumeMounts"] == [{"name": "user-app", "mountPath": "/opt/tidelog/user-app"}]


def test_driver_owned_by_the_group_and_executors_on_its_node():
    templates = build.pod_templates("bars", "prod", SPARK, OWNER)["data"]
    driver = yaml.safe_load(templates["driver.yaml"])
    assert driver["metadata"]["ownerReferences"] == [
        {
            "apiVersion": "tidelog.dev/v1alpha1",
            "kind": "ConsumerGroup",
            "name": "bars",
            "uid": "0b1c",
        }
    ]
    assert driver["spec"]["securityContext"]["fsGroup"] == 1001
    executor = yaml.safe_load(templates["executor.yaml"])
    (term,) = executor["spec"]["affinity"]["podAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"
    ]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchLabels"]["spark-role"] == "driver"
    assert term["labelSelector"]["matchLabels"]["tidelog.dev/consumer-group"] == "bars"


@pytest.mark.parametrize(
    ("checkpoint", "class_"), [({}, None), ({"size": "5Gi", "storageClass": "fast"}, "fast")]
)
def test_the_checkpoint_claim(checkpoint, class_):
    claim = build.state_claim("bars", "prod", {**SPARK, "checkpoint": checkpoint})
    assert claim["metadata"]["name"] == "bars-spark-state"
    assert claim["spec"].get("storageClassName") == class_
    assert claim["spec"]["resources"]["requests"]["storage"] == checkpoint.get("size", "1Gi")


def test_the_submitter_job_submits_once_with_the_templates():
    job = build.submitter_job("bars", "prod", 2, "tidelog-spark:0.1.0", ["submit", "x"])
    assert job["metadata"]["name"] == "bars-submit-2"
    assert job["spec"]["backoffLimit"] == 0
    pod = job["spec"]["template"]["spec"]
    assert pod["serviceAccountName"] == "bars-spark" and pod["restartPolicy"] == "Never"
    assert pod["volumes"][0]["configMap"]["name"] == "bars-spark-templates"
    (container,) = pod["containers"]
    assert container["args"] == ["submit", "x"]
    assert container["volumeMounts"][0]["mountPath"] == "/etc/tidelog-spark"
