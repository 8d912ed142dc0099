"""``tidelog-topics``: create, list, describe, alter and delete topics, with the options
and the output of Apache Kafka's ``kafka-topics.sh`` (3.9), so that people and scripts
used to it see the same thing.

``--topic`` is a regular expression matched against whole names (a comma separates
alternatives) except with ``--create``; ``--describe`` prints a topic line and a line per
partition, or with ``--under-replicated-partitions``, ``--unavailable-partitions``,
``--under-min-isr-partitions`` or ``--at-min-isr-partitions`` only the partitions that
are so; ``--topics-with-overrides`` only the topic lines of topics with non-default
configs.

Where it differs from Kafka's tool, on purpose:

* Errors (a topic that does not exist, one that already exists, bad options) go to
  stderr as one ``Error: ...`` line (one per failed topic) and make the exit status 1;
  Kafka's tool prints the errors of the cluster on stdout. Warnings go to stderr.
* ``--alter`` also changes configs: ``--config key=value`` sets one and
  ``--delete-config key`` removes an override (IncrementalAlterConfigs), each confirmed
  with ``Completed updating config for topic <t>.`` as ``kafka-configs.sh`` does; Kafka
  3.9's tool refuses both with ``--bootstrap-server``. ``--partitions`` is then optional.
* Topics are described in name order (Kafka's order is that of a hash map), and
  ``--list`` with no topic prints nothing (Kafka prints an empty line).
* ``--partition-size-limit-per-response`` is not supported.

This module reads the options and runs the commands against the cluster; the describe
lines are in :mod:`tidelog.cli.topic_tables`.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TextIO

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.topics import (
    INTERNAL_TOPICS,
    AlterConfigOp,
    ConfigEntry,
    ConfigResourceType,
    NewPartitions,
    NewTopic,
    OpType,
    TopicDescription,
)
from tidelog.cli.common import (
    CommandError,
    Parser,
    UsageError,
    check_bootstrap,
    command_config,
    option_name,
    run_tool,
)
from tidelog.cli.topic_tables import (
    DEFAULT_MIN_ISR,
    PartitionRow,
    format_partition,
    format_topic,
    parse_kafka_uuid,
    replication_factor,
)
from tidelog.protocol.errors import ErrorCode
from tidelog.security.client_security import ClientSecurity

__all__ = [
    "CommandError",
    "Options",
    "UsageError",
    "main",
    "parse_args",
    "parse_configs",
    "parse_replica_assignment",
    "topic_filter",
]

PROG = "tidelog-topics"
ACTIONS = ("create", "list", "describe", "alter", "delete")
REPORTS = (
    "under_replicated_partitions",
    "unavailable_partitions",
    "under_min_isr_partitions",
    "at_min_isr_partitions",
)
MAX_REPLICATION_FACTOR = 32767
COLLISION_WARNING = (
    "WARNING: Due to limitations in metric names, topics with a period ('.') or underscore "
    "('_') could collide. To avoid issues it is best to use either, but not both."
)
UNSUPPORTED = ("partition_size_limit_per_response",)


# -- parsing ----------------------------------------------------------------------------------


def _parser() -> Parser:
    p = Parser(
        prog=PROG,
        description="Create, delete, describe, or change a topic (the options of Kafka's "
        "kafka-topics.sh).",
    )
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED: brokers")
    p.add_argument("--list", action="store_true", help="list all available topics")
    p.add_argument("--create", action="store_true", help="create a new topic")
    p.add_argument("--delete", action="store_true", help="delete topics")
    p.add_argument("--alter", action="store_true", help="add partitions, change configs")
    p.add_argument("--describe", action="store_true", help="list details for the given topics")
    p.add_argument("--topic", help="the topic; a regular expression except with --create")
    p.add_argument("--topic-id", help="the topic id to describe")
    p.add_argument(
        "--config", action="append", metavar="NAME=VALUE", help="a config (--create, --alter)"
    )
    p.add_argument(
        "--delete-config", action="append", metavar="NAME", help="remove an override (--alter)"
    )
    p.add_argument("--partitions", type=int, metavar="N", help="number of partitions")
    p.add_argument("--replication-factor", type=int, metavar="N", help="replicas of each")
    p.add_argument(
        "--replica-assignment",
        metavar="B1:B2,B1:B2,...",
        help="manual partition-to-broker assignments (--create, --alter)",
    )
    p.add_argument("--under-replicated-partitions", action="store_true")
    p.add_argument("--unavailable-partitions", action="store_true")
    p.add_argument("--under-min-isr-partitions", action="store_true")
    p.add_argument("--at-min-isr-partitions", action="store_true")
    p.add_argument("--topics-with-overrides", action="store_true")
    p.add_argument("--if-exists", action="store_true", help="--alter, --delete, --describe")
    p.add_argument("--if-not-exists", action="store_true", help="--create")
    p.add_argument("--exclude-internal", action="store_true", help="--list, --describe")
    p.add_argument("--command-config", metavar="FILE", help="client properties (TLS, SASL)")
    p.add_argument("--partition-size-limit-per-response", help=argparse.SUPPRESS)
    return p


def parse_replica_assignment(text: str) -> dict[int, list[int]]:
    """``1:2,2:3`` → ``{0: [1, 2], 1: [2, 3]}``; ValueError as Kafka's tool words it."""
    out: dict[int, list[int]] = {}
    for index, part in enumerate(text.split(",")):
        try:
            brokers = [int(b.strip()) for b in part.split(":")]
        except ValueError:
            raise ValueError(f"Invalid replica assignment '{text}': expected broker ids") from None
        duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
        if duplicates:
            raise ValueError(
                "Partition replica lists may not contain duplicate entries: "
                + ",".join(map(str, duplicates))
            )
        out[index] = brokers
        if len(brokers) != len(out[0]):
            raise ValueError(
                f"Partition {index} has different replication factor: "
                f"[{', '.join(map(str, brokers))}]"
            )
    return out


