"""What a Topic needs done: its spec set against the topic as the cluster has it (a
pure function; ``handlers.py`` carries it out through ``tidelog.admin``).

Kubernetes is the source of truth: a missing topic is created; partitions grow to the
spec, never shrink (a spec below what the topic has is refused, whether the spec shrank
or another tool added partitions); topic configs are set to the spec's, and overrides
the spec does not name are deleted (drift made with other tools is reverted); a
different replication factor becomes a planned reassignment. A topic of that name that
this Topic did not create is refused: ours is the one whose id the status records, or,
before an id is recorded, the one the status claims (``topicName``, written just before
the creation, so that a creation whose answer was lost is still ours).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tidelog_operator.conditions import Reason

__all__ = ["Actual", "Desired", "TopicPlan", "plan_topic"]


@dataclass(frozen=True)
class Desired:
    name: str
    partitions: int
    replication_factor: int
    config: Mapping[str, str]
    owned_id: str | None  # the topic id this Topic created, from its status
    claimed: bool = False  # the status names this topic, created by this Topic


@dataclass(frozen=True)
class Actual:
    topic_id: str | None
    partitions: int
    replication_factor: int
    overrides: Mapping[str, str]  # the topic's dynamic configs


@dataclass(frozen=True)
class TopicPlan:
    create: bool = False
    grow_to: int | None = None
    set_configs: dict[str, str] = field(default_factory=dict)
    delete_configs: tuple[str, ...] = ()
    replication_factor: int | None = None  # reassign to this factor
    refused: tuple[str, str] | None = None  # (reason, message)

    @property
    def nothing_to_do(self) -> bool:
        return not (
            self.create
            or self.grow_to
            or self.set_configs
            or self.delete_configs
            or self.replication_factor
        )


def plan_topic(desired: Desired, actual: Actual | None) -> TopicPlan:
    if actual is None:
        return TopicPlan(create=True)
    ours = desired.owned_id == actual.topic_id if desired.owned_id else desired.claimed
    if not ours:
        return TopicPlan(
            refused=(
                Reason.NOT_OWNED,
                f"topic {desired.name} exists and was not created by this Topic "
                f"(its id is {actual.topic_id}); delete it or pick another topicName",
            )
        )
    refused = None
    grow_to = None
    if desired.partitions < actual.partitions:
        refused = (
            Reason.PARTITIONS_DECREASE_REFUSED,
            f"topic {desired.name} has {actual.partitions} partitions and partitions cannot "
            f"be removed; spec.partitions is {desired.partitions}",
        )
    elif desired.partitions > actual.partitions:
        grow_to = desired.partitions
    set_configs = {k: v for k, v in desired.config.items() if actual.overrides.get(k) != v}
    delete_configs = tuple(sorted(k for k in actual.overrides if k not in desired.config))
    factor = None
    if desired.replication_factor != actual.replication_factor:
        factor = desired.replication_factor
    return TopicPlan(
        grow_to=grow_to,
        set_configs=set_configs,
        delete_configs=delete_configs,
        replication_factor=factor,
        refused=refused,
    )
