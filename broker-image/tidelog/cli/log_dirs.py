"""``tidelog-log-dirs``: the log dirs of the brokers, and moves of replicas between the
log dirs of a broker (seed 000: JBOD; seed 003: kafka-log-dirs, and
kafka-reassign-partitions "用于执行…副本文件路径迁移").

* ``--describe`` (Apache Kafka's ``kafka-log-dirs.sh``, same options and output): the
  JSON of every log dir of ``--broker-list`` (all live brokers) with the partitions of
  ``--topic-list`` (all) and their sizes. ``--summary`` (ours) prints a table instead:
  per broker and dir, its state (online, offline, draining), partitions, bytes held,
  usable and total bytes of the volume.
* ``--move`` (ours): ``--broker B --partitions t-0,t-1 --log-dir DIR`` moves those
  replicas of broker B into DIR (AlterReplicaLogDirs).
* ``--drain`` (ours): ``--broker B --log-dir DIR`` marks DIR draining on broker B
  (``log.dirs.draining``: it takes no new partition) and moves every replica off it,
  each where the planner puts it (the dir with the fewest partitions, ties to the most
  free bytes); the broker also keeps moving anything left there by itself.
  ``--undrain`` lets the dir take partitions again.

``--move`` and ``--drain`` return once the moves have started; with ``--wait`` they show
a progress bar of the bytes copied until done. Errors are one ``Error: ...`` line on
stderr with exit status 1.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TextIO

from tidelog.admin import AdminClient
from tidelog.admin.groups import TopicPartition
from tidelog.admin.moves import LogDirDescription
from tidelog.admin.planner import plan_log_dir_drain
from tidelog.cli.common import (
    CommandError,
    Parser,
    UsageError,
    check_bootstrap,
    command_config,
    option_name,
    run_tool,
)
from tidelog.cli.log_dir_moves import LogDirMoves
from tidelog.cli.progress import format_bytes, wait_with_progress
from tidelog.security.client_security import ClientSecurity

__all__ = ["Options", "describe_json", "main", "parse_args", "summary_table"]

PROG = "tidelog-log-dirs"
ACTIONS = ("describe", "move", "drain", "undrain")


def _parser() -> Parser:
    p = Parser(prog=PROG, description="Query log dirs and move replicas between them.")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED: brokers")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--broker-list", metavar="1,2", help="--describe: these brokers")
    p.add_argument("--topic-list", metavar="t1,t2", help="--describe: these topics")
    p.add_argument("--summary", action="store_true", help="--describe: a table per dir")
    p.add_argument("--broker", type=int, help="--move, --drain, --undrain: the broker")
    p.add_argument("--partitions", metavar="t-0,t-1", help="--move: these replicas")
    p.add_argument("--log-dir", metavar="DIR", help="--move: to; --drain, --undrain: which")
    p.add_argument("--wait", action="store_true", help="--move, --drain: until done")
    p.add_argument("--command-config", metavar="FILE", help="client properties (TLS, SASL)")
    return p


@dataclass
class Options:
    bootstrap: str
    action: str
    brokers: list[int] | None = None
    topics: list[str] | None = None
    summary: bool = False
    broker: int | None = None
    partitions: list[TopicPartition] | None = None
    log_dir: str | None = None
    wait: bool = False
    security: ClientSecurity | None = None


def _partition(text: str) -> TopicPartition:
    topic, sep, index = text.strip().rpartition("-")
    if not sep or not topic or not index.isdigit():
        raise UsageError(f"--partitions: {text!r} is not <topic>-<partition>")
    return TopicPartition(topic, int(index))


def parse_args(argv: Sequence[str]) -> Options:
    a = _parser().parse_args(argv)
    actions = [name for name in ACTIONS if getattr(a, name)]
    if len(actions) != 1:
        raise UsageError("Exactly one of --describe, --move, --drain, --undrain is required")
    (action,) = actions
    if not a.bootstrap_server:
        raise UsageError("Missing required option(s): bootstrap-server")
    allowed = {
        "describe": {"broker_list", "topic_list", "summary"},
        "move": {"broker", "partitions", "log_dir", "wait"},
        "drain": {"broker", "log_dir", "wait"},
        "undrain": {"broker", "log_dir"},
    }[action]
    if a.wait and "wait" not in allowed:
        raise UsageError(f"Option [wait] can't be used with [{action}]")
    for name in ("broker_list", "topic_list", "summary", "broker", "partitions", "log_dir"):
        if getattr(a, name) not in (None, False) and name not in allowed:
            raise UsageError(f"Option {option_name(name)} can't be used with [{action}]")
    required = sorted(allowed - {"broker_list", "topic_list", "summary", "wait"})
    missing = [name for name in required if getattr(a, name) is None]
    if missing:
        raise UsageError(f"Missing required option(s): {', '.join(map(option_name, missing))}")
    options = Options(
        check_bootstrap(a.bootstrap_server),
        action,
        summary=a.summary,
        security=command_config(a.command_config),
    )
    if a.broker_list:
        try:
            options.brokers = [int(b) for b in a.broker_list.split(",")]
        except ValueError:
            raise UsageError(f"--broker-list: {a.broker_list!r} is not a list of ids") from None
    if a.topic_list:
        options.topics = [t.strip() for t in a.topic_list.split(",") if t.strip()]
    if a.partitions:
        options.partitions = [_partition(p) for p in a.partitions.split(",")]
    options.broker, options.log_dir, options.wait = a.broker, a.log_dir, a.wait
    return options


def describe_json(dirs: dict[int, list[LogDirDescription]]) -> str:
    """Kafka's JSON of DescribeLogDirs results."""
    brokers = [
        {
            "broker": broker,
            "logDirs": [
                {
                    "partitions": [
                        {
                            "partition": str(tp),
                            "size": r.size,
                            "offsetLag": r.offset_lag,
                            "isFuture": r.is_future,
                        }
                        for tp, r in sorted(d.replicas.items())
                    ],
                    "error": None if d.error is None else d.error.name,
                    "logDir": d.path,
                }
                for d in log_dirs
            ],
        }
        for broker, log_dirs in sorted(dirs.items())
    ]
    return json.dumps({"brokers": brokers, "version": 1}, separators=(",", ":"))


