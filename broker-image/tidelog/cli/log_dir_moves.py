"""Moves of replicas between the log dirs of their brokers, as the tools start, follow,
report and cancel them (AlterReplicaLogDirs, DescribeLogDirs; seed 000: JBOD).

A move is done when the broker's current replica lives in the wanted dir and no future
replica is left; until then its progress is the future replica's bytes against the
current one's.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from tidelog.admin import AdminClient
from tidelog.admin.groups import TopicPartition
from tidelog.admin.moves import LogDirDescription
from tidelog.cli.common import CommandError
from tidelog.protocol.errors import ErrorCode

__all__ = ["LogDirMoves"]

Replica = tuple[TopicPartition, int]  # a partition's replica on a broker


@dataclass(frozen=True)
class _Where:
    """Where a broker keeps a partition: its current and future dirs and sizes."""

    current: str | None = None
    current_size: int = 0
    future: str | None = None
    future_size: int = 0


def _where(dirs: Iterable[LogDirDescription], tp: TopicPartition) -> _Where:
    found = _Where()
    for log_dir in dirs:
        replica = log_dir.replicas.get(tp)
        if replica is None:
            continue
        if replica.is_future:
            found = _Where(found.current, found.current_size, log_dir.path, replica.size)
        else:
            found = _Where(log_dir.path, replica.size, found.future, found.future_size)
    return found


@dataclass(frozen=True)
class LogDirMoves:
    """Replica → the log dir it must move to."""

    wanted: Mapping[Replica, str]

    @classmethod
    def of(cls, targets) -> LogDirMoves:
        """The moves of a reassignment file's targets (their non-``any`` log dirs)."""
        return cls(
            {
                (tp, broker): path
                for tp, target in targets.items()
                for broker, path in target.log_dir_moves().items()
            }
        )

    def __len__(self) -> int:
        return len(self.wanted)

    def brokers(self) -> set[int]:
        return {broker for _, broker in self.wanted}

    def partitions(self) -> set[TopicPartition]:
        return {tp for tp, _ in self.wanted}

    def _by_broker(self) -> dict[int, dict[TopicPartition, str]]:
        by_broker: dict[int, dict[TopicPartition, str]] = {}
        for (tp, broker), path in sorted(self.wanted.items()):
            by_broker.setdefault(broker, {})[tp] = path
        return by_broker

    def describe(self, admin: AdminClient) -> dict[int, list[LogDirDescription]]:
        """The log dirs of the brokers that move, for the topics that move."""
        return admin.describe_log_dirs(
            self.brokers(), sorted({tp.topic for tp in self.partitions()})
        )

    def start(self, admin: AdminClient, timeout: float) -> list[tuple[TopicPartition, int, str]]:
        """Ask each broker for its moves; a replica the broker does not host yet (it is
        being added) is asked again until ``timeout`` seconds pass. CommandError on any
        other error, or on the timeout."""
        deadline = time.monotonic() + timeout
        started = []
        for broker, moves in self._by_broker().items():
            left = dict(moves)
            while left:
                results = admin.alter_replica_log_dirs(broker, left)
                for tp, code in sorted(results.items()):
                    if code == ErrorCode.NONE:
                        started.append((tp, broker, left.pop(tp)))
                    elif code != ErrorCode.REPLICA_NOT_AVAILABLE:
                        raise CommandError(
                            f"Cannot move replica {tp}-{broker} to {left[tp]}: {code.name}"
                        )
                if left and time.monotonic() > deadline:
                    names = ", ".join(f"{tp}-{broker}" for tp in left)
                    raise CommandError(
                        f"Timed out before log directory move(s) could be started for {names}"
                    )
                if left:
                    time.sleep(0.2)
        return started

    def progress(self, dirs: Mapping[int, list[LogDirDescription]]) -> tuple[int, int, int]:
        """(bytes copied, bytes to copy, moves not done) from DescribeLogDirs."""
        done = total = left = 0
        for (tp, broker), path in self.wanted.items():
            where = _where(dirs.get(broker, ()), tp)
            total += where.current_size
            if where.current == path and where.future is None:
                done += where.current_size
            else:
                left += 1
                done += min(where.future_size, where.current_size)
        return done, total, left

    def states(self, admin: AdminClient) -> tuple[list[str], int]:
        """``--verify``'s line for each move, and how many are still in progress."""
        if not self.wanted:
            return [], 0
        dirs = admin.describe_log_dirs(
            self.brokers(), sorted({tp.topic for tp in self.partitions()})
        )
        lines, pending = [], 0
        for (tp, broker), path in sorted(self.wanted.items()):
            where = _where(dirs[broker], tp)
            if where.future == path:
                pending += 1
                lines.append(f"Reassignment of replica {tp}-{broker} is still in progress.")
            elif where.current == path and where.future is None:
                lines.append(f"Reassignment of replica {tp}-{broker} completed successfully.")
            elif where.current is None:
                lines.append(
                    f"Partition {tp} cannot be found in any live log directory on broker "
                    f"{broker}."
                )
            else:
                lines.append(
                    f"Partition {tp} on broker {broker} is not being moved from log dir "
                    f"{where.current} to {path}."
                )
        return lines, pending

    def cancel(self, admin: AdminClient) -> list[str]:
        """Cancel the moves in flight (each replica is asked to stay in its current dir,
        which drops its future replica); the ``<partition>-<broker>`` names cancelled."""
        if not self.wanted:
            return []
        dirs = admin.describe_log_dirs(
            self.brokers(), sorted({tp.topic for tp in self.partitions()})
        )
        cancelled = []
        for broker, moves in self._by_broker().items():
            staying = {}
            for tp in moves:
                where = _where(dirs[broker], tp)
                if where.future is not None and where.current is not None:
                    staying[tp] = where.current
            if not staying:
                continue
            for tp, code in admin.alter_replica_log_dirs(broker, staying).items():
                if code != ErrorCode.NONE:
                    raise CommandError(f"Cannot cancel the move of {tp}-{broker}: {code.name}")
                cancelled.append(f"{tp}-{broker}")
        return sorted(cancelled)
