"""The LogManager's moves between directories of one broker: future logs.

A partition may have, besides its current log ``<topic>-<partition>``, one future log
``<topic>-<partition>.<id>-future`` in another directory, which the log-dir mover
(``replication/log_dir_mover.py``) fills from the current one; cleaning of the partition
is paused meanwhile. The swap (:meth:`LogManager.replace_current_with_future`) commits
by renaming the current directory to ``<topic>-<partition>.<id>-delete``; the future
directory then loses its suffix, and the old one is deleted after
``file.delete.delay.ms``. A truncation of the current log truncates the future log too.
At start-up, a ``-delete`` directory is deleted; a ``-future`` directory is the future
log of its partition when the current log is there too (the move resumes when the
partition is hosted again, as in Kafka; a partition deleted meanwhile takes its future
log with it), and otherwise becomes the current log: the swap had committed (Kafka would
refuse to start on the two current directories its own order can leave), or the current
log's directory is gone and the future log is the only copy left. The current log is
never deleted before the future one has replaced it.

A part of :class:`tidelog.storage.log_manager.LogManager`, which mixes :class:`FutureLogs`
in; the tables, locks and directory handling these methods use are the LogManager's.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

from tidelog.storage.cleaner import LogCleaner
from tidelog.storage.errors import KafkaStorageError, StorageError
from tidelog.storage.leader_epoch import LeaderEpochCheckpointError
from tidelog.storage.log import Log, parse_topic_partition
from tidelog.storage.log_table import LogTable, TopicPartition
from tidelog.storage.partition_metadata import write_topic_id
from tidelog.storage.scheduler import Scheduler

__all__ = ["DELETE_DIR_SUFFIX", "FUTURE_DIR_SUFFIX", "FutureLogs"]

logger = logging.getLogger(__name__)

FUTURE_DIR_SUFFIX = "-future"
DELETE_DIR_SUFFIX = "-delete"


def _suffixed_dir_name(topic_partition: TopicPartition, suffix: str) -> str:
    """Kafka's ``<topic>-<partition>.<uuid without dashes><suffix>``."""
    return f"{topic_partition[0]}-{topic_partition[1]}.{uuid.uuid4().hex}{suffix}"


