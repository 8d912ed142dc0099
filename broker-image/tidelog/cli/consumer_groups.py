"""``tidelog-consumer-groups``: list, describe, delete consumer groups and reset or delete
their offsets, with the options and the output of Apache Kafka's
``kafka-consumer-groups.sh`` (3.9), so that people and scripts used to it see the same
thing.

Where it differs from Kafka's tool, on purpose:

* Errors (a group that does not exist, a reset refused because the group is active, a
  failed deletion, bad options) go to stderr as one ``Error: ...`` line and make the exit
  status 1; Kafka's tool prints most of them on stdout and exits 0. Warnings go to stderr.
* Every table ends with a newline and the reset and delete-offsets tables have one row a
  line (Kafka 3.9 runs their rows together on one line, fixed in later Kafka).
* ``--members --verbose`` shows the topic of each partition list, ``t1(0,1), t2(0)``, as
  Kafka did before 3.7 (3.9 prints only the partitions).
* Rows are sorted by topic and partition (Kafka's order is that of a hash map).
* ``--command-config`` and ``--type`` are not supported.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import datetime as dt
import io
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TextIO

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.groups import (
    GROUP_STATES,
    GroupDescription,
    TopicPartition,
    canonical_state,
)
from tidelog.protocol.consumer_protocol import ConsumerProtocolError
from tidelog.protocol.errors import ErrorCode, ProtocolError

__all__ = [
    "Options",
    "ResetPlan",
    "ResetSpec",
    "UsageError",
    "main",
    "parse_args",
    "parse_datetime",
    "parse_duration",
    "parse_topic_args",
    "reset_targets",
]

PROG = "tidelog-consumer-groups"
MISSING = "-"
ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
# The reset scenarios, in the order Kafka's usage lists them.
SCENARIOS = (
    "to_datetime",
    "by_duration",
    "to_earliest",
    "to_latest",
    "shift_by",
    "from_file",
    "to_current",
    "to_offset",
)
RESET_ONLY = (*SCENARIOS, "all_topics", "dry_run", "execute", "export")
INACTIVE_STATES = ("Empty", "Dead")
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


class UsageError(Exception):
    """Bad command-line input: printed as one line, exit status 1."""


class CommandError(Exception):
    """A failure while running a command: printed as one line, exit status 1."""


def _opt(name: str) -> str:
    return f"[{name.replace('_', '-')}]"


# -- parsing ----------------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, no usage dump
        raise UsageError(message)


def _parser() -> _Parser:
    p = _Parser(
        prog=PROG,
        description="List, describe and delete consumer groups, and reset or delete their "
        "offsets (the options of Kafka's kafka-consumer-groups.sh).",
    )
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED: brokers")
    p.add_argument("--group", action="append", help="the consumer group (repeatable)")
    p.add_argument("--all-groups", action="store_true", help="every consumer group")
    p.add_argument(
        "--topic",
        action="append",
        help="a topic, or topic:p,p,... (repeatable; --reset-offsets, --delete-offsets)",
    )
    p.add_argument("--all-topics", action="store_true", help="every topic the group has offsets of")
    p.add_argument("--list", action="store_true", help="list consumer groups")
    p.add_argument("--describe", action="store_true", help="describe groups (offsets and lag)")
    p.add_argument("--delete", action="store_true", help="delete groups")
    p.add_argument("--reset-offsets", action="store_true", help="reset offsets (group inactive)")
    p.add_argument("--delete-offsets", action="store_true", help="delete offsets of topics")
    p.add_argument("--offsets", action="store_true", help="--describe: offsets (the default)")
    p.add_argument("--members", action="store_true", help="--describe: members")
    p.add_argument("--verbose", action="store_true", help="--describe --members: assignments")
    p.add_argument(
        "--state",
        nargs="?",
        const="",
        metavar="STATES",
        help="--describe: group state; --list: show states, or only these (e.g. stable,empty)",
    )
    p.add_argument("--dry-run", action="store_true", help="only show the new offsets (default)")
    p.add_argument("--execute", action="store_true", help="commit the new offsets")
    p.add_argument("--export", action="store_true", help="print the new offsets as CSV")
    p.add_argument("--to-earliest", action="store_true", help="to the earliest offset")
    p.add_argument("--to-latest", action="store_true", help="to the latest offset")
    p.add_argument("--to-current", action="store_true", help="to the committed offset")
    p.add_argument("--to-offset", type=int, metavar="OFFSET", help="to this offset")
    p.add_argument("--shift-by", type=int, metavar="N", help="committed offset + N (N may be < 0)")
    p.add_argument(
        "--to-datetime", metavar="DATETIME", help="first offset at YYYY-MM-DDTHH:mm:SS.sss[zone]"
    )
    p.add_argument("--by-duration", metavar="DURATION", help="first offset PnDTnHnMnS ago")
    p.add_argument("--from-file", metavar="CSV", help="offsets from a CSV file (--export's)")
    p.add_argument(
        "--timeout", type=int, default=5000, metavar="MS", help="timeout of calls (5000 ms)"
    )
    return p


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?[0-9]+)D)?"
    r"(T(?:([-+]?[0-9]+)H)?(?:([-+]?[0-9]+)M)?(?:([-+]?[0-9]+)(?:[.,]([0-9]{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """An ISO-8601 duration as Java's ``Duration.parse`` reads it (``PnDTnHnMn.nS``, days
    of 24 hours, signs allowed), in nanoseconds; ValueError otherwise."""
    match = _DURATION.fullmatch(text.strip())
    if (
        match is None
        or match.group(3) == "T"
        or not any(match.group(i) is not None for i in (2, 4, 5, 6))
    ):
        raise ValueError(f"Invalid duration {text!r}: expected PnDTnHnMnS, e.g. PT30M or P1DT2H")
    sign, days, _, hours, minutes, seconds, fraction = match.groups()
    total = 0
    for value, unit in ((days, 86400), (hours, 3600), (minutes, 60), (seconds, 1)):
        if value is not None:
            total += int(value) * unit * 10**9
    if fraction:
        nanos = int(fraction.ljust(9, "0"))
        total += -nanos if seconds.startswith("-") else nanos
    return -total if sign == "-" else total


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})" r"(Z|[+-]\d{2}(?::?\d{2})?)?"
)


def parse_datetime(text: str) -> int:
    """``YYYY-MM-DDTHH:mm:SS.sss`` with an optional zone (``Z``, ``+HH``, ``+HHmm``,
    ``+HH:mm``; UTC without one), as Kafka's tool reads ``--to-datetime``: epoch ms."""
    match = _DATETIME.fullmatch(text.strip())
    if match is None:
        raise ValueError(
            f"Error parsing timestamp {text!r}: expected YYYY-MM-DDTHH:mm:SS.sss with an "
            "optional zone (Z, +HH, +HHmm or +HH:mm)"
        )
    *fields, millis, zone = match.groups()
    offset = dt.timedelta(0)
    if zone and zone != "Z":
        digits = zone[1:].replace(":", "")
        hours, minutes = int(digits[:2]), int(digits[2:] or 0)
        if hours > 23 or minutes > 59:
            raise ValueError(f"Error parsing timestamp {text!r}: bad zone offset {zone}")
        offset = dt.timedelta(hours=hours, minutes=minutes) * (-1 if zone[0] == "-" else 1)
    try:
        moment = dt.datetime(*map(int, fields), int(millis) * 1000, dt.timezone(offset))
    except ValueError as error:
        raise ValueError(f"Error parsing timestamp {text!r}: {error}") from None
    return round(moment.timestamp() * 1000)


