"""``tidelog-reassign-partitions``: move partition replicas between brokers and between
the log dirs of a broker, with the options, output and exit codes of Apache Kafka's
``kafka-reassign-partitions.sh`` (3.9) (seed 003: 分区重分配, 修改主题限速).

* ``--generate`` proposes a reassignment file. Beside Kafka's ``--broker-list`` (with
  ``--topics-to-move-json-file``: spread those topics over those brokers), intents:
  ``--add-brokers``, ``--remove-brokers`` and ``--rebalance``, each for the topics of
  the file or every topic. Proposals come from the planner (``tidelog.admin.planner``):
  rack-diverse, balanced within one, moving as few replicas and bytes as it can, and
  listing only the partitions that change (Kafka's reshuffles and lists all of them);
  a summary of what it moves goes to stderr.
* ``--execute`` starts the moves of a reassignment file (AlterPartitionReassignments,
  and AlterReplicaLogDirs for ``log_dirs`` entries), with ``--throttle`` (bytes/s between
  brokers) and ``--replica-alter-log-dirs-throttle`` (bytes/s between the dirs of a
  broker) set as Kafka's tool sets them; ``--wait`` (ours) shows a progress bar of the
  bytes copied until everything is done, then verifies as ``--verify`` does.
* ``--verify`` reports each partition and log-dir move; once all are done it removes
  the throttles (unless ``--preserve-throttles``), as Kafka's does.
* ``--cancel`` cancels the file's moves in flight (the original replicas come back)
  and removes the throttles; ``--list`` shows the reassignments in flight.

Errors are one ``Error: ...`` line on stderr with exit status 1.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TextIO

from tidelog.admin import AdminClient
from tidelog.admin.groups import TopicPartition
from tidelog.admin.moves import (
    BROKER_THROTTLE_RATES,
    FOLLOWER_REPLICAS,
    LEADER_REPLICAS,
    LOG_DIR_THROTTLE_RATE,
)
from tidelog.admin.planner import (
    ClusterState,
    plan_add_brokers,
    plan_rebalance_replicas,
    plan_remove_brokers,
)
from tidelog.cli.common import (
    CommandError,
    Parser,
    UsageError,
    check_bootstrap,
    command_config,
    option_name,
    read_text,
    run_tool,
)
from tidelog.cli.log_dir_moves import LogDirMoves
from tidelog.cli.progress import format_bytes, wait_with_progress
from tidelog.cli.reassignment_file import (
    PartitionTarget,
    assignment_json,
    format_ongoing,
    parse_reassignment_file,
    parse_topics_file,
    throttled_replicas,
)
from tidelog.security.client_security import ClientSecurity

__all__ = ["Options", "main", "parse_args"]

PROG = "tidelog-reassign-partitions"
ACTIONS = ("generate", "execute", "verify", "cancel", "list")
INTENTS = ("broker_list", "add_brokers", "remove_brokers", "rebalance")
EXECUTE_ONLY = ("throttle", "replica_alter_log_dirs_throttle", "additional", "wait")
EXISTING_REASSIGNMENT = (
    "Cannot execute because there is an existing partition assignment.  Use --additional "
    "to override this and create a new partition assignment in addition to the existing "
    "one. The --additional flag can also be used to change the throttle by resubmitting "
    "the current reassignment."
)


def _parser() -> Parser:
    p = Parser(prog=PROG, description="Move topic partitions between replicas and log dirs.")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT[,...]", help="REQUIRED: brokers")
    p.add_argument("--command-config", metavar="FILE", help="client properties (TLS, SASL)")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--reassignment-json-file", metavar="FILE")
    p.add_argument("--topics-to-move-json-file", metavar="FILE")
    p.add_argument("--broker-list", metavar="1,2,3", help="--generate: spread over these")
    p.add_argument("--add-brokers", metavar="4,5", help="--generate: bring these in")
    p.add_argument("--remove-brokers", metavar="1", help="--generate: move everything off")
    p.add_argument("--rebalance", action="store_true", help="--generate: even out replicas")
    p.add_argument("--disable-rack-aware", action="store_true")
    p.add_argument("--throttle", type=int, metavar="BYTES/S")
    p.add_argument("--replica-alter-log-dirs-throttle", type=int, metavar="BYTES/S")
    p.add_argument("--additional", action="store_true")
    p.add_argument("--preserve-throttles", action="store_true")
    p.add_argument("--timeout", type=int, default=10000, metavar="MS")
    p.add_argument("--wait", action="store_true", help="--execute: until done, with progress")
    return p


@dataclass
class Options:
    bootstrap: str
    action: str
    reassignment_file: str | None = None
    topics_file: str | None = None
    intent: str | None = None
    brokers: tuple[int, ...] = ()
    disable_rack_aware: bool = False
    throttle: int | None = None
    log_dir_throttle: int | None = None
    additional: bool = False
    preserve_throttles: bool = False
    timeout_ms: int = 10000
    security: ClientSecurity | None = None
    wait: bool = False


def _broker_ids(option: str, value: str) -> tuple[int, ...]:
    try:
        ids = tuple(int(b) for b in value.split(","))
    except ValueError:
        raise UsageError(f"--{option}: {value!r} is not a list of broker ids") from None
    if any(b < 0 for b in ids) or len(set(ids)) != len(ids):
        raise UsageError(f"--{option}: {value!r} must list distinct broker ids")
    return ids


def parse_args(argv: Sequence[str]) -> Options:
    """Parse and check the options as Kafka's tool does; UsageError on bad input."""
    a = _parser().parse_args(argv)
    actions = [name for name in ACTIONS if getattr(a, name)]
    if len(actions) != 1:
        raise UsageError(
            "Command must include exactly one action: --generate, --execute, --verify, "
            "--cancel, --list"
        )
    (action,) = actions
    if not a.bootstrap_server:
        raise UsageError("Missing required option(s): bootstrap-server")
    for name in EXECUTE_ONLY:
        if getattr(a, name) not in (None, False) and action != "execute":
            raise UsageError(f"Option {option_name(name)} can only be used with [execute]")
    for name in (*INTENTS, "topics_to_move_json_file", "disable_rack_aware"):
        if getattr(a, name) not in (None, False) and action != "generate":
            raise UsageError(f"Option {option_name(name)} can only be used with [generate]")
    if action in ("execute", "verify", "cancel") and not a.reassignment_json_file:
        raise UsageError(f"Missing required option(s): reassignment-json-file with [{action}]")
    for name in ("throttle", "replica_alter_log_dirs_throttle"):
        if getattr(a, name) is not None and getattr(a, name) < 0:
            raise UsageError(f"{option_name(name)} must be a number of bytes/s, not negative")
    options = Options(
        check_bootstrap(a.bootstrap_server),
        action,
        a.reassignment_json_file,
        a.topics_to_move_json_file,
        disable_rack_aware=a.disable_rack_aware,
        throttle=a.throttle,
        log_dir_throttle=a.replica_alter_log_dirs_throttle,
        additional=a.additional,
        preserve_throttles=a.preserve_throttles,
        timeout_ms=a.timeout,
        wait=a.wait,
        security=command_config(a.command_config),
    )
    if action == "generate":
        intents = [name for name in INTENTS if getattr(a, name)]
        if len(intents) != 1:
            raise UsageError(
                "--generate needs exactly one of --broker-list, --add-brokers, "
                "--remove-brokers, --rebalance"
            )
        options.intent = intents[0]
        if options.intent == "broker_list" and not a.topics_to_move_json_file:
            raise UsageError("Missing required option(s): topics-to-move-json-file")
        if options.intent != "rebalance":
            value = getattr(a, options.intent)
            options.brokers = _broker_ids(options.intent.replace("_", "-"), value)
    return options


