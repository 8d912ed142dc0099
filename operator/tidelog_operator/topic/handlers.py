"""kopf handlers of Topic: on create, spec change, resume and every ``SYNC_INTERVAL_S``
(which reverts drift), the topic is made as its spec says (``plan.py``), one sync of a
Topic at a time (``per_object.py``); on deletion
(kopf's finalizer) the topic is deleted. The brokers are those of the Cluster named by
``spec.clusterRef`` (``cluster_client.py``).
"""

from __future__ import annotations

import datetime
import os
from typing import Any

import kopf

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.planner import PlanError, plan_replication_factor
from tidelog.admin.topics import (
    AlterConfigOp,
    ConfigResourceType,
    ConfigSource,
    NewPartitions,
    NewTopic,
    OpType,
)
from tidelog.cli.topic_tables import kafka_uuid
from tidelog.protocol.errors import ErrorCode, ProtocolError
from tidelog_operator import conditions, kube
from tidelog_operator.cluster_client import cluster_admin
from tidelog_operator.conditions import Reason
from tidelog_operator.names import GROUP, VERSION
from tidelog_operator.per_object import one_at_a_time
from tidelog_operator.topic.plan import Actual, Desired, TopicPlan, plan_topic

__all__ = ["SYNC_INTERVAL_S"]

# How often a Topic is checked against its topic (drift reverted), seconds.
SYNC_INTERVAL_S = float(os.environ.get("TIDELOG_TOPIC_SYNC_INTERVAL_S", "30"))


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _set(status: dict, type_: str, holds: bool, reason: str, message: str, generation) -> dict:
    found = conditions.set_condition(
        status.get("conditions", []),
        type_,
        holds,
        reason,
        message,
        generation=generation,
        now=_now(),
    )
    return {**status, "conditions": found, "observedGeneration": generation}


def progressing(health: dict[str, Any]) -> tuple[bool, str, str]:
    """The Topic's Progressing condition from its health: True with ``Reassigning``
    while its partitions move (a replication-factor change), else False with ``Idle``."""
    moving = health.get("reassignment")
    if moving:
        return (
            True,
            Reason.REASSIGNING,
            f"{moving['partitionsMoving']} of {moving['partitionsTotal']} partitions moving",
        )
    return False, Reason.IDLE, "no partition moving"


def _report(
    namespace: str, name: str, generation, holds: bool, reason: str, message: str, **fields
) -> None:
    def change(status: dict) -> dict:
        merged = {k: v for k, v in {**status, **fields}.items() if v is not None}
        if "reassignment" in fields:  # the health was read
            merged = _set(merged, conditions.PROGRESSING, *progressing(fields), generation)
        return _set(merged, conditions.READY, holds, reason, message, generation)

    kube.patch_status(kube.api(), "topics", namespace, name, change)


def _claim(namespace: str, name: str, topic: str | None) -> None:
    """Record (or, with None, drop) the topic this Topic is creating."""

    def change(status: dict) -> dict:
        claimed = {**status, "topicName": topic}
        return {k: v for k, v in claimed.items() if v is not None}

    kube.patch_status(kube.api(), "topics", namespace, name, change)


def _topic_name(name: str, spec: Any) -> str:
    return spec.get("topicName") or name


def _actual(admin: AdminClient, topic: str) -> Actual | None:
    try:
        description = admin.describe_topics([topic])[topic]
    except AdminError as error:
        if error.code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            return None
        raise
    configs = admin.describe_configs(ConfigResourceType.TOPIC, [topic])[topic]
    overrides = {
        k: e.value for k, e in configs.items() if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    }
    return Actual(
        topic_id=None if description.topic_id is None else kafka_uuid(description.topic_id),
        partitions=len(description.partitions),
        replication_factor=len(description.partitions[0].replicas) if description.partitions else 0,
        overrides=overrides,
    )


def _desired(name: str, spec: Any, status: Any) -> Desired:
    return Desired(
        name=_topic_name(name, spec),
        partitions=spec["partitions"],
        replication_factor=spec["replicationFactor"],
        config={k: str(v) for k, v in (spec.get("config") or {}).items()},
        owned_id=(status or {}).get("topicId"),
        claimed=(status or {}).get("topicName") == _topic_name(name, spec),
    )