def parse_topic_args(args: Iterable[str]) -> tuple[list[TopicPartition], list[str]]:
    """``--topic`` values: ``topic:p,p`` give partitions, a bare ``topic`` all of its
    partitions. Returns ``(partitions, whole topics)``; ValueError on a bad value."""
    partitions: list[TopicPartition] = []
    topics: list[str] = []
    for arg in args:
        if ":" not in arg:
            if not arg:
                raise ValueError("Invalid topic arg '': expected a topic name")
            topics.append(arg)
            continue
        parts = arg.split(":")
        if len(parts) != 2 or not parts[0] or not parts[1]:
            raise ValueError(f"Invalid topic arg '{arg}', expected topic name and partitions")
        topic, numbers = parts
        for number in numbers.split(","):
            try:
                partition = int(number)
                if partition < 0 or not number.strip().lstrip("+").isdigit():
                    raise ValueError
            except ValueError:
                raise ValueError(
                    f"Invalid partition '{number}' specified in topic arg '{arg}'"
                ) from None
            partitions.append(TopicPartition(topic, partition))
    return list(dict.fromkeys(partitions)), list(dict.fromkeys(topics))


@dataclass(frozen=True)
class ResetSpec:
    """One reset scenario. ``value``: the offset (to-offset), the shift (shift-by), epoch
    ms (to-datetime) or nanoseconds (by-duration)."""

    scenario: str  # a name of SCENARIOS
    value: int | None = None

    @property
    def by_time(self) -> bool:
        return self.scenario in ("to_datetime", "by_duration")

    def timestamp(self, now_ns: int | None = None) -> int:
        """The epoch ms to look offsets up at (to-datetime, by-duration)."""
        if self.scenario == "to_datetime":
            return self.value
        now_ns = time.time_ns() if now_ns is None else now_ns
        return (now_ns - self.value) // 1_000_000


