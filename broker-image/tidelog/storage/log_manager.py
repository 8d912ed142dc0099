"""The logs of one broker, spread over JBOD directories (``log.dirs``).

Placement (seed 000): a new partition goes to the online, non-draining directory that
holds the fewest partitions; ties go to the one with the most free bytes. So a newly
added empty disk takes every new partition until the counts even out. A directory that
AlterReplicaLogDirs named for a partition not hosted yet (its preferred directory) wins
over that rule once, when the partition's log is created, as in Kafka.

Moves between directories (Kafka's future logs; ``future_logs.py``, :class:`FutureLogs`)
and the periodic work (retention, the flusher, checkpoints; ``log_manager_tasks.py``,
:class:`LogManagerTasks`) are written in modules of their own, mixed into
:class:`LogManager`; this one holds the tables of logs, the directories (start-up,
placement, failure) and the logs' creation and deletion.

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
from functools import partial
from pathlib import Path
from typing import TypeVar

from tidelog.storage.checkpoints import (
    LOG_START_OFFSET_CHECKPOINT,
    META_PROPERTIES,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CheckpointError,
    fsync_file_and_directory,
    read_offset_checkpoint,
    read_properties,
    write_properties,
)
from tidelog.storage.cleaner import CleanerConfig, LogCleaner
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import KafkaStorageError, LogDirNotFoundError, StorageError
from tidelog.storage.future_logs import DELETE_DIR_SUFFIX, FUTURE_DIR_SUFFIX, FutureLogs
from tidelog.storage.leader_epoch import LeaderEpochCheckpointError
from tidelog.storage.log import Log, parse_topic_partition
from tidelog.storage.log_manager_tasks import LogManagerTasks
from tidelog.storage.log_table import LogTable, TopicPartition
from tidelog.storage.partition_metadata import (
    PARTITION_METADATA,
    read_topic_id,
    write_topic_id,
)
from tidelog.storage.scheduler import Scheduler

__all__ = [
    "CLEAN_SHUTDOWN_MARKER",
    "DELETE_DIR_SUFFIX",
    "FUTURE_DIR_SUFFIX",
    "InconsistentBrokerIdError",
    "InconsistentClusterIdError",
    "LogManager",
]

logger = logging.getLogger(__name__)

CLEAN_SHUTDOWN_MARKER = ".kafka_cleanshutdown"

T = TypeVar("T")

_LONG_MAX = 2**63 - 1


def _flush_new_file(path: Path) -> None:
    """Make a file that a new log wrote unflushed durable; gone already with its log
    (deleted meanwhile), there is nothing to do."""
    with contextlib.suppress(FileNotFoundError):
        fsync_file_and_directory(path)


class InconsistentBrokerIdError(StorageError):
    """A log directory's meta.properties names another broker."""


class InconsistentClusterIdError(StorageError):
    """A log directory's meta.properties names another cluster."""