def _carry_out(admin: AdminClient, desired: Desired, plan: TopicPlan) -> None:
    topic = desired.name
    if plan.create:
        new = NewTopic(
            topic, desired.partitions, desired.replication_factor, configs=desired.config
        )
        error = admin.create_topics([new])[topic]
        if error is not None:
            raise error
        return
    if plan.grow_to:
        error = admin.create_partitions({topic: NewPartitions(plan.grow_to)})[topic]
        if error is not None:
            raise error
    changes = [AlterConfigOp(k, OpType.SET, v) for k, v in plan.set_configs.items()]
    changes += [AlterConfigOp(k, OpType.DELETE) for k in plan.delete_configs]
    if changes:
        error = admin.incremental_alter_configs(ConfigResourceType.TOPIC, {topic: changes})[topic]
        if error is not None:
            raise error
    if plan.replication_factor and not admin.list_reassignments():
        state = admin.cluster_state([topic])
        moves = plan_replication_factor(state, topic, plan.replication_factor).moves
        failed = [e for e in admin.alter_partition_reassignments(moves).values() if e is not None]
        if failed:
            raise failed[0]


def _health(admin: AdminClient, topic: str) -> dict[str, Any]:
    description = admin.describe_topics([topic])[topic]
    leaders: dict[str, int] = {}
    for p in description.partitions:
        if p.leader is not None:
            leaders[str(p.leader)] = leaders.get(str(p.leader), 0) + 1
    moving = [tp for tp in admin.list_reassignments() if tp.topic == topic]
    return {
        "topicName": topic,
        "topicId": None if description.topic_id is None else kafka_uuid(description.topic_id),
        "partitions": len(description.partitions),
        "replicationFactor": len(description.partitions[0].replicas)
        if description.partitions
        else 0,
        "leaders": leaders,
        "underReplicatedPartitions": sum(
            len(p.isr) < len(p.replicas) for p in description.partitions
        ),
        "reassignment": {
            "partitionsMoving": len(moving),
            "partitionsTotal": len(description.partitions),
        }
        if moving
        else None,
    }


@kopf.on.resume(GROUP, VERSION, "topics")
@kopf.on.create(GROUP, VERSION, "topics")
@kopf.on.update(GROUP, VERSION, "topics", field="spec")
@kopf.timer(GROUP, VERSION, "topics", interval=SYNC_INTERVAL_S, initial_delay=SYNC_INTERVAL_S)
@one_at_a_time
def sync_topic(name: str, namespace: str, spec: Any, status: Any, meta: Any, **_: Any) -> None:
    generation = meta.get("generation")
    try:
        admin = cluster_admin(namespace, spec["clusterRef"])
    except LookupError as error:
        _report(namespace, name, generation, False, Reason.CLUSTER_NOT_FOUND, str(error))
        raise kopf.TemporaryError(str(error), delay=15) from None
    desired = _desired(name, spec, status)
    try:
        plan = plan_topic(desired, _actual(admin, desired.name))
        if plan.create:  # claimed first: a creation whose answer is lost stays ours
            _claim(namespace, name, desired.name)
        if plan.refused is None or plan.refused[0] != Reason.NOT_OWNED:
            _carry_out(admin, desired, plan)
            health = _health(admin, desired.name)
    except PlanError as error:  # the brokers cannot hold the factor: no retry until a change
        message = f"{desired.name}: replication factor {desired.replication_factor}: {error}"
        _report(namespace, name, generation, False, Reason.REPLICATION_FACTOR_REFUSED, message)
        return
    except AdminError as error:
        if error.code == ErrorCode.TOPIC_ALREADY_EXISTS and not desired.claimed:
            # Another tool was quicker. A claim that was there before this attempt stays:
            # an earlier creation of ours, its answer lost, may be the one that made it.
            _claim(namespace, name, None)
        _report(
            namespace, name, generation, False, Reason.CREATE_FAILED, f"{desired.name}: {error}"
        )
        raise kopf.TemporaryError(str(error), delay=30) from None
    except (OSError, ProtocolError) as error:
        _report(
            namespace, name, generation, False, Reason.CREATE_FAILED, f"{desired.name}: {error}"
        )
        raise kopf.TemporaryError(str(error), delay=30) from None
    if plan.refused is not None:
        reason, message = plan.refused
        fields = {} if reason == Reason.NOT_OWNED else health
        _report(namespace, name, generation, False, reason, message, **fields)
        return
    _report(
        namespace,
        name,
        generation,
        True,
        Reason.SYNCED,
        f"topic {desired.name} as specified",
        **health,
    )


@kopf.on.delete(GROUP, VERSION, "topics")
def delete_topic(name: str, namespace: str, spec: Any, status: Any, **_: Any) -> None:
    """Delete the topic this Topic created (none when the Cluster is gone)."""
    if not (status or {}).get("topicId"):
        return
    try:
        admin = cluster_admin(namespace, spec["clusterRef"])
    except LookupError:
        return  # the Cluster, and its topics, are gone
    topic = _topic_name(name, spec)
    error = admin.delete_topics([topic]).get(topic)
    if error is not None and error.code != ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
        raise kopf.TemporaryError(f"deleting {topic}: {error}", delay=15)