@dataclass
class ResetPlan:
    offsets: dict[TopicPartition, int]
    warnings: list[str] = field(default_factory=list)


def _clamp(
    requested: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    warnings: list[str],
) -> dict[TopicPartition, int]:
    out = {}
    for tp, offset in requested.items():
        if tp not in latest or tp not in earliest:
            raise CommandError(f"Unexpected non-existing offset value for topic partition {tp}")
        if offset > latest[tp]:
            warnings.append(
                f"New offset ({offset}) is higher than latest offset for topic partition "
                f"{tp}. Value will be set to {latest[tp]}"
            )
            offset = latest[tp]
        elif offset < earliest[tp]:
            warnings.append(
                f"New offset ({offset}) is lower than earliest offset for topic partition "
                f"{tp}. Value will be set to {earliest[tp]}"
            )
            offset = earliest[tp]
        out[tp] = offset
    return out


def reset_targets(
    spec: ResetSpec,
    partitions: Iterable[TopicPartition],
    *,
    committed: Mapping[TopicPartition, int],
    earliest: Mapping[TopicPartition, int],
    latest: Mapping[TopicPartition, int],
    by_time: Mapping[TopicPartition, int] | None = None,
    from_file: Mapping[TopicPartition, int] | None = None,
) -> ResetPlan:
    """The new offset of each partition, as Kafka's tool computes it: to-offset, shift-by
    and from-file are clamped into [earliest, latest] (with a warning each);
    to-current falls back to the latest offset without a committed one; to-datetime and
    by-duration (``by_time``: the ListOffsets answers, -1 for none) fall back to the
    latest offset when no record is that recent. CommandError when an offset is missing.
    """
    partitions = sorted(set(partitions))
    warnings: list[str] = []

    def need(offsets: Mapping[TopicPartition, int], tp: TopicPartition, what: str) -> int:
        if tp not in offsets:
            raise CommandError(f"Error getting {what} offset of topic partition: {tp}")
        return offsets[tp]

    s = spec.scenario
    if s == "to_offset":
        out = _clamp({tp: spec.value for tp in partitions}, earliest, latest, warnings)
    elif s == "shift_by":
        requested = {}
        for tp in partitions:
            if tp not in committed:
                raise CommandError(
                    f"Cannot shift offset for partition {tp} since there is no current "
                    "committed offset"
                )
            requested[tp] = committed[tp] + spec.value
        out = _clamp(requested, earliest, latest, warnings)
    elif s == "to_earliest":
        out = {tp: need(earliest, tp, "starting") for tp in partitions}
    elif s == "to_latest":
        out = {tp: need(latest, tp, "ending") for tp in partitions}
    elif s == "to_current":
        out = {
            tp: committed[tp] if tp in committed else need(latest, tp, "ending")
            for tp in partitions
        }
    elif spec.by_time:
        out = {}
        for tp in partitions:
            offset = need(by_time or {}, tp, "by timestamp")
            if offset < 0:
                warnings.append(
                    f"Partition {tp.partition} from topic {tp.topic} is empty. "
                    "Falling back to latest known offset."
                )
                offset = need(latest, tp, "ending")
            out[tp] = offset
    elif s == "from_file":
        requested = {tp: (from_file or {})[tp] for tp in partitions}
        out = _clamp(requested, earliest, latest, warnings)
    else:
        raise ValueError(f"unknown reset scenario {s!r}")
    return ResetPlan(dict(sorted(out.items())), warnings)