def parse_configs(values: Sequence[str]) -> dict[str, str]:
    """``key=value`` pairs (blanks around ``=`` ignored); ValueError on any other."""
    out = {}
    for value in values:
        pair = re.split(r"\s*=\s*", value)
        if len(pair) != 2:
            raise ValueError(
                "requirement failed: Invalid topic config: all configs to be added must be in "
                'the format "key=val".'
            )
        out[pair[0].strip()] = pair[1].strip()
    return out


def topic_filter(pattern: str) -> re.Pattern[str]:
    """Kafka's include list: a regular expression over whole names where a comma
    separates alternatives and quotes around it are dropped; ValueError if invalid."""
    cleaned = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", pattern.strip()))
    cleaned = cleaned.replace(",", "|").replace(" ", "")
    try:
        return re.compile(cleaned)
    except re.error as error:
        raise ValueError(f"Invalid topic regular expression '{pattern}': {error}") from None


@dataclass
class Options:
    bootstrap: str
    action: str  # one of ACTIONS
    security: ClientSecurity | None = None
    topic: str | None = None
    topic_id: str | None = None
    configs: dict[str, str] = field(default_factory=dict)
    delete_configs: list[str] = field(default_factory=list)
    partitions: int | None = None
    replication_factor: int | None = None
    assignment: dict[int, list[int]] | None = None
    reports: tuple[str, ...] = ()  # the partition filters of --describe
    topics_with_overrides: bool = False
    if_exists: bool = False
    if_not_exists: bool = False
    exclude_internal: bool = False


def _refuse(a: argparse.Namespace, name: str, allowed: Sequence[str], action: str) -> None:
    value = getattr(a, name)
    if value not in (None, False) and action not in allowed:
        raise UsageError(
            f"Option {option_name(name)} can't be used with option {option_name(action)}"
        )


