"""kopf handler of ConsumerGroup: on create, spec change, resume and every
``SYNC_INTERVAL_S``, one pass of ``sync.py`` over the group, its outcome written to the
status (and an event when a reset was applied)."""

from __future__ import annotations

import os
from typing import Any

import kopf

from tidelog_operator import conditions, kube
from tidelog_operator.cluster_client import cluster_admin
from tidelog_operator.conditions import Reason
from tidelog_operator.consumer_group.sync import GroupPass, sync_group
from tidelog_operator.names import GROUP, VERSION

__all__ = ["SYNC_INTERVAL_S"]

# How often a group's state and lag are refreshed, seconds.
SYNC_INTERVAL_S = float(os.environ.get("TIDELOG_GROUP_SYNC_INTERVAL_S", "15"))


@kopf.on.resume(GROUP, VERSION, "consumergroups")
@kopf.on.create(GROUP, VERSION, "consumergroups")
@kopf.on.update(GROUP, VERSION, "consumergroups", field="spec")
@kopf.timer(
    GROUP, VERSION, "consumergroups", interval=SYNC_INTERVAL_S, initial_delay=SYNC_INTERVAL_S
)
def sync_consumer_group(
    name: str, namespace: str, spec: Any, status: Any, meta: Any, body: Any, **_: Any
) -> None:
    try:
        admin = cluster_admin(namespace, spec["clusterRef"])
    except LookupError as error:
        found = GroupPass(marks=[(conditions.READY, False, Reason.CLUSTER_NOT_FOUND, str(error))])
    else:
        found = sync_group(admin, spec.get("groupId") or name, dict(spec), dict(status or {}))
    if found.applied:
        kopf.info(body, reason="ResetApplied", message=found.applied)
    generation = meta.get("generation")
    kube.patch_status(
        kube.api(), "consumergroups", namespace, name, lambda s: found.status(s, generation)
    )
