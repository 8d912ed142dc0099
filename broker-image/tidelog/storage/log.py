"""The log of one partition: an ordered list of segments, the last one active.

Appends validate the producer's batches, assign offsets by rewriting each batch's
baseOffset and partitionLeaderEpoch in place (both lie outside the CRC, so no checksum
work and no record is touched), and write them to the active segment. Reads hand out
file slices of whole batches. Retention, DeleteRecords, truncation and the cleaner's
segment replacement change the segment list under one lock; readers take a snapshot of
the list and never block appends.

The class is written in three modules, one job each: this one holds the log's state
(segment list, log end, offsets, locks), opening, reads, flushing, leader epochs and the
directory's lifecycle; ``log_append.py`` the appends and rolling (:class:`LogAppends`);
``log_truncation.py`` truncation, retention, DeleteRecords and the cleaner's segment
replacement (:class:`LogTruncation`). Both are mixed into :class:`Log` and work on its
state only.

Flushing follows Kafka's ``flush.messages`` and ``flush.ms``: an append that leaves
``flush.messages`` or more offsets between the recovery point and the log end fsyncs the
log to its end before it returns (so before the produce is acknowledged), as Kafka's
UnifiedLog.append does; the count is the offsets the batches span, read from their
headers, never a walk over records. ``flush.ms`` is the LogManager's periodic flusher's
(``last_flushed_ms`` tells it how long ago the recovery point last moved). With Kafka's
defaults (both Long.MAX_VALUE) an append never fsyncs: segments are flushed when they
roll and at shutdown.

The log owns its partition's leader epoch cache (``leader_epoch``): an append records the
epoch of its batches when it is new, truncations cut the cache where they cut the log,
and a rising log start offset moves the cache's first entry up with it.
"""

from __future__ import annotations

import bisect
import logging
import random
import re
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from tidelog.storage.checkpoints import fsync_directory
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import OffsetOutOfRangeError
from tidelog.storage.leader_epoch import LeaderEpochCache
from tidelog.storage.log_append import AppendInfo, LogAppends
from tidelog.storage.log_loader import load_log
from tidelog.storage.log_truncation import LogTruncation
from tidelog.storage.producer_state import ProducerStateManager
from tidelog.storage.scheduler import Scheduler
from tidelog.storage.segment import FetchSlice, LogSegment
from tidelog.storage.time_index import TimestampOffset

__all__ = ["AppendInfo", "Log", "parse_topic_partition"]

logger = logging.getLogger(__name__)

# A current log, or (Kafka's names) a future replica or a replica to delete:
# ``<topic>-<partition>.<uuid without dashes>-future`` / ``-delete``.
_PARTITION_DIR = re.compile(r"^(.+)-(\d+)(?:\.[0-9a-f]{32}-(?:future|delete))?$")


def parse_topic_partition(directory: Path) -> tuple[str, int]:
    """``<topic>-<partition>`` (also with a ``.<id>-future`` or ``.<id>-delete``
    suffix) → (topic, partition)."""
    match = _PARTITION_DIR.match(Path(directory).name)
    if not match:
        raise ValueError(f"{directory} is not named <topic>-<partition>")
    return match[1], int(match[2])


class LogEnd(NamedTuple):
    """The log end offset with the segment and file position where it lies, published
    as one tuple after every append so a reader bounds its read by bytes that belong to
    offsets below ``offset``, even while an append is under way."""

    offset: int
    segment: LogSegment
    position: int


