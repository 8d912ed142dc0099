"""The options of ``tidelog-consumer-groups``: parsed and checked as Apache Kafka's
``kafka-consumer-groups.sh`` (3.9) checks them, with its messages; a bad combination
is a :class:`~tidelog.cli.common.UsageError`. :mod:`tidelog.cli.consumer_groups` runs
the command they describe.
"""

from __future__ import annotations

import argparse
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from tidelog.admin.groups import GROUP_STATES, TopicPartition, canonical_state
from tidelog.cli.common import Parser, UsageError, check_bootstrap, command_config, option_name
from tidelog.cli.offset_reset import SCENARIOS, ResetSpec, parse_datetime, parse_duration
from tidelog.security.client_security import ClientSecurity

__all__ = ["Options", "parse_args", "parse_topic_args"]

PROG = "tidelog-consumer-groups"
ACTIONS = ("list", "describe", "delete", "reset_offsets", "delete_offsets")
RESET_ONLY = (*SCENARIOS, "all_topics", "dry_run", "execute", "export")


def _parser() -> Parser:
    p = Parser(
        prog=PROG,
        description="List, describe and delete consumer groups, and reset or delete their "
        "offsets (the options of Kafka's kafka-consumer-groups.sh).",
    )
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED: brokers")
    p.add_argument("--command-config", metavar="FILE", help="client properties (TLS, SASL)")
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
    security: ClientSecurity | None = None


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
    bootstrap = check_bootstrap(a.bootstrap_server)
    groups = list(dict.fromkeys(a.group or []))
    topics = a.topic or []
    if groups and a.all_groups:
        raise UsageError("Option [group] can't be used with option [all-groups]")
    if groups and action == "list":
        raise UsageError("Option [group] can't be used with option [list]")
    if topics and action in ("list", "describe"):
        raise UsageError(f"Option [topic] can't be used with option {option_name(action)}")
    for name in ("offsets", "members", "verbose"):
        if getattr(a, name) and action != "describe":
            raise UsageError(f"Option {option_name(name)} can only be used with [describe]")
    if a.state is not None and action not in ("describe", "list"):
        raise UsageError("Option [state] can only be used with [describe] or [list]")
    for name in RESET_ONLY:
        if _given(getattr(a, name)) and action != "reset_offsets":
            raise UsageError(f"Option {option_name(name)} can only be used with [reset-offsets]")
    if a.timeout <= 0:
        raise UsageError(f"Option [timeout] must be positive, not {a.timeout}")
    options = Options(
        bootstrap,
        action,
        groups,
        a.all_groups,
        topics,
        a.all_topics,
        timeout_ms=a.timeout,
        security=command_config(a.command_config),
    )
    if action in ("describe", "delete", "reset_offsets") and not groups and not a.all_groups:
        raise UsageError(
            f"Option {option_name(action)} takes one of these options: [all-groups], [group]"
        )
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
            + ", ".join(option_name(s) for s in SCENARIOS)
        )
    if len(given) > 1:
        raise UsageError(
            f"Option {option_name(given[0])} can't be used with option {option_name(given[1])}"
        )
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