def summary_table(dirs: dict[int, list[LogDirDescription]], draining: dict[int, set[str]]) -> str:
    """One row per broker and dir: state, partitions, bytes held, usable and total."""
    rows = [("BROKER", "LOG-DIR", "STATE", "PARTITIONS", "SIZE", "USABLE", "TOTAL")]
    for broker, log_dirs in sorted(dirs.items()):
        for d in log_dirs:
            state = "offline" if d.error else "draining" if d.path in draining[broker] else "online"
            current = d.current()
            rows.append(
                (
                    str(broker),
                    d.path,
                    state,
                    str(len(current)),
                    format_bytes(sum(r.size for r in current.values())),
                    format_bytes(d.usable_bytes) if d.usable_bytes >= 0 else "-",
                    format_bytes(d.total_bytes) if d.total_bytes >= 0 else "-",
                )
            )
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join(
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        + "\n"
        for row in rows
    )


class LogDirs:
    def __init__(self, admin: AdminClient, options: Options, out: TextIO, err: TextIO):
        self.admin, self.o, self.out, self.err = admin, options, out, err

    def describe(self) -> None:
        self.out.write("Querying brokers for log directories information\n")
        dirs = self.admin.describe_log_dirs(self.o.brokers, self.o.topics)
        self.out.write(
            "Received log directory information from brokers "
            + ",".join(map(str, sorted(dirs)))
            + "\n"
        )
        if self.o.summary:
            self.out.write(summary_table(dirs, {b: self.admin.draining_dirs(b) for b in dirs}))
        else:
            self.out.write(describe_json(dirs) + "\n")

    def _dirs(self) -> list[LogDirDescription]:
        dirs = self.admin.describe_log_dirs([self.o.broker])[self.o.broker]
        if self.o.log_dir not in {d.path for d in dirs}:
            raise CommandError(
                f"{self.o.log_dir} is not a log dir of broker {self.o.broker} (its dirs: "
                + ", ".join(d.path for d in dirs)
                + ")"
            )
        return dirs

    def move(self) -> None:
        self._dirs()
        moves = LogDirMoves({(tp, self.o.broker): self.o.log_dir for tp in self.o.partitions})
        self._start(moves)

    def drain(self) -> None:
        dirs = self._dirs()
        draining = self.admin.draining_dirs(self.o.broker) | {self.o.log_dir}
        self.admin.set_draining_dirs(self.o.broker, sorted(draining))
        moving = {tp for d in dirs for tp in d.future()}
        plan = plan_log_dir_drain(
            {d.path: [tp for tp in d.current() if tp not in moving] for d in dirs if not d.error},
            draining,
            {d.path: d.usable_bytes for d in dirs},
            {tp: r.size for d in dirs for tp, r in d.current().items()},
        )
        self.out.write(
            f"Log dir {self.o.log_dir} of broker {self.o.broker} is draining: it takes no new "
            f"partition; {len(plan)} replicas move off it\n"
        )
        held = next(d for d in dirs if d.path == self.o.log_dir).current()
        moves = LogDirMoves({(m.topic_partition, self.o.broker): m.target for m in plan})
        self._start(moves, emptied=set(held))

    def undrain(self) -> None:
        self._dirs()
        still = self.admin.draining_dirs(self.o.broker) - {self.o.log_dir}
        self.admin.set_draining_dirs(self.o.broker, sorted(still))
        self.out.write(
            f"Log dir {self.o.log_dir} of broker {self.o.broker} takes partitions again\n"
        )

    def _start(self, moves: LogDirMoves, emptied: set[TopicPartition] | None = None) -> None:
        for tp, broker, path in moves.start(self.admin, timeout=10):
            self.out.write(f"Started moving replica {tp}-{broker} to {path}\n")
        self.out.flush()
        if not self.o.wait:
            return

        def poll() -> tuple[int, int, str, bool]:
            dirs = moves.describe(self.admin) if len(moves) else {}
            done, total, left = moves.progress(dirs)
            if emptied is not None:  # a drain ends when the dir holds nothing
                held = self.admin.describe_log_dirs([self.o.broker])[self.o.broker]
                left = sum(len(d.current()) for d in held if d.path == self.o.log_dir)
            note = f"{left} replica(s) left to move"
            return done, total, note, left == 0

        wait_with_progress(poll, stream=self.err)
        self.out.write("Done\n")


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    def execute(options: Options, out: TextIO, err: TextIO) -> None:
        getattr(
            LogDirs(AdminClient(options.bootstrap, security=options.security), options, out, err),
            options.action,
        )()

    return run_tool(argv, out, err, parse_args, execute)


if __name__ == "__main__":
    sys.exit(main())
