"""One pass over a consumer group: its state, members and lag, and the declared reset,
applied once per id and only while the group has no members and its Spark application
(if it has one) is stopped. The offsets are computed
as ``kafka-consumer-groups.sh --reset-offsets`` computes them
(``tidelog.cli.offset_reset``)."""

from __future__ import annotations

import datetime
from dataclasses import dataclass, field
from typing import Any

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.groups import TopicPartition
from tidelog.cli.offset_reset import ResetError, ResetSpec, parse_datetime, plan_reset
from tidelog.protocol.errors import ProtocolError
from tidelog_operator import conditions
from tidelog_operator.conditions import Reason

__all__ = ["GroupPass", "reset_spec", "reset_waiting", "sync_group"]

INACTIVE = ("Empty", "Dead")
SCENARIOS = {
    "earliest": "to_earliest",
    "latest": "to_latest",
    "datetime": "to_datetime",
    "offset": "to_offset",
    "shiftBy": "shift_by",
}


def now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class GroupPass:
    """What a pass found: status fields (None: remove the field), conditions to set
    (type, holds, reason, message) and a reset applied (its message), if any."""

    fields: dict[str, Any] = field(default_factory=dict)
    marks: list[tuple[str, bool, str, str]] = field(default_factory=list)
    applied: str | None = None

    def status(self, current: dict[str, Any], generation: int | None) -> dict[str, Any]:
        found = current.get("conditions", [])
        for type_, holds, reason, message in self.marks:
            found = conditions.set_condition(
                found, type_, holds, reason, message, generation=generation, now=now()
            )
        merged = {**current, **self.fields, "conditions": found, "observedGeneration": generation}
        return {key: value for key, value in merged.items() if value is not None}


def reset_waiting(spec: dict, status: dict) -> bool:
    """Whether ``spec.reset`` declares a reset not applied yet."""
    reset = spec.get("reset")
    return bool(reset) and reset["id"] != (status.get("lastReset") or {}).get("id")


def reset_spec(reset: dict[str, Any]) -> ResetSpec:
    """``spec.reset`` as the reset tool's scenario; ValueError for a bad value."""
    scenario = SCENARIOS[reset["to"]]
    value = reset.get("value")
    if scenario == "to_datetime":
        return ResetSpec(scenario, parse_datetime(value))
    if scenario in ("to_offset", "shift_by"):
        try:
            return ResetSpec(scenario, int(value))
        except (TypeError, ValueError):
            raise ValueError(f"reset.value {value!r} is not a whole number") from None
    return ResetSpec(scenario)


def _lag(admin: AdminClient, group: str, topics: list[str]):
    """Each partition the group commits on or consumes: committed, log end and lag."""
    committed = {tp: o.offset for tp, o in admin.list_group_offsets(group).items()}
    partitions = set(committed)
    for topic, numbers in admin.topic_partitions(topics).items():
        partitions.update(TopicPartition(topic, p) for p in numbers)
    ends = {tp: o.offset for tp, o in admin.list_offsets(sorted(partitions), "latest").items()}
    rows = []
    for tp in sorted(partitions):
        at, end = committed.get(tp, -1), ends.get(tp, -1)
        lag = end - at if at >= 0 and end >= 0 else max(end, 0)
        rows.append(
            {
                "topic": tp.topic,
                "partition": tp.partition,
                "committed": at,
                "logEnd": end,
                "lag": lag,
            }
        )
    return rows, committed


def _apply(admin: AdminClient, group: str, reset: dict, topics: list[str], committed) -> int:
    partitions = []
    for topic, numbers in admin.topic_partitions(reset.get("topics") or topics).items():
        partitions.extend(TopicPartition(topic, p) for p in numbers)
    plan = plan_reset(admin, reset_spec(reset), partitions, committed)
    admin.alter_group_offsets(group, plan.offsets)
    return len(plan.offsets)


def sync_group(
    admin: AdminClient, group: str, spec: dict, status: dict, *, application_stopped: bool = True
) -> GroupPass:
    """The pass; ``application_stopped``: the group's Spark application (which reads
    with assigned partitions, so the group never shows it as a member) is not running."""
    found = GroupPass(fields={"groupId": group})
    topics = list(spec.get("topics") or [])
    try:
        (description,) = admin.describe_groups([group]).values()
        rows, committed = _lag(admin, group, topics)
        reset = spec.get("reset")
        if reset_waiting(spec, status):
            if not application_stopped:
                found.marks.append(
                    (
                        conditions.RESET_PENDING,
                        True,
                        Reason.WAITING_FOR_APPLICATION_TO_STOP,
                        f"reset {reset['id']} waits until the Spark application has stopped",
                    )
                )
            elif description.state in INACTIVE:
                count = _apply(admin, group, reset, topics, committed)
                found.applied = f"reset {reset['id']} applied to {count} partitions"
                found.fields["lastReset"] = {
                    "id": reset["id"],
                    "appliedAt": now(),
                    "partitions": count,
                }
                found.marks.append((conditions.RESET_PENDING, False, Reason.APPLIED, found.applied))
                rows, committed = _lag(admin, group, topics)
            else:
                found.marks.append(
                    (
                        conditions.RESET_PENDING,
                        True,
                        Reason.WAITING_FOR_MEMBERS_TO_LEAVE,
                        f"reset {reset['id']} waits until the group has no members: it is "
                        f"{description.state} with {len(description.members)}",
                    )
                )
    except (AdminError, OSError, ProtocolError, ResetError, ValueError) as error:
        found.marks.append((conditions.READY, False, Reason.GROUP_UNREACHABLE, f"{group}: {error}"))
        return found
    found.fields.update(
        state=description.state,
        members=len(description.members),
        lag=rows,
        totalLag=sum(r["lag"] for r in rows),
    )
    found.marks.append(
        (conditions.READY, True, Reason.OBSERVED, f"group {group} is {description.state}")
    )
    return found
