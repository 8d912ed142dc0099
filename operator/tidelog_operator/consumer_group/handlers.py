"""kopf handlers of ConsumerGroup: on create, spec change, resume, every
``SYNC_INTERVAL_S`` and whenever one of its Spark driver pods is made, changes or goes,
one step of its Spark application (``spark_runner.py``), if it has one, then one pass of
``sync.py`` over the group, the outcome written to the status (and an event when a reset
was applied). An application stopped for a reset starts again in the pass that applies
it. One pass of a group at a time (``per_object.py``): two would each submit its next
Spark application."""

from __future__ import annotations

import os
from typing import Any

import kopf

from tidelog_operator import conditions, kube
from tidelog_operator.cluster_client import cluster_admin
from tidelog_operator.conditions import Reason
from tidelog_operator.consumer_group import spark_runner
from tidelog_operator.consumer_group.application import STOPPED
from tidelog_operator.consumer_group.sync import GroupPass, reset_waiting, sync_group
from tidelog_operator.names import CONSUMER_GROUP_LABEL, GROUP, VERSION
from tidelog_operator.per_object import one_at_a_time

__all__ = ["SYNC_INTERVAL_S"]

CONSUMER_GROUPS = kopf.Resource(GROUP, VERSION, "consumergroups")

# How often a group's state and lag are refreshed, seconds.
SYNC_INTERVAL_S = float(os.environ.get("TIDELOG_GROUP_SYNC_INTERVAL_S", "15"))


@kopf.on.resume(GROUP, VERSION, "consumergroups")
@kopf.on.create(GROUP, VERSION, "consumergroups")
@kopf.on.update(GROUP, VERSION, "consumergroups", field="spec")
@kopf.timer(
    GROUP, VERSION, "consumergroups", interval=SYNC_INTERVAL_S, initial_delay=SYNC_INTERVAL_S
)
@one_at_a_time
def sync_consumer_group(
    name: str, namespace: str, spec: Any, status: Any, meta: Any, body: Any, **_: Any
) -> None:
    group, status = spec.get("groupId") or name, dict(status or {})
    application = None
    if spec.get("spark"):
        waiting = reset_waiting(dict(spec), status)
        application = spark_runner.step(body, group, reset_waiting=waiting).application
    elif status.get("application"):  # the spark section was removed: stop what runs
        spark_runner.stop(namespace, name, status["application"].get("submission", 0))
    try:
        admin = cluster_admin(namespace, spec["clusterRef"])
    except LookupError as error:
        found = GroupPass(marks=[(conditions.READY, False, Reason.CLUSTER_NOT_FOUND, str(error))])
    else:
        stopped = application is None or application["state"] == STOPPED
        found = sync_group(admin, group, dict(spec), status, application_stopped=stopped)
    if found.applied:
        kopf.info(body, reason=Reason.RESET_APPLIED, message=found.applied)
        if application is not None:  # it stopped for this reset: it starts again now
            current = {**body, "status": {**status, "application": application}}
            application = spark_runner.step(current, group, reset_waiting=False).application
    found.fields["application"] = application
    generation = meta.get("generation")
    kube.patch_status(
        kube.api(), "consumergroups", namespace, name, lambda s: found.status(s, generation)
    )


@kopf.on.event("v1", "pods", labels={CONSUMER_GROUP_LABEL: kopf.PRESENT})
def spark_driver_changed(event: Any, namespace: str, labels: Any, **_: Any) -> None:
    """A driver pod (the only pods ``settings.py`` watches) was made, changed or went:
    its group's pass now, not at its next sync. The pods listed when the operator starts
    (``type`` None) are the resume handler's."""
    if event["type"] is not None:
        group = labels[CONSUMER_GROUP_LABEL]
        sync_consumer_group(resource=CONSUMER_GROUPS, namespace=namespace, name=group)