class Reassign:
    """The actions, over an admin client; output to ``out``, progress to ``err``."""

    def __init__(self, admin: AdminClient, options: Options, out: TextIO, err: TextIO):
        self.admin, self.o, self.out, self.err = admin, options, out, err

    def write(self, *lines: str) -> None:
        self.out.write("".join(f"{line}\n" for line in lines))
        self.out.flush()

    # -- generate -----------------------------------------------------------------------------

    def generate(self) -> None:
        topics = None
        if self.o.topics_file is not None:
            topics = parse_topics_file(read_text(self.o.topics_file, "the topics-to-move file"))
        state = self.admin.cluster_state(topics)
        if self.o.disable_rack_aware:
            state = replace(state, brokers=dict.fromkeys(state.brokers))
        if self.o.intent == "broker_list":
            unknown = sorted(set(self.o.brokers) - set(state.brokers))
            if unknown:
                raise CommandError(_unknown_brokers(unknown))
            listed = ClusterState(
                state.assignment, {b: state.brokers[b] for b in self.o.brokers}, state.sizes
            )
            plan = plan_rebalance_replicas(listed)
        elif self.o.intent == "add_brokers":
            plan = plan_add_brokers(state, self.o.brokers)
        elif self.o.intent == "remove_brokers":
            plan = plan_remove_brokers(state, self.o.brokers)
        else:
            plan = plan_rebalance_replicas(state)
        moves = plan.moves
        self.write(
            "Current partition replica assignment",
            assignment_json({tp: plan.current[tp] for tp in moves}),
            "",
            "Proposed partition reassignment configuration",
            assignment_json(moves),
        )
        repairs = f", {plan.rack_repairs} to spread racks" if plan.rack_repairs else ""
        if plan.leader_repairs:
            repairs += f", {plan.leader_repairs} to even preferred leaders"
        print(
            f"Plan: {len(moves)} partitions change, {plan.replicas_moved} replicas move "
            f"(lower bound {plan.lower_bound}{repairs}), {format_bytes(plan.bytes_moved)} "
            f"to copy, {plan.leaders_moved} preferred leaders change",
            file=self.err,
        )

    # -- execute -------------------------------------------------------------------------------

    def _targets(self) -> dict[TopicPartition, PartitionTarget]:
        return parse_reassignment_file(read_text(self.o.reassignment_file, "the reassignment"))

    def _current(self, targets) -> dict[TopicPartition, tuple[int, ...]]:
        described = self.admin.describe_topics(sorted({tp.topic for tp in targets}))
        current = {
            TopicPartition(name, p.partition): p.replicas
            for name, topic in described.items()
            for p in topic.partitions
        }
        missing = [tp for tp in targets if tp not in current]
        if missing:
            raise CommandError(f"Unable to find partition: {missing[0]}")
        return {tp: current[tp] for tp in targets}

    def execute(self) -> None:
        targets = self._targets()
        current = self._current(targets)
        live = set(self.admin.broker_racks())
        unknown = sorted({b for t in targets.values() for b in t.replicas} - live)
        if unknown:
            raise CommandError(_unknown_brokers(unknown))
        if not self.o.additional and self.admin.list_reassignments():
            raise CommandError(EXISTING_REASSIGNMENT)
        sizes = self.admin.cluster_state(sorted({tp.topic for tp in targets})).sizes
        self.write(
            "Current partition replica assignment",
            "",
            assignment_json(current),
            "",
            "Save this to use as the --reassignment-json-file option during rollback",
        )
        moving = {tp: t.replicas for tp, t in targets.items() if t.replicas != current[tp]}
        dir_moves = LogDirMoves.of(targets)
        self._throttle(current, targets, moving, dir_moves)
        # every partition of the file, as Kafka's tool (an unchanged one completes at once)
        results = self.admin.alter_partition_reassignments(
            {tp: t.replicas for tp, t in targets.items()}
        )
        failed = {tp: e for tp, e in results.items() if e is not None}
        if failed:
            lines = [f"{tp}: {e.code.name}: {e}" for tp, e in sorted(failed.items())]
            raise CommandError("Error reassigning partition(s):\n" + "\n".join(lines))
        word = "reassignments" if len(targets) > 1 else "reassignment"
        self.write(f"Successfully started partition {word} for {_names(targets)}")
        for tp, broker, path in dir_moves.start(self.admin, self.o.timeout_ms / 1000):
            self.write(
                f"Successfully started moving log directory to {path} for replica {tp} "
                f"with broker {broker} "
            )
        if self.o.wait:
            self._wait(current, moving, dir_moves, sizes)
            self.verify(targets)

    def _throttle(self, current, targets, moving, dir_moves: LogDirMoves) -> None:
        if self.o.throttle is None and self.o.log_dir_throttle is None:
            return
        self.write(
            "Warning: You must run --verify periodically, until the reassignment completes, "
            "to ensure the throttle is removed."
        )
        rates: dict[int, dict[str, int]] = {}
        topics: dict[str, dict[str, str]] = {}
        if self.o.throttle is not None:
            brokers = {b for tp in moving for b in (*current[tp], *moving[tp])}
            for broker in brokers:
                rates.setdefault(broker, {}).update(
                    dict.fromkeys(BROKER_THROTTLE_RATES, self.o.throttle)
                )
            targets_replicas = {tp: t.replicas for tp, t in targets.items()}
            for topic, (leader, follower) in throttled_replicas(current, targets_replicas).items():
                topics[topic] = {LEADER_REPLICAS: leader, FOLLOWER_REPLICAS: follower}
        if self.o.log_dir_throttle is not None:
            for broker in dir_moves.brokers():
                rates.setdefault(broker, {})[LOG_DIR_THROTTLE_RATE] = self.o.log_dir_throttle
        self.admin.set_throttles(rates, topics)
        if self.o.throttle is not None:
            self.write(f"The inter-broker throttle limit was set to {self.o.throttle} B/s")
        if self.o.log_dir_throttle is not None:
            self.write(
                f"The replica-alter-dir throttle limit was set to {self.o.log_dir_throttle} B/s"
            )

    def _wait(self, current, moving, dir_moves: LogDirMoves, sizes) -> None:
        adding = {tp: [b for b in r if b not in current[tp]] for tp, r in moving.items()}
        brokers = {b for bs in adding.values() for b in bs} | dir_moves.brokers()
        topics = sorted({tp.topic for tp in (*moving, *dir_moves.partitions())})

        def poll() -> tuple[int, int, str, bool]:
            ongoing = set(self.admin.list_reassignments(moving)) if moving else set()
            dirs = self.admin.describe_log_dirs(brokers, topics) if brokers else {}
            total = done = 0
            for tp, new in adding.items():
                for broker in new:
                    size = sizes.get(tp, 0)
                    total += size
                    copied = _replica_size(dirs.get(broker, ()), tp)
                    done += size if tp not in ongoing else min(copied, size)
            moved, moves_total, moves_left = dir_moves.progress(dirs)
            finished = not ongoing and not moves_left
            note = f"{len(moving) - len(ongoing)}/{len(moving)} partitions"
            if dir_moves:
                note += f", {len(dir_moves) - moves_left}/{len(dir_moves)} log-dir moves"
            return done + moved, total + moves_total, note, finished

        wait_with_progress(poll, stream=self.err)

    # -- verify and cancel ------------------------------------------------------------------------

    def verify(self, targets=None) -> None:
        targets = self._targets() if targets is None else targets
        current = self._current(targets)
        ongoing = self.admin.list_reassignments(targets)
        lines = ["Status of partition reassignment:"]
        pending = 0
        for tp, target in targets.items():
            if tp in ongoing:
                pending += 1
                lines.append(f"Reassignment of partition {tp} is still in progress.")
            elif tuple(current[tp]) == target.replicas:
                lines.append(f"Reassignment of partition {tp} is completed.")
            else:
                lines.append(
                    f"There is no active reassignment of partition {tp}, but replica set is "
                    f"{_ids(current[tp])} rather than {_ids(target.replicas)}."
                )
        dir_moves = LogDirMoves.of(targets)
        states, moving_dirs = dir_moves.states(self.admin)
        lines += states
        self.write(*lines, "")
        if not pending and not moving_dirs and not self.o.preserve_throttles:
            self._clear_throttles(targets)

    def _clear_throttles(self, targets) -> None:
        brokers = sorted(self.admin.broker_racks())
        topics = sorted({tp.topic for tp in targets})
        self.admin.clear_throttles(brokers, topics)
        word = "topics" if len(topics) > 1 else "topic"
        self.write(
            f"Clearing broker-level throttles on brokers {_ids(brokers)}",
            f"Clearing topic-level throttles on {word} {','.join(topics)}",
        )

    def cancel(self) -> None:
        targets = self._targets()
        ongoing = self.admin.list_reassignments(targets)
        if ongoing:
            results = self.admin.alter_partition_reassignments(dict.fromkeys(ongoing))
            failed = {tp: e for tp, e in results.items() if e is not None}
            if failed:
                lines = [f"{tp}: {e.code.name}: {e}" for tp, e in sorted(failed.items())]
                raise CommandError("Error cancelling partition(s):\n" + "\n".join(lines))
            word = "reassignments" if len(ongoing) > 1 else "reassignment"
            self.write(f"Successfully cancelled partition {word} for: {_names(ongoing)}")
        else:
            self.write("None of the specified partition reassignments are active.")
        cancelled = LogDirMoves.of(targets).cancel(self.admin)
        if cancelled:
            self.write(f"Successfully cancelled log directory moves for: {', '.join(cancelled)}")
        else:
            self.write("None of the specified partition moves are active.")
        if not self.o.preserve_throttles:
            self._clear_throttles(targets)

    def list(self) -> None:
        self.out.write(format_ongoing(self.admin.list_reassignments()))


def _replica_size(dirs, tp: TopicPartition) -> int:
    return max((d.current()[tp].size for d in dirs if tp in d.current()), default=0)


def _unknown_brokers(brokers: Sequence[int]) -> str:
    return f"Unknown broker id{'s' if len(brokers) > 1 else ''} {_ids(brokers)}"


def _ids(brokers) -> str:
    return ",".join(map(str, brokers))


def _names(partitions) -> str:
    return ",".join(str(tp) for tp in sorted(partitions))


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    def execute(options: Options, out: TextIO, err: TextIO) -> None:
        command = Reassign(
            AdminClient(options.bootstrap, security=options.security), options, out, err
        )
        getattr(command, options.action)()

    return run_tool(argv, out, err, parse_args, execute)


if __name__ == "__main__":
    sys.exit(main())