@dataclass
class Options:
    bootstrap: str
    action: str  # one of ACTIONS
    groups: list[str]
    all_groups: bool
    topics: list[str]
    all_topics: bool
    view: str = "offsets"  # describe: offsets, members, state
    verbose: bool = False
    list_states: list[str] | None = None  # --list: None = no STATE column
    reset: ResetSpec | None = None
    execute: bool = False
    dry_run_explicit: bool = False
    export: bool = False
    from_file_path: str | None = None
    timeout_ms: int = 5000


def _check_bootstrap(value: str) -> str:
    for address in value.split(","):
        host, sep, port = address.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise UsageError(
                f"Invalid --bootstrap-server {value!r}: expected HOST:PORT[,HOST:PORT...]"
            )
    return ",".join(a.strip() for a in value.split(","))


def parse_args(argv: Sequence[str]) -> Options:
    """Parse and check the options as Kafka's tool does; UsageError on bad input."""
    a = _parser().parse_args(argv)
    actions = [name for name in ACTIONS if getattr(a, name)]
    if len(actions) != 1:
        raise UsageError(
            "Command must include exactly one action: --list, --describe, --delete, "
            "--reset-offsets, --delete-offsets"
        )
    (action,) = actions
    if not a.bootstrap_server:
        raise UsageError('Missing required argument "[bootstrap-server]"')
    bootstrap = _check_bootstrap(a.bootstrap_server)
    groups = list(dict.fromkeys(a.group or []))
    topics = a.topic or []
    if groups and a.all_groups:
        raise UsageError("Option [group] can't be used with option [all-groups]")
    if groups and action == "list":
        raise UsageError("Option [group] can't be used with option [list]")
    if topics and action in ("list", "describe"):
        raise UsageError(f"Option [topic] can't be used with option {_opt(action)}")
    for name in ("offsets", "members", "verbose"):
        if getattr(a, name) and action != "describe":
            raise UsageError(f"Option {_opt(name)} can only be used with [describe]")
    if a.state is not None and action not in ("describe", "list"):
        raise UsageError("Option [state] can only be used with [describe] or [list]")
    for name in RESET_ONLY:
        if _given(getattr(a, name)) and action != "reset_offsets":
            raise UsageError(f"Option {_opt(name)} can only be used with [reset-offsets]")
    if a.timeout <= 0:
        raise UsageError(f"Option [timeout] must be positive, not {a.timeout}")
    options = Options(
        bootstrap, action, groups, a.all_groups, topics, a.all_topics, timeout_ms=a.timeout
    )
    if action in ("describe", "delete", "reset_offsets") and not groups and not a.all_groups:
        raise UsageError(f"Option {_opt(action)} takes one of these options: [all-groups], [group]")
    if action == "list" and a.state is not None:
        try:
            options.list_states = [canonical_state(s) for s in a.state.split(",") if s.strip()]
        except ValueError:
            raise UsageError(
                f"Invalid state list '{a.state}'. Valid states are: {', '.join(GROUP_STATES)}"
            ) from None
    elif action == "describe":
        views = [name for name in ("members", "offsets", "state") if _given(getattr(a, name))]
        if len(views) > 1:
            raise UsageError(
                "Option [describe] takes at most one of these options: [members], [offsets], "
                "[state]"
            )
        if a.state:
            raise UsageError("Option [describe] does not take a value for [state]")
        options.view = views[0] if views else "offsets"
        options.verbose = a.verbose
    elif action == "delete" and topics:
        raise UsageError(
            "The consumer does not support topic-specific offset deletion from a consumer group."
        )
    elif action == "delete_offsets":
        if len(groups) != 1 or not topics:
            raise UsageError("Option [delete-offsets] takes one [group] and one or more [topic]")
    elif action == "reset_offsets":
        options.reset = _reset_spec(a)
        if a.dry_run and a.execute:
            raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        options.execute, options.dry_run_explicit, options.export = a.execute, a.dry_run, a.export
        options.from_file_path = a.from_file
        if topics and a.all_topics:
            raise UsageError("Option [all-topics] can't be used with option [topic]")
        if not topics and not a.all_topics and a.from_file is None:
            raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")
    if topics:
        try:
            parse_topic_args(topics)
        except ValueError as error:
            raise UsageError(str(error)) from None
    return options


def _given(value: object) -> bool:
    return value is not None and value is not False