class FutureLogs:
    """The future-log half of :class:`~tidelog.storage.log_manager.LogManager`."""

    # The LogManager's state and helpers that moves use (see log_manager.py).
    cleaner: LogCleaner
    scheduler: Scheduler
    offline_dirs: dict[Path, str]
    _lock: threading.RLock
    _logs: LogTable
    _future_logs: LogTable
    _preferred_dirs: dict[TopicPartition, Path]
    guarded: Callable[..., object]

    def _settle_moves(self, futures: dict[TopicPartition, Log], doomed: list[Path]) -> None:
        for topic_partition, future in futures.items():
            if future.directory.parent in self.offline_dirs:
                continue
            if topic_partition in self._logs:
                self._future_logs[topic_partition] = future
                self.cleaner.abort_and_pause_cleaning(topic_partition)
                logger.info("resuming the move of %s-%d to %s", *topic_partition, future.directory)
                continue
            current = future.directory.with_name("{}-{}".format(*topic_partition))
            logger.warning("%s has no current log: it becomes the current log", future.directory)
            future.rename_dir(current)
            self._logs[topic_partition] = future
        for directory in doomed:
            if parse_topic_partition(directory) not in self._logs:
                # Only its partition's failed directory may hold the replica that replaced it.
                logger.warning("keeping %s: its partition has no current log", directory)
                continue
            logger.info("deleting %s, a replica replaced before a restart", directory)
            shutil.rmtree(directory, ignore_errors=True)

    def maybe_update_preferred_dir(self, topic: str, partition: int, directory: Path) -> None:
        """Remember ``directory`` for the partition's log, unless its current or future
        log is there already (Kafka's maybeUpdatePreferredLogDir)."""
        with self._lock:
            here = [self._logs.get((topic, partition)), self._future_logs.get((topic, partition))]
            if not any(log is not None and log.directory.parent == directory for log in here):
                self._preferred_dirs[(topic, partition)] = directory

    def future_log(self, topic: str, partition: int) -> Log | None:
        return self._future_logs.get((topic, partition))

    @property
    def future_logs(self) -> dict[TopicPartition, Log]:
        return dict(self._future_logs)

    def create_future_log(
        self, topic: str, partition: int, directory: Path, *, topic_id: uuid.UUID | None = None
    ) -> Log:
        """The partition's future log in ``directory`` (created empty when there is none),
        with the partition's cleaning paused until the swap or the move's end."""
        key = (topic, partition)
        with self._lock:
            current = self._logs.get(key)
            if current is None:
                raise KafkaStorageError(f"{topic}-{partition} has no log to move")
            parent = self.online_dir(directory)
            if parent == current.directory.parent:
                raise StorageError(f"{topic}-{partition} is in {parent} already")
            existing = self._future_logs.get(key)
            if existing is not None:
                if existing.directory.parent != parent:
                    raise StorageError(f"{topic}-{partition} is moving to {existing.directory}")
                return existing
            try:
                future = Log.open(
                    parent / _suffixed_dir_name(key, FUTURE_DIR_SUFFIX),
                    self.config_for(topic),
                    clock=self._clock,
                    scheduler=self.scheduler,
                    on_io_error=self._log_io_error,
                )
                if topic_id is not None:
                    write_topic_id(future.directory, topic_id)
            except (OSError, LeaderEpochCheckpointError) as error:
                self._mark_offline(parent, f"creating the future log of {key} failed: {error}")
                raise KafkaStorageError(str(error)) from error
            self._future_logs[key] = future
            self._preferred_dirs.pop(key, None)
        self.cleaner.abort_and_pause_cleaning(key)
        logger.info("moving %s-%d from %s to %s", topic, partition, current.directory, parent)
        return future

    def delete_future_log(self, topic: str, partition: int) -> None:
        """End a move without swapping: the future log goes, the current one stays."""
        with self._lock:
            future = self._future_logs.pop((topic, partition), None)
            if future is None:
                return
            self.cleaner.resume_cleaning([(topic, partition)])
            logger.info("%s-%d: dropping its future log %s", topic, partition, future.directory)
            with contextlib.suppress(OSError):  # a failed directory is reported already
                future.delete()

    def replace_current_with_future(self, topic: str, partition: int) -> Log:
        """Swap the future log in for the current one, which it must have caught up with;
        returns the new current log. The caller holds the partition still (on the event
        loop: no append in between). Crash-safe: see the module's docstring."""
        key = (topic, partition)
        with self._lock:
            source, future = self._logs[key], self._future_logs[key]
            if future.log_end_offset != source.log_end_offset:
                raise StorageError(f"the future log of {key} has not caught up: {future}")
            # The current log's epochs, also those without records yet (a new leader's
            # epoch starts at its log end before it writes), which copying cannot bring.
            if future.leader_epochs.entries != source.leader_epochs.entries:
                self.guarded(future, lambda: _copy_leader_epochs(source, future))
            self.guarded(future, future.flush)
            # The commit point: from here on, the future log is the replica.
            self.guarded(
                source,
                lambda: source.rename_dir(
                    source.directory.with_name(_suffixed_dir_name(key, DELETE_DIR_SUFFIX))
                ),
            )
            self.guarded(
                future,
                lambda: future.rename_dir(future.directory.with_name(f"{topic}-{partition}")),
            )
            del self._future_logs[key]
            self._logs[key] = future
            old_dir, new_dir = source.directory.parent, future.directory.parent
            self.cleaner.alter_checkpoint_dir(key, old_dir, new_dir)
            self.cleaner.resume_cleaning([key])
        logger.info("%s-%d now lives in %s", topic, partition, new_dir)
        with contextlib.suppress(OSError):
            self._write_checkpoints(old_dir, self._logs_in(old_dir))
        # Readers may still be sending from the old files.
        self.scheduler.schedule(
            future.config.file_delete_delay_ms / 1000,
            lambda: self._delete_replaced(source),
        )
        return future

    @staticmethod
    def _delete_replaced(log: Log) -> None:
        with contextlib.suppress(OSError):
            log.close()
        shutil.rmtree(log.directory, ignore_errors=True)


def _copy_leader_epochs(source: Log, destination: Log) -> None:
    destination.leader_epochs.clear()
    for epoch, start in source.leader_epochs.entries:
        destination.assign_epoch_start_offset(epoch, start)
