"""``tidelog-leader-election``: preferred or unclean leader elections, with the options
and the output of Apache Kafka's ``kafka-leader-election.sh`` (3.9).

``--election-type preferred`` moves each partition's leadership to its preferred replica
(the first of its assignment) where that one is live and in sync (seed 000: 首选首领);
``unclean`` gives a partition without a live leader the first live replica, in sync or
not. The partitions are every partition (``--all-topic-partitions``), one
(``--topic`` and ``--partition``), or those of a JSON file
(``--path-to-json-file``, ``{"partitions": [{"topic": "t", "partition": 0}, ...]}``).

The output, on stdout as Kafka's::

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2
    Error completing leader election (PREFERRED) for partition: t-3: <error>

Where it differs from Kafka's tool, on purpose:

* Bad options and failures go to stderr as one ``Error: ...`` line (for failed
  elections ``Error: N replica(s) could not be elected``, after their lines) with exit
  status 1; Kafka's tool adds a stack trace.
* A failed partition's error is the Kafka error name and the broker's message
  (``PREFERRED_LEADER_NOT_AVAILABLE: ...``), not a Java exception class.
* Partitions are listed in topic and partition order (Kafka's order is that of a hash set).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.groups import TopicPartition
from tidelog.admin.topics import ElectionType
from tidelog.cli.common import (
    CommandError,
    Parser,
    UsageError,
    check_bootstrap,
    command_config,
    read_text,
    run_tool,
)
from tidelog.protocol.errors import ErrorCode
from tidelog.security.client_security import ClientSecurity

__all__ = [
    "CommandError",
    "Options",
    "UsageError",
    "format_results",
    "main",
    "parse_args",
    "parse_election_file",
]

PROG = "tidelog-leader-election"
SCOPES = ("topic", "all-topic-partitions", "path-to-json-file")


def _parser() -> Parser:
    p = Parser(
        prog=PROG,
        description="Elect a new leader for a set of topic partitions: the preferred replica "
        "or, for partitions without a leader, any live one (the options of Kafka's "
        "kafka-leader-election.sh).",
    )
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED: brokers")
    p.add_argument("--election-type", metavar="preferred|unclean", help="REQUIRED")
    p.add_argument("--topic", help="the topic of the partition to elect a leader for")
    p.add_argument("--partition", type=int, help="the partition (REQUIRED with --topic)")
    p.add_argument("--all-topic-partitions", action="store_true", help="every partition")
    p.add_argument("--path-to-json-file", metavar="FILE", help='{"partitions": [{"topic": ...')
    p.add_argument(
        "--admin.config", dest="admin_config", metavar="FILE", help="client properties (TLS, SASL)"
    )
    p.add_argument("--command-config", metavar="FILE", help="the same as --admin.config")
    return p


@dataclass
class Options:
    bootstrap: str
    election_type: ElectionType
    partitions: list[TopicPartition] | None  # None: every partition
    json_file: str | None = None
    security: ClientSecurity | None = None


def parse_args(argv: Sequence[str]) -> Options:
    """Parse and check the options as Kafka's tool does; UsageError on bad input. The
    JSON file is read later, by :func:`parse_election_file`."""
    a = _parser().parse_args(argv)
    if a.admin_config is not None and a.command_config is not None:
        raise UsageError("Option [admin.config] can't be used with option [command-config]")
    missing = [
        name
        for name, value in (
            ("bootstrap-server", a.bootstrap_server),
            ("election-type", a.election_type),
        )
        if value is None
    ]
    if missing:
        raise UsageError(f"Missing required option(s): {', '.join(missing)}")
    bootstrap = check_bootstrap(a.bootstrap_server)
    try:
        election_type = ElectionType[a.election_type.strip().upper()]
    except KeyError:
        raise UsageError(
            f"Invalid election type '{a.election_type}': expected preferred or unclean"
        ) from None
    given = [a.topic is not None, a.all_topic_partitions, a.path_to_json_file is not None]
    if sum(given) != 1:
        raise UsageError(
            f"One and only one of the following options is required: {', '.join(SCOPES)}"
        )
    if a.topic is not None and a.partition is None:
        raise UsageError("Missing required option(s): partition")
    if a.topic is None and a.partition is not None:
        raise UsageError("Option partition is only allowed if topic is used")
    if a.partition is not None and a.partition < 0:
        raise UsageError(f"Invalid partition {a.partition}: partitions are numbered from 0")
    partitions = None if a.topic is None else [TopicPartition(a.topic, a.partition)]
    if a.admin_config is not None:
        security = command_config(a.admin_config, "admin.config")
    else:
        security = command_config(a.command_config)
    return Options(bootstrap, election_type, partitions, a.path_to_json_file, security)


def parse_election_file(text: str) -> list[TopicPartition]:
    """The partitions of an election JSON file, ``{"partitions": [{"topic": "t",
    "partition": 0}, ...]}``; ValueError on anything else or on a duplicate."""
    if not text.strip():
        raise ValueError("Replica election data is empty")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as error:
        raise ValueError(f"Replica election data is not valid JSON: {error}") from None
    if not isinstance(data, dict) or "partitions" not in data:
        raise ValueError('Replica election data is missing "partitions" field')
    if not isinstance(data["partitions"], list):
        raise ValueError('Replica election data: "partitions" must be a list')
    partitions = []
    for entry in data["partitions"]:
        topic = entry.get("topic") if isinstance(entry, dict) else None
        partition = entry.get("partition") if isinstance(entry, dict) else None
        if not isinstance(topic, str) or type(partition) is not int or partition < 0:
            raise ValueError(
                f"Replica election data: {json.dumps(entry)} is not "
                '{"topic": <name>, "partition": <number>}'
            )
        partitions.append(TopicPartition(topic, partition))
    duplicates = sorted({tp for tp in partitions if partitions.count(tp) > 1})
    if duplicates:
        raise ValueError(
            "Replica election data contains duplicate partitions: "
            + ",".join(str(tp) for tp in duplicates)
        )
    return sorted(partitions)


def format_results(
    election_type: ElectionType, results: dict[TopicPartition, AdminError | None]
) -> tuple[str, int]:
    """Kafka's lines for the election results, and how many partitions failed."""
    name = election_type.name
    done = [tp for tp, e in sorted(results.items()) if e is None]
    noop = [
        tp
        for tp, e in sorted(results.items())
        if e is not None and e.code == ErrorCode.ELECTION_NOT_NEEDED
    ]
    failed = {
        tp: e
        for tp, e in sorted(results.items())
        if e is not None and e.code != ErrorCode.ELECTION_NOT_NEEDED
    }
    lines = []
    if done:
        lines.append(
            f"Successfully completed leader election ({name}) for partitions "
            + ", ".join(map(str, done))
        )
    if noop:
        lines.append("Valid replica already elected for partitions " + ", ".join(map(str, noop)))
    for tp, error in failed.items():
        lines.append(
            f"Error completing leader election ({name}) for partition: {tp}: "
            f"{error.code.name}: {error}"
        )
    return "".join(f"{line}\n" for line in lines), len(failed)


def _parse(argv: list[str]) -> tuple[Options, list[TopicPartition] | None]:
    options = parse_args(argv)
    if options.json_file is None:
        return options, options.partitions
    return options, parse_election_file(read_text(options.json_file))


def _elect(parsed, out: TextIO, err: TextIO) -> int:
    options, partitions = parsed
    results = AdminClient(options.bootstrap, security=options.security).elect_leaders(
        options.election_type, partitions
    )
    text, failed = format_results(options.election_type, results)
    out.write(text)
    out.flush()
    if failed:
        print(f"Error: {failed} replica(s) could not be elected", file=err)
        return 1
    return 0


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    return run_tool(argv, out, err, _parse, _elect, failed_due_to="Leader election")


if __name__ == "__main__":
    sys.exit(main())