def _reset_spec(a: argparse.Namespace) -> ResetSpec:
    given = [name for name in SCENARIOS if _given(getattr(a, name))]
    if not given:
        raise UsageError(
            "Option [reset-offsets] requires one of the following scenarios: "
            + ", ".join(_opt(s) for s in SCENARIOS)
        )
    if len(given) > 1:
        raise UsageError(f"Option {_opt(given[0])} can't be used with option {_opt(given[1])}")
    (scenario,) = given
    value = getattr(a, scenario)
    try:
        if scenario == "to_datetime":
            return ResetSpec(scenario, parse_datetime(value))
        if scenario == "by_duration":
            return ResetSpec(scenario, parse_duration(value))
    except ValueError as error:
        raise UsageError(str(error)) from None
    return ResetSpec(scenario, value if scenario in ("to_offset", "shift_by") else None)


# -- formatting (pure) -----------------------------------------------------------------------


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


def format_members(group: str, description: GroupDescription | None, verbose: bool) -> str:
    """The members view of one group (the header alone when it has no members)."""
    members = list(description.members) if description else []
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


def parse_reset_file(text: str, groups: Sequence[str]) -> dict[str, dict[TopicPartition, int]]:
    """A ``--from-file`` plan: ``topic,partition,offset`` lines for the one group given,
    or ``group,topic,partition,offset``; ValueError on a bad line."""
    plans: dict[str, dict[TopicPartition, int]] = {}
    for number, row in enumerate(csv.reader(io.StringIO(text)), 1):
        if not row or not "".join(row).strip():
            continue
        try:
            if len(row) == 3 and len(groups) == 1:
                group, (topic, partition, offset) = groups[0], row
            elif len(row) == 4:
                group, topic, partition, offset = row
            else:
                raise ValueError
            plans.setdefault(group, {})[TopicPartition(topic, int(partition))] = int(offset)
        except ValueError:
            raise ValueError(
                f"line {number} of the reset plan: expected "
                + ("topic,partition,offset or " if len(groups) == 1 else "")
                + "group,topic,partition,offset"
            ) from None
    return plans


def format_delete_offsets(results: Mapping[tuple[str, int], ErrorCode]) -> str:
    def line(*v: object) -> str:
        return f"\n{v[0]:<30} {v[1]:<15} {v[2]:<15}"

    out = [line("TOPIC", "PARTITION", "STATUS")]
    for (topic, partition), error in sorted(results.items()):
        status = "Successful" if error == ErrorCode.NONE else f"Error: {error.message}"
        out.append(line(topic, partition if partition >= 0 else "Not Provided", status))
    return "".join(out) + "\n"


# -- running ---------------------------------------------------------------------------------


