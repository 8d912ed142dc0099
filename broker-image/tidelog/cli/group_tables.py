"""The tables of ``tidelog-consumer-groups``, laid out as Kafka's
``kafka-consumer-groups.sh`` lays them out (offsets, members, state, group states, reset
plans, deleted offsets) and the ``--export`` CSV. Pure: values in, text out."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tidelog.admin.groups import GroupDescription, TopicPartition
from tidelog.protocol.errors import ErrorCode

__all__ = [
    "MISSING",
    "OffsetRow",
    "format_assignment",
    "format_delete_offsets",
    "format_export",
    "format_group_states",
    "format_members",
    "format_offsets",
    "format_reset",
    "format_state",
]

# A value that is not known (no committed offset, no member, ...).
MISSING = "-"


@dataclass(frozen=True)
class OffsetRow:
    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    consumer_id: str
    host: str
    client_id: str

    @property
    def lag(self) -> int | None:
        if self.offset is None or self.offset == -1 or self.log_end_offset is None:
            return None
        return self.log_end_offset - self.offset


def _s(value: object) -> str:
    return MISSING if value is None else str(value)


def format_offsets(rows: Sequence[OffsetRow]) -> str:
    """The offsets view of one group (Kafka's column widths: at least 15 for the group,
    topic, consumer id and host, as wide as the widest value)."""
    g = max([15, *(len(r.group) for r in rows)])
    t = max([15, *(len(_s(r.topic)) for r in rows)])
    c = max([15, *(len(r.consumer_id) for r in rows)])
    h = max([15, *(len(r.host) for r in rows)])

    def line(*v: object) -> str:
        return (
            f"\n{v[0]:<{g}} {v[1]:<{t}} {v[2]:<10} {v[3]:<15} {v[4]:<15} {v[5]:<15} "
            f"{v[6]:<{c}} {v[7]:<{h}} {v[8]}"
        )

    out = [
        line(
            "GROUP",
            "TOPIC",
            "PARTITION",
            "CURRENT-OFFSET",
            "LOG-END-OFFSET",
            "LAG",
            "CONSUMER-ID",
            "HOST",
            "CLIENT-ID",
        )
    ]
    for r in rows:
        out.append(
            line(
                r.group,
                _s(r.topic),
                _s(r.partition),
                _s(r.offset),
                _s(r.log_end_offset),
                _s(r.lag),
                r.consumer_id,
                r.host,
                r.client_id,
            )
        )
    return "".join(out) + "\n"


def format_assignment(partitions: Iterable[TopicPartition]) -> str:
    """``t1(0,1), t2(0)``: each topic's partitions in ascending order, topics sorted."""
    by_topic: dict[str, list[int]] = {}
    for tp in partitions:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    if not by_topic:
        return MISSING
    return ", ".join(
        f"{topic}({','.join(str(p) for p in sorted(ps))})" for topic, ps in sorted(by_topic.items())
    )


def format_members(group: str, description: GroupDescription, verbose: bool) -> str:
    """The members view of one group (the header alone when it has no members)."""
    members = list(description.members)
    g = max([15, len(group)] if members else [15])
    c = max([15, *(len(m.member_id) for m in members)])
    i = max([17, *(len(m.group_instance_id or "") for m in members)])
    h = max([15, *(len(m.client_host) for m in members)])
    cl = max([15, *(len(m.client_id) for m in members)])
    with_instance = any(m.group_instance_id for m in members)

    def line(group_id, member, instance, host, client, count) -> str:
        middle = f"{instance:<{i}} " if with_instance else ""
        return f"{group_id:<{g}} {member:<{c}} {middle}{host:<{h}} {client:<{cl}} {count:<15} "

    out = [
        "\n",
        line("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS"),
    ]
    out.append("ASSIGNMENT\n" if verbose else "\n")
    for m in members:
        out.append(
            line(
                group,
                m.member_id,
                m.group_instance_id or "",
                m.client_host,
                m.client_id,
                len(m.assignment),
            )
        )
        out.append(format_assignment(m.assignment) + "\n" if verbose else "\n")
    return "".join(out)


def format_state(description: GroupDescription) -> str:
    node = description.coordinator
    coordinator = f"{node.host}:{node.port}  ({node.node_id})"
    w = max(25, len(coordinator))

    def line(*v: object) -> str:
        return f"\n{v[0]:<{w}} {v[1]:<25} {v[2]:<20} {v[3]:<15} {v[4]}"

    return (
        line("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")
        + line(
            description.group_id,
            coordinator,
            description.protocol,
            description.state,
            len(description.members),
        )
        + "\n"
    )


def format_group_states(listings: Sequence[tuple[str, str]]) -> str:
    """``--list --state``: GROUP and STATE columns."""
    w = max([15, *(len(g) for g, _ in listings)]) + 10
    lines = [f"{'GROUP':<{w}} {'STATE':<20}"]
    lines.extend(f"{g:<{w}} {s:<20}" for g, s in listings)
    return "".join(line + "\n" for line in lines)


def format_reset(plans: Mapping[str, Mapping[TopicPartition, int]]) -> str:
    """GROUP TOPIC PARTITION NEW-OFFSET, one row a partition."""

    def line(*v: object) -> str:
        return f"\n{v[0]:<30} {v[1]:<30} {v[2]:<10} {v[3]:<15}"

    out = [line("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET")]
    for group, offsets in plans.items():
        for tp, offset in sorted(offsets.items()):
            out.append(line(group, tp.topic, tp.partition, offset))
    return "".join(out) + "\n"


def format_export(plans: Mapping[str, Mapping[TopicPartition, int]], with_group: bool) -> str:
    """``--export``: CSV, ``topic,partition,offset`` (one group) or with the group first."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    for group, offsets in plans.items():
        for tp, offset in sorted(offsets.items()):
            row = [tp.topic, tp.partition, offset]
            writer.writerow([group, *row] if with_group else row)
    return buffer.getvalue()


def format_delete_offsets(results: Mapping[tuple[str, int], ErrorCode]) -> str:
    """``--delete-offsets``: TOPIC PARTITION STATUS, one row a partition (``Not Provided``
    for a whole topic, partition -1)."""

    def line(*v: object) -> str:
        return f"\n{v[0]:<30} {v[1]:<15} {v[2]:<15}"

    out = [line("TOPIC", "PARTITION", "STATUS")]
    for (topic, partition), error in sorted(results.items()):
        status = "Successful" if error == ErrorCode.NONE else f"Error: {error.message}"
        out.append(line(topic, partition if partition >= 0 else "Not Provided", status))
    return "".join(out) + "\n"
