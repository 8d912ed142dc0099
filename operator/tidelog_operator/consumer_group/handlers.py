"""kopf handler of ConsumerGroup: on create, spec change, resume and every
``SYNC_INTERVAL_S``, one step of its Spark application (``spark_runner.py``), if it has
one, then one pass of ``sync.py`` over the group, the outcome written to the status
(and an event when a reset was applied). One pass of a group at a time
(``per_object.py``): two would each submit its next Spark application."""

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
from tidelog_operator.names import GROUP, VERSION
from tidelog_operator.per_object import one_at_a_time

__all__ = ["SYNC_INTERVAL_S"]

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
    found.fields["application"] = application
    if found.applied:
        kopf.info(body, reason="ResetApplied", message=found.applied)
    generation = meta.get("generation")
    kube.patch_status(
        kube.api(), "consumergroups", namespace, name, lambda s: found.status(s, generation)
    )