class _Command:
    def __init__(self, options: Options, out: TextIO, err: TextIO, admin: AdminClient):
        self.o = options
        self.out = out
        self.err = err
        self.admin = admin
        self.failed = False

    def error(self, message: str) -> None:
        print(f"Error: {message}", file=self.err)
        self.failed = True

    def warn(self, message: str) -> None:
        print(f"WARN: {message}", file=self.err)

    def consumer_groups(self) -> list[str]:
        return [g.group_id for g in self.admin.list_groups() if g.is_consumer_group]

    def selected_groups(self) -> list[str]:
        return self.consumer_groups() if self.o.all_groups else self.o.groups

    def describe(self, groups: Iterable[str]) -> dict[str, GroupDescription]:
        out = {}
        for group, description in sorted(self.admin.describe_groups(groups).items()):
            if not description.is_consumer_group:
                raise CommandError(
                    f"GroupId {group} is not a consumer group ({description.protocol_type})."
                )
            out[group] = description
        return out

    def log_end_offsets(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, int]:
        """Latest offsets; a partition whose offset cannot be read is left out."""
        partitions = sorted(set(partitions))
        try:
            return {tp: o.offset for tp, o in self.admin.list_offsets(partitions).items()}
        except AdminError:
            out = {}
            for tp in partitions:
                with contextlib.suppress(AdminError):
                    out.update((k, v.offset) for k, v in self.admin.list_offsets([tp]).items())
            return out

    # -- list

    def run_list(self) -> None:
        if self.o.list_states is None:
            for group in self.consumer_groups():
                print(group, file=self.out)
            return
        listings = [
            g for g in self.admin.list_groups(self.o.list_states or None) if g.is_consumer_group
        ]
        missing = [g.group_id for g in listings if g.state is None]
        states = (
            {g: d.state for g, d in self.admin.describe_groups(missing).items()} if missing else {}
        )
        rows = [(g.group_id, g.state or states[g.group_id]) for g in listings]
        self.out.write(format_group_states(rows))

    # -- describe

    def should_print(self, group: str, state: str, rows: int) -> bool:
        """Kafka's notes on a group's state; whether there is anything to print."""
        if state == "Dead":
            self.error(f"Consumer group '{group}' does not exist.")
            return False
        if state == "Empty":
            print(f"Consumer group '{group}' has no active members.", file=self.err)
        elif state in REBALANCING_STATES:
            print(f"Warning: Consumer group '{group}' is rebalancing.", file=self.err)
        return rows > 0

    def run_describe(self) -> None:
        descriptions = self.describe(self.selected_groups())
        for group, description in descriptions.items():
            if self.o.view == "offsets":
                rows = self.offset_rows(description)
                if self.should_print(group, description.state, len(rows)):
                    self.out.write(format_offsets(rows))
            elif self.o.view == "members":
                self.should_print(group, description.state, len(description.members))
                if description.state != "Dead":
                    self.out.write(format_members(group, description, self.o.verbose))
            elif self.should_print(group, description.state, 1):
                self.out.write(format_state(description))

    def offset_rows(self, description: GroupDescription) -> list[OffsetRow]:
        if description.state == "Dead":
            return []
        group = description.group_id
        committed = {tp: o.offset for tp, o in self.admin.list_group_offsets(group).items()}
        members = sorted(
            (m for m in description.members if m.assignment),
            key=lambda m: -len(m.assignment),
        )
        assigned = {tp for m in members for tp in m.assignment}
        unassigned = sorted(tp for tp in committed if tp not in assigned)
        ends = self.log_end_offsets([*assigned, *unassigned])
        rows = []
        for member in members:
            for tp in sorted(set(member.assignment)):
                rows.append(
                    OffsetRow(
                        group,
                        tp.topic,
                        tp.partition,
                        committed.get(tp),
                        ends.get(tp),
                        member.member_id,
                        member.client_host,
                        member.client_id,
                    )
                )
        for tp in unassigned:
            rows.append(
                OffsetRow(
                    group, tp.topic, tp.partition, committed[tp], ends.get(tp), *[MISSING] * 3
                )
            )
        return rows

    # -- delete

    def run_delete(self) -> None:
        results = self.admin.delete_groups(self.selected_groups())
        ok = [g for g, e in results.items() if e == ErrorCode.NONE]
        failed = {g: e for g, e in results.items() if e != ErrorCode.NONE}
        if not failed:
            print(
                f"Deletion of requested consumer groups ('{', '.join(ok)}') was successful.",
                file=self.out,
            )
            return
        self.error("Deletion of some consumer groups failed:")
        for group, error in failed.items():
            print(
                f"* Group '{group}' could not be deleted due to: {error.name}: {error.message}",
                file=self.err,
            )
        if ok:
            names = ", ".join(f"'{g}'" for g in ok)
            print(f"\nThese consumer groups were deleted successfully: {names}", file=self.out)

    # -- delete offsets

    def run_delete_offsets(self) -> None:
        (group,) = self.o.groups
        explicit, whole = parse_topic_args(self.o.topics)
        results: dict[tuple[str, int], ErrorCode] = {}
        partitions = list(explicit)
        for topic in whole:
            try:
                partitions.extend(
                    TopicPartition(topic, p) for p in self.admin.topic_partitions([topic])[topic]
                )
            except AdminError as error:
                results[(topic, -1)] = error.code
        top = ErrorCode.NONE
        if partitions:
            try:
                results.update(self.admin.delete_group_offsets(group, partitions))
            except AdminError as error:
                top = error.code
                results.update((tp, error.code) for tp in partitions)
        partition_error = next((e for e in results.values() if e != ErrorCode.NONE), None)
        if top == ErrorCode.NONE and partition_error is None:
            print(
                "Request succeed for deleting offsets with topic "
                f"{', '.join(self.o.topics)} group {group}",
                file=self.out,
            )
        else:
            self.error(
                {
                    ErrorCode.NONE: "Encounter some partition level error, see the follow-up "
                    "details:",
                    ErrorCode.INVALID_GROUP_ID: f"'{group}' is not valid.",
                    ErrorCode.GROUP_ID_NOT_FOUND: f"'{group}' does not exist.",
                    ErrorCode.GROUP_AUTHORIZATION_FAILED: f"Access to '{group}' is not authorized.",
                    ErrorCode.NON_EMPTY_GROUP: f"Deleting offsets of a consumer group '{group}' "
                    "is forbidden if the group is not empty.",
                }.get(top, f"Encounter some unknown error: {top.name}")
            )
        self.out.write(format_delete_offsets(results))

    # -- reset offsets

    def run_reset(self) -> None:
        spec = self.o.reset
        if spec is None:
            raise CommandError("no reset scenario")
        if not self.o.execute and not self.o.dry_run_explicit and not self.o.export:
            self.warn(
                "No action will be performed as the --execute option is missing. Add "
                "--dry-run to only show the new offsets without this warning."
            )
        file_plans = None
        if spec.scenario == "from_file":
            file_plans = self.read_plan()
        plans: dict[str, dict[TopicPartition, int]] = {}
        for group, description in self.describe(self.selected_groups()).items():
            if description.state not in INACTIVE_STATES:
                self.error(
                    f"Assignments can only be reset if the group '{group}' is inactive, but "
                    f"the current state is {description.state}."
                )
                continue
            if file_plans is not None and group not in file_plans:
                self.error(f"No reset plan for group {group} found")
                continue
            plan = self.plan(group, spec, file_plans.get(group) if file_plans else None)
            for warning in plan.warnings:
                self.warn(warning)
            if self.o.execute:
                try:
                    self.admin.alter_group_offsets(group, plan.offsets)
                except AdminError as error:
                    self.error(f"Failed to reset the offsets of group '{group}': {error}")
                    continue
            plans[group] = plan.offsets
        if not plans:
            return
        if self.o.export:
            self.out.write(format_export(plans, with_group=len(self.o.groups) != 1))
        else:
            self.out.write(format_reset(plans))

    def read_plan(self) -> dict[str, dict[TopicPartition, int]]:
        path = self.o.from_file_path
        try:
            with open(path, encoding="utf-8") as file:
                text = file.read()
        except OSError as error:
            raise CommandError(f"Cannot read the reset plan {path}: {error.strerror}") from None
        try:
            return parse_reset_file(text, self.o.groups)
        except ValueError as error:
            raise CommandError(f"{path}: {error}") from None

    def plan(
        self, group: str, spec: ResetSpec, from_file: dict[TopicPartition, int] | None
    ) -> ResetPlan:
        committed = {tp: o.offset for tp, o in self.admin.list_group_offsets(group).items()}
        if from_file is not None:
            partitions = sorted(from_file)
        elif self.o.all_topics:
            partitions = sorted(committed)
        else:
            explicit, whole = parse_topic_args(self.o.topics)
            partitions = list(explicit)
            for topic, numbers in self.admin.topic_partitions(whole).items():
                partitions.extend(TopicPartition(topic, p) for p in numbers)
            partitions = sorted(set(partitions))
        if not partitions:
            return ResetPlan({})
        earliest = {
            tp: o.offset for tp, o in self.admin.list_offsets(partitions, "earliest").items()
        }
        latest = {tp: o.offset for tp, o in self.admin.list_offsets(partitions, "latest").items()}
        by_time = None
        if spec.by_time:
            by_time = {
                tp: o.offset
                for tp, o in self.admin.list_offsets(partitions, spec.timestamp()).items()
            }
        return reset_targets(
            spec,
            partitions,
            committed=committed,
            earliest=earliest,
            latest=latest,
            by_time=by_time,
            from_file=from_file,
        )


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    out = sys.stdout if out is None else out
    err = sys.stderr if err is None else err
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        options = parse_args(argv)
    except UsageError as error:
        print(f"Error: {error}", file=err)
        return 1
    except SystemExit as done:  # --help
        return int(done.code or 0)
    admin = AdminClient(options.bootstrap, timeout=options.timeout_ms / 1000)
    command = _Command(options, out, err, admin)
    run = {
        "list": command.run_list,
        "describe": command.run_describe,
        "delete": command.run_delete,
        "reset_offsets": command.run_reset,
        "delete_offsets": command.run_delete_offsets,
    }[options.action]
    try:
        run()
    except CommandError as error:
        command.error(str(error))
    except (AdminError, OSError, ConsumerProtocolError, ProtocolError) as error:
        command.error(f"Executing consumer group command failed due to {error}")
    except KeyboardInterrupt:
        return 130
    out.flush()
    return 1 if command.failed else 0


if __name__ == "__main__":
    sys.exit(main())