class LogManager(FutureLogs, LogManagerTasks):
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
        flush_scheduler_interval_ms: int = _LONG_MAX,
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
        self._flush_scheduler_interval_ms = flush_scheduler_interval_ms
        self._shutting_down = False  # the periodic flusher stops rescheduling itself
        self.cleaner = LogCleaner(
            cleaner_config or CleanerConfig(), self.log_dirs, lambda: self._logs, clock=clock
        )
        self._on_dir_failure = on_dir_failure
        self._lock = threading.RLock()
        # Periodic and final checkpoints may overlap; their files are written one at a time.
        self._checkpoint_lock = threading.Lock()
        self._logs = LogTable()
        self._future_logs = LogTable()
        # AlterReplicaLogDirs' directories for partitions not hosted yet.
        self._preferred_dirs: dict[TopicPartition, Path] = {}
        self.offline_dirs: dict[Path, str] = {}
        # Partitions whose directory failed: never silently recreated elsewhere.
        self.offline_partitions: set[TopicPartition] = set()
        self.draining_dirs: set[Path] = set()

    # -- startup and shutdown -------------------------------------------------------------

    def startup(self) -> None:
        """Check every directory, then load its partitions (recovering after a crash),
        then settle the moves a crash interrupted (see the module's docstring)."""
        futures: dict[TopicPartition, Log] = {}
        doomed: list[Path] = []
        for directory in self.log_dirs:
            try:
                self._prepare_dir(directory)
                self._load_dir(directory, futures, doomed)
            except (OSError, StorageError) as error:
                if isinstance(error, InconsistentBrokerIdError | InconsistentClusterIdError):
                    raise
                self._mark_offline(directory, f"failed to load: {error}")
        self._settle_moves(futures, doomed)
        if not self.online_dirs:
            raise KafkaStorageError(f"no usable log directory among {self.log_dirs}")
        self.cleaner.start()
        self._schedule_flusher()

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

    def _load_dir(
        self, directory: Path, futures: dict[TopicPartition, Log], doomed: list[Path]
    ) -> None:
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
            if partition_dir.name.endswith(DELETE_DIR_SUFFIX):
                doomed.append(partition_dir)
                continue
            loaded = futures if partition_dir.name.endswith(FUTURE_DIR_SUFFIX) else self._logs
            if topic_partition in loaded:
                raise StorageError(
                    f"{topic_partition} is in both {loaded[topic_partition].directory} "
                    f"and {partition_dir}"
                )
            loaded[topic_partition] = Log.open(
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
        self._shutting_down = True
        self.cleaner.shutdown()
        if self._owns_scheduler:
            self.scheduler.shutdown()
        with self._lock:
            for directory in self.online_dirs:
                try:
                    logs = self._logs_in(directory)
                    futures = self._logs_in(directory, futures=True)
                    for log in (*logs.values(), *futures.values()):
                        log.flush()
                    self._write_checkpoints(directory, logs, futures=futures)
                    for log in (*logs.values(), *futures.values()):
                        log.close()
                    (directory / CLEAN_SHUTDOWN_MARKER).touch()
                except OSError as error:
                    logger.error("%s failed during shutdown: %s", directory, error)
            self._logs.clear()
            self._future_logs.clear()

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

    def set_draining_dirs(self, directories: Iterable[Path | str]) -> None:
        """Exactly these directories are draining (``log.dirs.draining``)."""
        self.draining_dirs = {self._known_dir(directory) for directory in directories}

    def partitions_to_drain(self) -> list[TopicPartition]:
        """Partitions whose current log is in a draining directory and that are not
        being moved already."""
        return sorted(
            tp
            for tp, log in list(self._logs.items())
            if log.directory.parent in self.draining_dirs and tp not in self._future_logs
        )

    def online_dir(self, directory: Path | str) -> Path:
        """``directory`` as one of log.dirs; LogDirNotFoundError when it is none of
        them, KafkaStorageError when it is offline (Kafka's isLogDirOnline)."""
        path = self._known_dir(directory)
        if path in self.offline_dirs:
            raise KafkaStorageError(f"log directory {path} is offline")
        return path

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
            for topic_partition, log in list(self._future_logs.items()):
                if log.directory.parent == directory:
                    del self._future_logs[topic_partition]
                    self.cleaner.resume_cleaning([topic_partition])
                    with contextlib.suppress(OSError):
                        log.close()
        if self._on_dir_failure is not None:
            self._on_dir_failure(directory, reason)

    def _known_dir(self, directory: Path | str) -> Path:
        path = Path(directory).resolve()
        if path not in self.log_dirs:
            raise LogDirNotFoundError(f"{directory} is not one of log.dirs")
        return path

    def _logs_in(self, directory: Path, *, futures: bool = False) -> dict[TopicPartition, Log]:
        """The current logs in ``directory``, or its future logs."""
        # list() copies in one step: other threads add and remove logs meanwhile
        logs = self._future_logs if futures else self._logs
        return {tp: log for tp, log in list(logs.items()) if log.directory.parent == directory}

    def partition_counts(self) -> dict[Path, int]:
        """Logs per online directory, future logs included (they are its partitions soon)."""
        return {d: self._logs.per_dir[d] + self._future_logs.per_dir[d] for d in self.online_dirs}

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
        """The topic's logs take ``config``; a compacted topic's are looked at by the
        cleaner at once (a topic just switched to ``compact``, or given a lower dirty
        ratio, need not wait out ``log.cleaner.backoff.ms``)."""
        with self._lock:
            self.topic_configs[topic] = config
            for (log_topic, _), log in self._logs.items():
                if log_topic == topic:
                    log.update_config(config)
        if config.compact:
            self.cleaner.wakeup()

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
        """The partition's log, created when there is none: in ``directory``, else in its
        preferred directory (AlterReplicaLogDirs) while that is online, else where
        :meth:`choose_dir` says. With ``topic_id``, a log left by a deleted topic of the
        same name (its ``partition.metadata`` names another id) is deleted and a new one
        created."""
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
            preferred = self._preferred_dirs.pop((topic, partition), None)
            if directory is not None:
                parent = self._known_dir(directory)
            elif preferred is not None and preferred not in self.offline_dirs:
                parent = preferred
            else:
                parent = self.choose_dir()
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
            if topic_id is not None:  # flushed by the scheduler's thread, not here
                write_topic_id(log.directory, topic_id, sync=False)
                self.scheduler.submit(partial(_flush_new_file, log.directory / PARTITION_METADATA))
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
        """Delete the partition's log, and its future log first (so a crash in between
        never leaves the future log alone, which a restart would take for the current)."""
        with self._lock:
            self._preferred_dirs.pop((topic, partition), None)
            self.delete_future_log(topic, partition)
            log = self._logs.pop((topic, partition), None)
            if log is None:
                return
            self.cleaner.abort_cleaning((topic, partition))
            self.cleaner.update_checkpoints(log.directory.parent, remove=(topic, partition))
            log.delete()

    def truncate_to(self, topic: str, partition: int, offset: int) -> None:
        """Truncate a log (a follower diverged) with its cleaning paused meanwhile, and
        pull its cleaner checkpoint back so the cleaner never starts past the end. A
        future log is truncated with it: what it copied past ``offset`` is gone."""
        log = self._logs[(topic, partition)]
        self.cleaner.abort_and_pause_cleaning((topic, partition))
        try:
            if self.guarded(log, lambda: log.truncate_to(offset)):
                self.cleaner.maybe_truncate_checkpoint(
                    log.directory.parent, (topic, partition), log.log_end_offset
                )
            future = self._future_logs.get((topic, partition))
            if future is not None:
                self.guarded(future, lambda: future.truncate_to(offset))
        finally:
            self.cleaner.resume_cleaning([(topic, partition)])

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
