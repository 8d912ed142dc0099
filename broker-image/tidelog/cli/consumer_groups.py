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

This module runs the commands against the cluster; the options are read in
:mod:`tidelog.cli.consumer_group_options`, the reset strategies are in
:mod:`tidelog.cli.offset_reset`, the tables in :mod:`tidelog.cli.group_tables`.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterable, Sequence
from typing import TextIO

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.groups import GroupDescription, TopicPartition
from tidelog.cli.common import CommandError, read_text, run_tool
from tidelog.cli.consumer_group_options import Options, parse_args, parse_topic_args
from tidelog.cli.group_tables import (
    MISSING,
    OffsetRow,
    format_delete_offsets,
    format_export,
    format_group_states,
    format_members,
    format_offsets,
    format_reset,
    format_state,
)
from tidelog.cli.offset_reset import ResetError, ResetPlan, ResetSpec, parse_reset_file, plan_reset
from tidelog.protocol.consumer_protocol import ConsumerProtocolError
from tidelog.protocol.errors import ErrorCode

__all__ = ["CommandError", "main"]

INACTIVE_STATES = ("Empty", "Dead")
REBALANCING_STATES = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")


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
        rows = [(g.group_id, g.state) for g in listings]
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
        text = read_text(path, "the reset plan")
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
        try:
            return plan_reset(self.admin, spec, partitions, committed, from_file)
        except ResetError as error:
            raise CommandError(str(error)) from None


def _execute(options: Options, out: TextIO, err: TextIO) -> int:
    admin = AdminClient(
        options.bootstrap, timeout=options.timeout_ms / 1000, security=options.security
    )
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
    except ConsumerProtocolError as error:
        command.error(f"Executing consumer group command failed due to {error}")
    return 1 if command.failed else 0


def main(
    argv: Sequence[str] | None = None, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    return run_tool(
        argv, out, err, parse_args, _execute, failed_due_to="Executing consumer group command"
    )


if __name__ == "__main__":
    sys.exit(main())
