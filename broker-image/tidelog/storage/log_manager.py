"""The logs of one broker, spread over JBOD directories (``log.dirs``).

Placement (seed 000): a new partition goes to the online, non-draining directory that
holds the fewest partitions; ties go to the one with the most free bytes. So a newly
added empty disk takes every new partition until the counts even out.

Each directory holds ``meta.properties``, the offset checkpoints and, after a clean
shutdown, the ``.kafka_cleanshutdown`` marker; a directory without the marker has its
logs recovered past their recovery points. A directory that fails (unreadable,
unwritable, full) goes offline: its logs are closed and reported through
``on_dir_failure``, and every other directory keeps serving.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TypeVar

from tidelog.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    read_offset_checkpoint,
    read_properties,
    write_offset_checkpoint,
    write_properties,
)
from tidelog.storage.cleaner import CleanerConfig, LogCleaner
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import KafkaStorageError, LogDirNotFoundError, StorageError
from tidelog.storage.leader_epoch import LeaderEpochCheckpointError
from tidelog.storage.log import Log, parse_topic_partition
from tidelog.storage.partition_metadata import read_topic_id, write_topic_id
from tidelog.storage.scheduler import Scheduler

__all__ = [
    "CLEAN_SHUTDOWN_MARKER",
    "InconsistentBrokerIdError",
    "InconsistentClusterIdError",
    "LogManager",
]

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"

TopicPartition = tuple[str, int]
T = TypeVar("T")


class InconsistentBrokerIdError(StorageError):
    """A log directory's meta.properties names another broker."""


class InconsistentClusterIdError(StorageError):
    """A log directory's meta.properties names another cluster."""