def parse_args(argv: Sequence[str]) -> Options:
    """Parse and check the options as Kafka's tool does; UsageError on bad input."""
    a = _parser().parse_args(argv)
    for name in UNSUPPORTED:
        if getattr(a, name) is not None:
            raise UsageError(f"Option {option_name(name)} is not supported by {PROG}")
    actions = [name for name in ACTIONS if getattr(a, name)]
    if len(actions) != 1:
        raise UsageError(
            "Command must include exactly one action: --list, --describe, --create, --alter "
            "or --delete"
        )
    (action,) = actions
    if not a.bootstrap_server:
        raise UsageError("--bootstrap-server must be specified")
    options = Options(
        check_bootstrap(a.bootstrap_server), action, security=command_config(a.command_config)
    )
    if action not in ("list", "describe") and a.topic is None:
        raise UsageError('Missing required argument "[topic]"')
    _refuse(a, "config", ("create", "alter"), action)
    _refuse(a, "delete_config", ("alter",), action)
    _refuse(a, "partitions", ("create", "alter"), action)
    _refuse(a, "replication_factor", ("create",), action)
    _refuse(a, "replica_assignment", ("create", "alter"), action)
    _refuse(a, "topic_id", ("describe",), action)
    for name in (*REPORTS, "topics_with_overrides"):
        _refuse(a, name, ("describe",), action)
    _refuse(a, "if_exists", ("alter", "delete", "describe"), action)
    _refuse(a, "if_not_exists", ("create",), action)
    _refuse(a, "exclude_internal", ("list", "describe"), action)
    reports = tuple(name for name in REPORTS if getattr(a, name))
    if reports and a.topics_with_overrides:
        raise UsageError(
            f"Option {option_name(reports[0])} can't be used with option [topics-with-overrides]"
        )
    if action == "create" and a.replica_assignment is not None:
        for name in ("partitions", "replication_factor"):
            if getattr(a, name) is not None:
                raise UsageError(
                    f"Option [replica-assignment] can't be used with option {option_name(name)}"
                )
    if action == "alter" and a.partitions is None and not a.config and not a.delete_config:
        raise UsageError(
            "Option [alter] takes one or more of these options: [partitions], [config], "
            "[delete-config]"
        )
    if action == "alter" and a.replica_assignment is not None and a.partitions is None:
        raise UsageError('Missing required argument "[partitions]"')
    if action == "describe" and a.if_exists and a.topic is None and a.topic_id is None:
        raise UsageError("--topic or --topic-id is required to describe a topic")
    if a.replication_factor is not None and not 1 <= a.replication_factor <= MAX_REPLICATION_FACTOR:
        raise UsageError(
            f"The replication factor must be between 1 and {MAX_REPLICATION_FACTOR} inclusive"
        )
    if a.partitions is not None and a.partitions < 1:
        raise UsageError("The partitions must be greater than 0")
    try:
        options.configs = parse_configs(a.config or [])
        if a.replica_assignment:
            options.assignment = parse_replica_assignment(a.replica_assignment)
        if a.topic is not None and action != "create":
            topic_filter(a.topic)
        if a.topic_id is not None:
            parse_kafka_uuid(a.topic_id)
    except ValueError as error:
        raise UsageError(str(error)) from None
    options.topic, options.topic_id = a.topic, a.topic_id
    options.delete_configs = list(dict.fromkeys(a.delete_config or []))
    options.partitions, options.replication_factor = a.partitions, a.replication_factor
    options.reports, options.topics_with_overrides = reports, a.topics_with_overrides
    options.if_exists, options.if_not_exists = a.if_exists, a.if_not_exists
    options.exclude_internal = a.exclude_internal
    return options


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

    def topics(self) -> list[str]:
        """The topics ``--topic`` matches (every one without it), sorted; internal ones
        left out with ``--exclude-internal``."""
        names = self.admin.list_topics(internal=not self.o.exclude_internal)
        if self.o.topic is None:
            return names
        pattern = topic_filter(self.o.topic)
        return [n for n in names if pattern.fullmatch(n)]

    def existing(self) -> list[str]:
        """The topics matched; none matching a ``--topic`` is an error unless
        ``--if-exists``."""
        topics = self.topics()
        if not topics and self.o.topic and not self.o.if_exists:
            raise CommandError(f"Topic '{self.o.topic}' does not exist as expected")
        return topics

    # -- create

    def run_create(self) -> None:
        name = self.o.topic
        if "." in name or "_" in name:
            print(COLLISION_WARNING, file=self.err)
        new = NewTopic(
            name,
            -1 if self.o.partitions is None else self.o.partitions,
            -1 if self.o.replication_factor is None else self.o.replication_factor,
            self.o.assignment,
            self.o.configs,
        )
        error = self.admin.create_topics([new])[name]
        if error is None:
            print(f"Created topic {name}.", file=self.out)
        elif not (error.code == ErrorCode.TOPIC_ALREADY_EXISTS and self.o.if_not_exists):
            raise CommandError(str(error))

    # -- list

    def run_list(self) -> None:
        for name in self.topics():
            print(name, file=self.out)

    # -- describe

    def described(self) -> dict[str, TopicDescription]:
        if self.o.topic_id is None:
            return self.admin.describe_topics(self.existing())
        wanted = parse_kafka_uuid(self.o.topic_id)
        found = {
            name: d
            for name, d in self.admin.describe_topics().items()
            if d.topic_id == wanted and not (self.o.exclude_internal and name in INTERNAL_TOPICS)
        }
        if not found and not self.o.if_exists:
            raise CommandError(f"TopicId '{self.o.topic_id}' does not exist as expected")
        return found

    def reassignments(self, descriptions: dict[str, TopicDescription]):
        partitions = [(t, p.partition) for t, d in descriptions.items() for p in d.partitions]
        try:
            return self.admin.list_reassignments(partitions)
        except AdminError as error:  # as Kafka's tool: describe without them
            if error.code in (
                ErrorCode.UNSUPPORTED_VERSION,
                ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
            ):
                return {}
            raise

    def run_describe(self) -> None:
        descriptions = self.described()
        if not descriptions:
            return
        configs = self.admin.describe_configs(ConfigResourceType.TOPIC, descriptions)
        live = self.admin.live_brokers()
        reassignments = self.reassignments(descriptions)
        for name, description in descriptions.items():
            topic_configs = configs.get(name, {})
            rows = [
                PartitionRow(
                    name, info, reassignments.get((name, info.partition)), _min_isr(topic_configs)
                )
                for info in description.partitions
            ]
            if not self.o.reports and rows:
                overridden = any(not e.is_default for e in topic_configs.values())
                if not self.o.topics_with_overrides or overridden:
                    rf = replication_factor(rows[0].info, rows[0].reassignment)
                    self.out.write(format_topic(description, rf, topic_configs))
            if self.o.topics_with_overrides:
                continue
            for row in rows:
                if self.selected(row, live):
                    self.out.write(format_partition(row))

    def selected(self, row: PartitionRow, live: list[int]) -> bool:
        if not self.o.reports:
            return True
        checks = {
            "under_replicated_partitions": lambda: row.under_replicated,
            "unavailable_partitions": lambda: row.unavailable(live),
            "under_min_isr_partitions": lambda: row.under_min_isr,
            "at_min_isr_partitions": lambda: row.at_min_isr,
        }
        return any(checks[report]() for report in self.o.reports)

    # -- alter

    def run_alter(self) -> None:
        topics = self.existing()
        if not topics:
            return
        if self.o.partitions is not None:
            self.add_partitions(topics)
        changes = [AlterConfigOp(k, OpType.SET, v) for k, v in self.o.configs.items()]
        changes += [AlterConfigOp(k, OpType.DELETE) for k in self.o.delete_configs]
        if changes:
            results = self.admin.incremental_alter_configs(
                ConfigResourceType.TOPIC, dict.fromkeys(topics, changes)
            )
            for topic, error in results.items():
                if error is None:
                    print(f"Completed updating config for topic {topic}.", file=self.out)
                else:
                    self.error(str(error))

    def add_partitions(self, topics: list[str]) -> None:
        new = {}
        for topic, description in self.admin.describe_topics(topics).items():
            assignments = None
            if self.o.assignment is not None:  # Kafka skips the partitions that exist
                existing = len(description.partitions)
                assignments = [r for p, r in sorted(self.o.assignment.items()) if p >= existing]
            new[topic] = NewPartitions(self.o.partitions, assignments)
        for error in self.admin.create_partitions(new).values():
            if error is not None:
                self.error(str(error))

    # -- delete

    def run_delete(self) -> None:
        for error in self.admin.delete_topics(self.existing()).values():
            if error is not None:
                self.error(str(error))


def _min_isr(configs: dict[str, ConfigEntry]) -> int:
    entry = configs.get("min.insync.replicas")
    try:
        return int(entry.value) if entry is not None and entry.value else DEFAULT_MIN_ISR
    except ValueError:
        return DEFAULT_MIN_ISR


def _execute(options: Options, out: TextIO, err: TextIO) -> int:
    command = _Command(options, out, err, AdminClient(options.bootstrap, security=options.security))
    run = {
        "create": command.run_create,
        "list": command.run_list,
        "describe": command.run_describe,
        "alter": command.run_alter,
        "delete": command.run_delete,
    }[options.action]
    try:
        run()
    except CommandError as error:
        command.error(str(error))
    return 1 if command.failed else 0


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    return run_tool(argv, out, err, parse_args, _execute, failed_due_to="Executing topic command")


if __name__ == "__main__":
    sys.exit(main())
