"""The LogManager's periodic work: retention of the logs that are not compacted, the
flusher, and the offset checkpoints.

Flushing (Kafka's "kafka-log-flusher"): every ``flush_scheduler_interval_ms``
(``log.flush.scheduler.interval.ms``; Kafka's default Long.MAX_VALUE leaves it off) the
scheduler's thread flushes each log, future logs included, whose last flush is at least
its ``flush.ms`` old (:meth:`LogManager.flush_dirty_logs`). The first run comes one
interval after :meth:`LogManager.startup`; a non-positive interval runs it once then, as
Kafka's scheduler does with a period that is not positive. ``flush.messages`` is the
log's own (see ``storage/log.py``).

A part of :class:`tidelog.storage.log_manager.LogManager`, which mixes
:class:`LogManagerTasks` in; the tables and directory handling these methods use are the
LogManager's.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path

from tidelog.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    write_offset_checkpoint,
)
from tidelog.storage.cleaner import LogCleaner
from tidelog.storage.errors import KafkaStorageError
from tidelog.storage.log import Log
from tidelog.storage.log_table import LogTable, TopicPartition
from tidelog.storage.scheduler import Scheduler

__all__ = ["LogManagerTasks"]


class LogManagerTasks:
    """The periodic half of :class:`~tidelog.storage.log_manager.LogManager`."""

    # The LogManager's state and helpers that these tasks use (see log_manager.py).
    cleaner: LogCleaner
    scheduler: Scheduler
    _clock: Callable[[], float]
    _checkpoint_lock: threading.Lock
    _flush_scheduler_interval_ms: int
    _shutting_down: bool
    _logs: LogTable
    _future_logs: LogTable
    guarded: Callable[..., object]

    def cleanup_logs(self) -> int:
        """Retention for the logs that are not compacted (the cleaner threads apply it to
        compacted ones after cleaning them); returns the number of segments deleted."""
        deleted = 0
        paused = self.cleaner.manager.pause_cleaning_for_non_compacted_partitions()
        try:
            for _, log in paused:
                try:
                    deleted += self.guarded(log, log.delete_old_segments)
                except KafkaStorageError:
                    continue
        finally:
            self.cleaner.resume_cleaning(tp for tp, _ in paused)
        return deleted

    def flush_dirty_logs(self) -> None:
        """Flush every log, future logs included, whose recovery point last moved
        ``flush.ms`` or longer ago (by the injected clock). A log whose directory fails
        meanwhile is skipped; its directory goes offline."""
        now_ms = int(self._clock() * 1000)
        for log in [*list(self._logs.values()), *list(self._future_logs.values())]:
            if now_ms - log.last_flushed_ms < log.config.flush_ms:
                continue
            try:
                self.guarded(log, log.flush)
            except KafkaStorageError:
                continue

    def _schedule_flusher(self) -> None:
        """Run :meth:`flush_dirty_logs` every ``flush_scheduler_interval_ms`` on the
        scheduler's thread; never when the interval is longer than a thread can wait
        (Kafka's default, Long.MAX_VALUE, means off)."""
        interval_s = self._flush_scheduler_interval_ms / 1000
        if interval_s >= threading.TIMEOUT_MAX:
            return
        self.scheduler.schedule(max(interval_s, 0.0), self._run_flusher)

    def _run_flusher(self) -> None:
        if self._shutting_down:
            return
        try:
            self.flush_dirty_logs()
        finally:
            if self._flush_scheduler_interval_ms > 0 and not self._shutting_down:
                self._schedule_flusher()

    def checkpoint(self, high_watermarks: Mapping[TopicPartition, int] | None = None) -> None:
        """Write the recovery-point and log-start checkpoints (and the replication one,
        when high watermarks are given) of every online directory."""
        for directory in self.online_dirs:
            try:
                self._write_checkpoints(directory, self._logs_in(directory), high_watermarks)
            except OSError as error:
                self._mark_offline(directory, f"checkpoint failed: {error}")

    def _write_checkpoints(
        self,
        directory: Path,
        logs: Mapping[TopicPartition, Log],
        high_watermarks: Mapping[TopicPartition, int] | None = None,
        *,
        futures: Mapping[TopicPartition, Log] | None = None,
    ) -> None:
        """The directory's checkpoints; recovery points and start offsets cover its
        future logs too (a partition has one log per directory at most)."""
        if futures is None:
            futures = self._logs_in(directory, futures=True)
        with self._checkpoint_lock:
            self._write_checkpoints_locked(directory, {**futures, **logs}, logs, high_watermarks)

    def _write_checkpoints_locked(self, directory, every_log, logs, high_watermarks) -> None:
        write_offset_checkpoint(
            directory / RECOVERY_POINT_CHECKPOINT,
            {tp: log.recovery_point for tp, log in every_log.items()},
        )
        write_offset_checkpoint(
            directory / LOG_START_OFFSET_CHECKPOINT,
            {tp: log.log_start_offset for tp, log in every_log.items() if log.log_start_offset > 0},
        )
        if high_watermarks is not None:
            write_offset_checkpoint(
                directory / REPLICATION_OFFSET_CHECKPOINT,
                {tp: hw for tp, hw in high_watermarks.items() if tp in logs},
            )