class LogManager:
    def __init__(
        self,
        log_dirs: Iterable[Path | str],
        default_config: LogConfig | None = None,
        *,
        broker_id: int,
        cluster_id: str | None = None,
        topic_configs: Mapping[str, LogConfig] | None = None,
        clock: Callable[[], float] = time.time,
        scheduler: Scheduler | None = None,
        cleaner_config: CleanerConfig | None = None,
        on_dir_failure: Callable[[Path, str], None] | None = None,
    ):
        self.log_dirs = [Path(d).resolve() for d in log_dirs]
        if not self.log_dirs:
            raise StorageError("log.dirs is empty")
        self.default_config = default_config or LogConfig()
        self.topic_configs = dict(topic_configs or {})
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._clock = clock
        self._owns_scheduler = scheduler is None
        self.scheduler = scheduler or Scheduler()
        self.cleaner = LogCleaner(
            cleaner_config or CleanerConfig(), self.log_dirs, lambda: self._logs, clock=clock
        )
        self._on_dir_failure = on_dir_failure
        self._lock = threading.RLock()
        # Periodic and final checkpoints may overlap; their files are written one at a time.
        self._checkpoint_lock = threading.Lock()
        self._logs: dict[TopicPartition, Log] = {}
        self.offline_dirs: dict[Path, str] = {}
        # Partitions whose directory failed: never silently recreated elsewhere.
        self.offline_partitions: set[TopicPartition] = set()
        self.draining_dirs: set[Path] = set()

    # -- startup and shutdown -------------------------------------------------------------

    def startup(self) -> None:
        """Check every directory, then load its partitions (recovering after a crash)."""
        for directory in self.log_dirs:
            try:
                self._prepare_dir(directory)
                self._load_dir(directory)
            except (OSError, StorageError) as error:
                if isinstance(error, InconsistentBrokerIdError | InconsistentClusterIdError):
                    raise
                self._mark_offline(directory, f"failed to load: {error}")
        if not self.online_dirs:
            raise KafkaStorageError(f"no usable log directory among {self.log_dirs}")
        self.cleaner.start()

    def _prepare_dir(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        probe = directory / ".tidelog-write-probe"  # access() says yes to root regardless
        probe.write_bytes(b"ok")
        probe.unlink()
        meta = directory / META_PROPERTIES
        existing = read_properties(meta) if meta.exists() else {}
        found = existing.get("broker.id")
        if found is not None and found != str(self.broker_id):
            raise InconsistentBrokerIdError(
                f"{meta} belongs to broker {found}, not broker {self.broker_id}"
            )
        cluster = existing.get("cluster.id")
        if cluster and self.cluster_id and cluster != self.cluster_id:
            raise InconsistentClusterIdError(
                f"{meta} belongs to cluster {cluster}, not cluster {self.cluster_id}"
            )
        properties = {"version": "0", "broker.id": str(self.broker_id)}
        if self.cluster_id or cluster:
            properties["cluster.id"] = self.cluster_id or cluster
        write_properties(meta, properties)

    def _load_dir(self, directory: Path) -> None:
        marker = directory / CLEAN_SHUTDOWN_MARKER
        clean = marker.exists()
        recovery_points = _read_checkpoint_or_empty(directory / RECOVERY_POINT_CHECKPOINT)
        start_offsets = _read_checkpoint_or_empty(directory / LOG_START_OFFSET_CHECKPOINT)
        if not clean and recovery_points:
            logger.warning("%s was not shut down cleanly: recovering its logs", directory)
        for partition_dir in sorted(p for p in directory.iterdir() if p.is_dir()):
            try:
                topic_partition = parse_topic_partition(partition_dir)
            except ValueError:
                continue
            if topic_partition in self._logs:
                raise StorageError(
                    f"{topic_partition} is in both {self._logs[topic_partition].directory} "
                    f"and {partition_dir}"
                )
            self._logs[topic_partition] = Log.open(
                partition_dir,
                self.config_for(topic_partition[0]),
                log_start_offset=start_offsets.get(topic_partition, 0),
                recovery_point=recovery_points.get(topic_partition, 0),
                had_clean_shutdown=clean,
                clock=self._clock,
                scheduler=self.scheduler,
                on_io_error=self._log_io_error,
            )
        # The marker only vouches for the shutdown that wrote it.
        marker.unlink(missing_ok=True)

    def high_watermark_checkpoints(self) -> dict[TopicPartition, int]:
        """Each hosted partition's high watermark as last checkpointed (a partition
        starts from it, so consumers see committed data before followers report)."""
        found: dict[TopicPartition, int] = {}
        for directory in self.online_dirs:
            offsets = _read_checkpoint_or_empty(directory / REPLICATION_OFFSET_CHECKPOINT)
            for key, offset in offsets.items():
                log = self._logs.get(key)
                if log is not None and log.directory.parent == directory:
                    found[key] = min(offset, log.log_end_offset)
        return found

    def shutdown(self) -> None:
        """Stop the cleaner, finish deferred work, then flush and close every log,
        checkpoint, and mark each directory clean."""
        self.cleaner.shutdown()
        if self._owns_scheduler:
            self.scheduler.shutdown()
        with self._lock:
            for directory in self.online_dirs:
                try:
                    logs = self._logs_in(directory)
                    for log in logs.values():
                        log.flush()
                    self._write_checkpoints(directory, logs)
                    for log in logs.values():
                        log.close()
                    (directory / CLEAN_SHUTDOWN_MARKER).touch()
                except OSError as error:
                    logger.error("%s failed during shutdown: %s", directory, error)
            self._logs.clear()

    # -- directories ------------------------------------------------------------------------

    @property
    def online_dirs(self) -> list[Path]:
        return [d for d in self.log_dirs if d not in self.offline_dirs]

    def mark_draining(self, directory: Path | str, draining: bool = True) -> None:
        """A draining directory keeps its partitions but takes no new ones."""
        path = self._known_dir(directory)
        if draining:
            self.draining_dirs.add(path)
        else:
            self.draining_dirs.discard(path)

    def handle_dir_failure(self, directory: Path | str, reason: str) -> None:
        """Take a failed directory offline: its partitions go offline, the rest serve on."""
        self._mark_offline(self._known_dir(directory), reason)

    def _mark_offline(self, directory: Path, reason: str) -> None:
        with self._lock:
            if directory in self.offline_dirs:
                return
            logger.error("log directory %s is offline: %s", directory, reason)
            self.offline_dirs[directory] = reason
            for topic_partition, log in list(self._logs.items()):
                if log.directory.parent == directory:
                    del self._logs[topic_partition]
                    self.offline_partitions.add(topic_partition)
                    with contextlib.suppress(OSError):  # the disk is gone already
                        log.close()
        if self._on_dir_failure is not None:
            self._on_dir_failure(directory, reason)

    def _known_dir(self, directory: Path | str) -> Path:
        path = Path(directory).resolve()
        if path not in self.log_dirs:
            raise LogDirNotFoundError(f"{directory} is not one of log.dirs")
        return path

    def _logs_in(self, directory: Path) -> dict[TopicPartition, Log]:
        # list() copies in one step: other threads add and remove logs meanwhile
        return {
            tp: log for tp, log in list(self._logs.items()) if log.directory.parent == directory
        }

    def partition_counts(self) -> dict[Path, int]:
        counts = {d: 0 for d in self.online_dirs}
        for log in self._logs.values():
            counts[log.directory.parent] = counts.get(log.directory.parent, 0) + 1
        return counts

    def choose_dir(self) -> Path:
        """Fewest partitions first, then most free bytes; never draining or offline."""
        counts = self.partition_counts()
        candidates = [d for d in self.online_dirs if d not in self.draining_dirs]
        if not candidates:
            raise KafkaStorageError("no online log directory can take a new partition")
        return min(candidates, key=lambda d: (counts.get(d, 0), -shutil.disk_usage(d).free))

    # -- logs -------------------------------------------------------------------------------

    def config_for(self, topic: str) -> LogConfig:
        return self.topic_configs.get(topic, self.default_config)

    def set_topic_config(self, topic: str, config: LogConfig) -> None:
        with self._lock:
            self.topic_configs[topic] = config
            for (log_topic, _), log in self._logs.items():
                if log_topic == topic:
                    log.update_config(config)

    def get_log(self, topic: str, partition: int) -> Log | None:
        return self._logs.get((topic, partition))

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        return dict(self._logs)

    def get_or_create_log(
        self,
        topic: str,
        partition: int,
        directory: Path | None = None,
        *,
        topic_id: uuid.UUID | None = None,
    ) -> Log:
        """The partition's log, created where :meth:`choose_dir` says when there is none.
        With ``topic_id``, a log left by a deleted topic of the same name (its
        ``partition.metadata`` names another id) is deleted and a new one created."""
        with self._lock:
            existing = self._logs.get((topic, partition))
            if existing is not None:
                if topic_id is None or self._belongs_to(existing, topic_id):
                    return existing
                logger.warning(
                    "%s-%d in %s holds data of a deleted topic of that name: deleting it",
                    topic,
                    partition,
                    existing.directory.parent,
                )
                self.delete_log(topic, partition)
            if (topic, partition) in self.offline_partitions:
                raise KafkaStorageError(f"{topic}-{partition} is offline: its log directory failed")
            parent = self.choose_dir() if directory is None else self._known_dir(directory)
            if parent in self.offline_dirs:
                raise KafkaStorageError(f"{parent} is offline")
            try:
                log = Log.open(
                    parent / f"{topic}-{partition}",
                    self.config_for(topic),
                    clock=self._clock,
                    scheduler=self.scheduler,
                    on_io_error=self._log_io_error,
                )
            except (OSError, LeaderEpochCheckpointError) as error:
                self._mark_offline(parent, f"creating {topic}-{partition} failed: {error}")
                raise KafkaStorageError(str(error)) from error
            if topic_id is not None:
                write_topic_id(log.directory, topic_id)
            self._logs[(topic, partition)] = log
            logger.info("created log %s-%d in %s", topic, partition, parent)
            return log

    @staticmethod
    def _belongs_to(log: Log, topic_id: uuid.UUID) -> bool:
        """Whether the log is the topic's; a log without a recorded id (written before
        ids were recorded, or its file unreadable) is adopted."""
        try:
            recorded = read_topic_id(log.directory)
        except StorageError as error:
            logger.warning("%s; recording topic id %s", error, topic_id)
            recorded = None
        if recorded is None:
            write_topic_id(log.directory, topic_id)
            return True
        return recorded == topic_id

    def delete_log(self, topic: str, partition: int) -> None:
        with self._lock:
            log = self._logs.pop((topic, partition), None)
            if log is None:
                return
            self.cleaner.abort_cleaning((topic, partition))
            self.cleaner.update_checkpoints(log.directory.parent, remove=(topic, partition))
            log.delete()

    def truncate_to(self, topic: str, partition: int, offset: int) -> None:
        """Truncate a log (a follower diverged) with its cleaning paused meanwhile, and
        pull its cleaner checkpoint back so the cleaner never starts past the end."""
        log = self._logs[(topic, partition)]
        self.cleaner.abort_and_pause_cleaning((topic, partition))
        try:
            if self.guarded(log, lambda: log.truncate_to(offset)):
                self.cleaner.maybe_truncate_checkpoint(
                    log.directory.parent, (topic, partition), log.log_end_offset
                )
        finally:
            self.cleaner.resume_cleaning([(topic, partition)])

    # -- periodic work ------------------------------------------------------------------------

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
        for log in list(self._logs.values()):
            try:
                self.guarded(log, log.flush)
            except KafkaStorageError:
                continue

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
    ) -> None:
        with self._checkpoint_lock:
            self._write_checkpoints_locked(directory, logs, high_watermarks)

    def _write_checkpoints_locked(self, directory, logs, high_watermarks) -> None:
        write_offset_checkpoint(
            directory / RECOVERY_POINT_CHECKPOINT,
            {tp: log.recovery_point for tp, log in logs.items()},
        )
        write_offset_checkpoint(
            directory / LOG_START_OFFSET_CHECKPOINT,
            {tp: log.log_start_offset for tp, log in logs.items() if log.log_start_offset > 0},
        )
        if high_watermarks is not None:
            write_offset_checkpoint(
                directory / REPLICATION_OFFSET_CHECKPOINT,
                {tp: hw for tp, hw in high_watermarks.items() if tp in logs},
            )

    def _log_io_error(self, log: Log, error: OSError) -> None:
        self._mark_offline(log.directory.parent, f"I/O error on {log.directory.name}: {error}")

    def guarded(self, log: Log, work: Callable[[], T]) -> T:
        """Run I/O on ``log``. An OSError (failed disk, full disk) takes the log's whole
        directory offline and surfaces as KafkaStorageError (KAFKA_STORAGE_ERROR)."""
        try:
            return work()
        except OSError as error:
            reason = f"I/O error on {log.directory.name}: {error}"
            self._mark_offline(log.directory.parent, reason)
            raise KafkaStorageError(reason) from error


def _read_checkpoint_or_empty(path: Path) -> dict[TopicPartition, int]:
    """A checkpoint that cannot be parsed is treated as absent (so every log of the
    directory is recovered from its start), like Kafka; it never stops the broker."""
    try:
        return read_offset_checkpoint(path)
    except CheckpointError as error:
        logger.warning("%s; recovering every log of %s from scratch", error, path.parent)
        return {}