class Log(LogAppends, LogTruncation):
    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        segments: Sequence[LogSegment],
        *,
        next_offset: int,
        log_start_offset: int,
        recovery_point: int,
        leader_epochs: LeaderEpochCache,
        clock: Callable[[], float],
        scheduler: Scheduler | None,
        on_io_error: Callable[[Log, OSError], None] | None = None,
    ):
        self.directory = Path(directory)
        self.topic, self.partition = parse_topic_partition(self.directory)
        self.config = config
        self._clock = clock
        self._scheduler = scheduler
        self._lock = threading.RLock()
        self._dir_lock = threading.Lock()  # the directory's name, against rename_dir
        self._deleted = False  # set under both locks: deferred work finds no directory
        self._truncations = 0  # a flush moves the recovery point only if none came meanwhile
        self._on_io_error = on_io_error
        self._set_segments(list(segments))
        self._publish_end(next_offset)
        self.log_start_offset = max(log_start_offset, self._segments[0].base_offset)
        self.recovery_point = recovery_point
        # When the recovery point last moved (Kafka's lastFlushTime), in ms of ``clock``.
        self.last_flushed_ms = int(clock() * 1000)
        self.leader_epochs = leader_epochs
        # The checkpoint may hold epochs of data that a crash or a later truncation took
        # away, and epochs below a start offset that rose since it was written.
        leader_epochs.truncate_from_end(next_offset)
        leader_epochs.truncate_from_start(self.log_start_offset)
        self.producer_state = ProducerStateManager(self.directory)
        self._load_producer_state()
        if self.log_start_offset > next_offset:
            # A checkpointed start above what survived recovery: nothing below the start
            # may be served, so start afresh there (Kafka does the same).
            logger.warning(
                "%s: log start offset %d is above the recovered log end %d; starting empty",
                self.directory.name,
                self.log_start_offset,
                next_offset,
            )
            self.truncate_fully_and_start_at(self.log_start_offset)

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig | None = None,
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        had_clean_shutdown: bool = True,
        clock: Callable[[], float] = time.time,
        scheduler: Scheduler | None = None,
        on_io_error: Callable[[Log, OSError], None] | None = None,
    ) -> Log:
        """Open (creating if needed) the partition directory and load its segments.

        Without a ``scheduler``, deferred work (flushing a rolled segment, deleting old
        segment files after ``file.delete.delay.ms``) happens at once, in the caller."""
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        config = config or LogConfig()
        leader_epochs = LeaderEpochCache(directory)
        loaded = load_log(
            directory,
            config,
            clock=clock,
            log_start_offset=log_start_offset,
            recovery_point=recovery_point,
            had_clean_shutdown=had_clean_shutdown,
            leader_epochs=leader_epochs,
            rolling_jitter_ms=_jitter(config),
        )
        return cls(
            directory,
            config,
            loaded.segments,
            next_offset=loaded.next_offset,
            log_start_offset=log_start_offset,
            recovery_point=loaded.recovery_point,
            leader_epochs=leader_epochs,
            clock=clock,
            scheduler=scheduler,
            on_io_error=on_io_error,
        )

    def _load_producer_state(self) -> None:
        """Newest snapshot at or below the log end, then every batch header after it."""

        def headers_from(offset: int):
            for segment in self._segments:
                if segment.read_next_offset() > offset:
                    yield from segment.log.batch_headers()

        self.producer_state.load(self._next_offset, headers_from)

    # -- segment list ------------------------------------------------------------------

    def _set_segments(self, segments: list[LogSegment]) -> None:
        segments.sort(key=lambda segment: segment.base_offset)
        # One tuple, replaced whole: readers see either the old or the new list.
        self._view = (tuple(s.base_offset for s in segments), tuple(segments))

    @property
    def _segments(self) -> tuple[LogSegment, ...]:
        return self._view[1]

    @property
    def segments(self) -> tuple[LogSegment, ...]:
        return self._view[1]

    @property
    def active_segment(self) -> LogSegment:
        return self._view[1][-1]

    @property
    def _next_offset(self) -> int:
        return self._end.offset

    def _publish_end(self, offset: int) -> None:
        active = self.active_segment
        self._end = LogEnd(offset, active, active.size)

    @property
    def log_end_offset(self) -> int:
        return self._end.offset

    @property
    def size(self) -> int:
        return sum(segment.size for segment in self._segments)

    def update_config(self, config: LogConfig) -> None:
        self.config = config

    def _schedule(self, work: Callable[[], object]) -> None:
        if self._scheduler is None:
            work()
        else:
            self._scheduler.submit(lambda: self._reporting_io_errors(work))

    def _reporting_io_errors(self, work: Callable[[], object]) -> None:
        """Background work has no caller to raise to: an I/O error goes to the owner,
        which takes the directory offline."""
        try:
            work()
        except OSError as error:
            if self._on_io_error is None:
                raise
            self._on_io_error(self, error)

    # -- read ------------------------------------------------------------------------------

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        min_one_message: bool = True,
    ) -> FetchSlice | None:
        """Whole batches from the one holding ``offset``, never past ``max_offset`` (the
        high watermark for consumers). None when there is nothing to read yet."""
        end = self._end
        bases, segments = self._view
        end_offset = end.offset
        if offset < self.log_start_offset or offset > end_offset:
            raise OffsetOutOfRangeError(
                f"offset {offset} is outside [{self.log_start_offset}, {end_offset}] of "
                f"{self.directory.name}"
            )
        upper = end_offset if max_offset is None else min(max_offset, end_offset)
        if offset >= upper:
            return None
        if upper == end_offset:
            limit_index = bisect.bisect_right(bases, end.segment.base_offset) - 1
            # A truncation may have replaced the segment since: then its position is moot.
            same = limit_index >= 0 and segments[limit_index] is end.segment
            limit_position = end.position if same else None
        else:
            limit_index, limit_position = self._position_of(upper, bases, segments)
        for index in range(max(0, bisect.bisect_right(bases, offset) - 1), len(segments)):
            if index > limit_index:
                return None
            max_position = limit_position if index == limit_index else None
            found = segments[index].read(offset, max_bytes, max_position, min_one_message)
            if found is not None:
                return found
        return None

    @staticmethod
    def _position_of(offset: int, bases, segments) -> tuple[int, int | None]:
        """Segment index and file position at which reads must stop for ``offset``."""
        index = max(0, bisect.bisect_right(bases, offset) - 1)
        found = segments[index].translate_offset(offset)
        return index, (None if found is None else found.position)

    def offset_for_timestamp(self, timestamp: int) -> TimestampOffset | None:
        """The first record with a timestamp >= ``timestamp`` (ListOffsets by time).

        Kafka's special values (-1 latest, -2 earliest, -3 max timestamp) are the
        caller's to resolve; they are refused here."""
        if timestamp < 0:
            raise ValueError(f"not a timestamp: {timestamp}")
        for segment in self._segments:
            if segment.max_timestamp_so_far < timestamp:
                continue
            found = segment.find_offset_by_timestamp(timestamp, self.log_start_offset)
            if found is not None:
                return found
        return None

    # -- flush -------------------------------------------------------------------------------

    def flush(self, offset: int | None = None) -> None:
        """fsync every segment holding offsets below ``offset`` (default: everything) and
        move the recovery point there (``last_flushed_ms`` with it); the leader epochs
        of those offsets are checkpointed first (recovery re-reads only the epochs past
        the recovery point). Nothing is fsynced when the recovery point is there already."""
        with self._lock:
            target = self._next_offset if offset is None else min(offset, self._next_offset)
            bases, segments = self._view
            truncations = self._truncations
        self.write_leader_epochs()
        if target <= self.recovery_point:
            return
        start = max(0, bisect.bisect_right(bases, self.recovery_point) - 1)
        for segment in segments[start:]:
            if segment.base_offset >= target:
                break
            segment.flush()
        with self._dir_lock:
            fsync_directory(self.directory)  # new segments' names are durable too
        with self._lock:
            # Unless a truncation came in between: what was appended since may be
            # below the target, unflushed, and of an epoch not yet checkpointed.
            if self._truncations == truncations and target > self.recovery_point:
                self.recovery_point = target
                self.last_flushed_ms = int(self._clock() * 1000)

    # -- leader epochs -----------------------------------------------------------------------------

    @property
    def latest_epoch(self) -> int:
        """The newest leader epoch that wrote to (or leads) this log; -1 when none."""
        return self.leader_epochs.latest_epoch

    def end_offset_for_epoch(self, epoch: int) -> tuple[int, int]:
        """(epoch, end offset) as OffsetForLeaderEpoch answers; see
        ``LeaderEpochCache.end_offset_for``."""
        return self.leader_epochs.end_offset_for(epoch, self.log_end_offset)

    def assign_epoch_start_offset(
        self, epoch: int, start_offset: int, *, write: bool = True
    ) -> bool:
        """A new leader records its epoch from the log end offset before any write; True
        when the epoch was new here. Without ``write`` the checkpoint file is left to
        :meth:`write_leader_epochs`."""
        with self._lock:
            return self.leader_epochs.assign(epoch, start_offset, write=write)

    def write_leader_epochs(self) -> None:
        """Checkpoint the leader epochs held only in memory (after
        assign_epoch_start_offset without ``write``, or a follower's append of a new
        epoch); nothing once the log is deleted. It holds the directory's name, not the
        log's lock: appends go on meanwhile, where one waiting for the lock through two
        fsyncs would hold up the whole event loop."""
        with self._dir_lock:
            if not self._deleted:
                self.leader_epochs.write_if_changed()

    # -- new segments ----------------------------------------------------------------------------

    def _new_segment(self, base_offset: int, file_suffix: str = "") -> LogSegment:
        return LogSegment(
            self.directory,
            base_offset,
            self.config,
            clock=self._clock,
            file_suffix=file_suffix,
            rolling_jitter_ms=_jitter(self.config),
        )

    # -- lifecycle ---------------------------------------------------------------------------------

    def rename_dir(self, new_directory: Path) -> None:
        """Rename the partition directory within its log dir (a log-dir move's swap,
        Kafka's renameDir): open files stay open; their paths follow the directory."""
        new_directory = Path(new_directory)
        with self._lock, self._dir_lock:
            self.directory.rename(new_directory)
            fsync_directory(new_directory.parent)
            self.directory = new_directory
            for segment in self._segments:
                segment.directory = new_directory
                for item in (segment.log, segment.offset_index, segment.time_index):
                    item.path = new_directory / item.path.name
            self.leader_epochs.path = new_directory / self.leader_epochs.path.name
            self.producer_state.directory = new_directory

    def close(self) -> None:
        with self._lock:
            self.producer_state.take_snapshot(self._next_offset)
            for segment in self._segments:
                segment.close()

    def delete(self) -> None:
        """Remove the partition's files and directory."""
        with self._lock, self._dir_lock:
            self._deleted = True
            for segment in self._segments:
                segment.delete()
            for leftover in self.directory.iterdir():
                leftover.unlink()
            self.directory.rmdir()

    def __repr__(self) -> str:
        return (
            f"Log({self.directory.name}, start={self.log_start_offset}, "
            f"end={self._next_offset}, segments={len(self._segments)})"
        )


def _jitter(config: LogConfig) -> int:
    if config.segment_jitter_ms <= 0 or config.segment_ms <= 1:
        return 0
    return random.randrange(min(config.segment_jitter_ms, config.segment_ms))
