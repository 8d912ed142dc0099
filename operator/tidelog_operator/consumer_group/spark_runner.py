"""The Kubernetes side of a ConsumerGroup's Spark application: one :func:`step` observes
its submitter Job and driver pod, asks :mod:`.application` what to do, and does it:
submit (the objects of ``builders/spark.py`` applied, the Job created) or stop (the
Job and driver pod deleted; Kubernetes removes the executors with the driver)."""

from __future__ import annotations

import datetime
import hashlib
import json
import os
from collections.abc import Mapping
from typing import Any

import kopf
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog_operator import kube, names
from tidelog_operator.builders import spark as build
from tidelog_operator.conditions import Reason
from tidelog_operator.consumer_group.application import (
    TERMINATING,
    Observed,
    Step,
    error_summary,
    plan,
)

__all__ = ["DEFAULT_SPARK_IMAGE", "observe", "spec_digest", "step", "stop", "submit"]

DEFAULT_SPARK_IMAGE = os.environ.get("TIDELOG_SPARK_IMAGE", "tidelog-spark:0.1.0")
# The chart's ClusterRole of what spark-submit and a driver do in their namespace.
DRIVER_ROLE = os.environ.get("TIDELOG_SPARK_DRIVER_ROLE", "tidelog-spark-driver")
LOG_LINES = 400  # of a failed pod's log, searched for its error


def _job_state(job: Any) -> str | None:
    if job is None:
        return None
    if job.status.succeeded:
        return "succeeded"
    if job.status.failed:
        return "failed"
    return "active"


def _error(core: client.CoreV1Api, pod: Any) -> str:
    """What a failed pod's log says failed; its termination message when the log is
    gone."""
    meta = pod.metadata
    try:
        log = core.read_namespaced_pod_log(meta.name, meta.namespace, tail_lines=LOG_LINES)
    except ApiException:
        log = ""
    for container in pod.status.container_statuses or []:
        ended = container.state.terminated
        if ended:
            log = log or ended.message or ended.reason or f"exit code {ended.exit_code}"
    return error_summary(log)


def _driver_state(pod: Any) -> str | None:
    if pod is None:
        return None
    return TERMINATING if pod.metadata.deletion_timestamp else pod.status.phase


def _running_s(pod: Any, now: datetime.datetime) -> float:
    if pod is None or pod.status.phase != "Running" or not pod.status.start_time:
        return 0.0
    return (now - pod.status.start_time).total_seconds()


def observe(namespace: str, group: str, submission: int, now: datetime.datetime) -> Observed:
    """Submission ``submission``'s Job and driver pod."""
    if not submission:
        return Observed()
    api = kube.api()
    core, batch = client.CoreV1Api(api), client.BatchV1Api(api)
    job_name = names.spark_submitter_job(group, submission)
    job = kube.found(batch.read_namespaced_job, job_name, namespace)
    driver = kube.found(
        core.read_namespaced_pod, names.spark_driver_pod(group, submission), namespace
    )
    driver_state = _driver_state(driver)
    failed: list[Any] = []
    if driver_state == "Failed":
        failed = [driver]
    elif job is not None and job.status.failed:
        failed = core.list_namespaced_pod(namespace, label_selector=f"job-name={job_name}").items
    error = _error(core, failed[0]) if failed else ""
    return Observed(
        job=_job_state(job),
        driver=driver_state,
        error=error,
        running_s=_running_s(driver, now),
    )


def submit(body: Mapping[str, Any], group_id: str, submission: int) -> str:
    """Apply the application's account, claim and pod templates, and create the Job of
    submission ``submission`` (the one before it deleted); the driver pod's name."""
    name, namespace = body["metadata"]["name"], body["metadata"]["namespace"]
    spec = body["spec"]
    spark = spec["spark"]
    image = spark.get("image") or DEFAULT_SPARK_IMAGE
    api = kube.api()
    for obj in (
        build.service_account(name, namespace),
        build.role_binding(name, namespace, DRIVER_ROLE),
        build.state_claim(name, namespace, spark),
        build.pod_templates(name, namespace, spark, body),
    ):
        kopf.adopt(obj, owner=body)
        kube.apply(api, obj)
    arguments = build.submit_arguments(
        name,
        namespace,
        spark,
        group_id=group_id,
        bootstrap=f"{names.bootstrap_service(spec['clusterRef'])}:{names.BROKER_PORT}",
        image=image,
        submission=submission,
    )
    job = build.submitter_job(name, namespace, submission, image, arguments)
    kopf.adopt(job, owner=body)
    if submission > 1:
        previous = names.spark_submitter_job(name, submission - 1)
        kube.delete(api, "batch/v1", "Job", previous, namespace, propagation="Background")
    kube.apply(api, job)
    return names.spark_driver_pod(name, submission)


def stop(namespace: str, group: str, submission: int) -> None:
    """Delete submission ``submission``: its Job (which may not have made the driver
    yet) and its driver pod (SIGTERM: the pipeline stops between micro-batches); the
    executors go with the driver."""
    api = kube.api()
    job = names.spark_submitter_job(group, submission)
    kube.delete(api, "batch/v1", "Job", job, namespace, propagation="Background")
    kube.delete(api, "v1", "Pod", names.spark_driver_pod(group, submission), namespace)


def spec_digest(spark: Mapping[str, Any]) -> str:
    """What a submission was made of: ``spec.spark``, hashed."""
    text = json.dumps(spark, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def step(body: Mapping[str, Any], group_id: str, *, reset_waiting: bool) -> Step:
    """Observe the application of the ConsumerGroup ``body``, take the planned step,
    tell its event; the step (its ``application`` is the new status)."""
    name, namespace = body["metadata"]["name"], body["metadata"]["namespace"]
    application = dict((body.get("status") or {}).get("application") or {})
    now = datetime.datetime.now(datetime.UTC)
    seen = observe(namespace, name, application.get("submission", 0), now)
    digest = spec_digest(body["spec"]["spark"])
    changed = application.get("specDigest", digest) != digest
    planned = plan(application, seen, reset_waiting=reset_waiting, spec_changed=changed, now=now)
    if planned.action == "submit":
        planned.application["driverPod"] = submit(body, group_id, planned.application["submission"])
        planned.application["specDigest"] = digest
    elif planned.action == "stop":
        stop(namespace, name, application["submission"])
    if planned.event:
        reason, message = planned.event
        tell = kopf.warn if reason == Reason.APPLICATION_FAILED else kopf.info
        tell(body, reason=reason, message=message)
    return planned
