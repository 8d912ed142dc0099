"""The log of one partition: an ordered list of segments, the last one active.

Appends validate the producer's batches, assign offsets by rewriting each batch's
baseOffset and partitionLeaderEpoch in place (both lie outside the CRC, so no checksum
work and no record is touched), and write them to the active segment. Reads hand out
file slices of whole batches. Retention, DeleteRecords, truncation and the cleaner's
segment replacement change the segment list under one lock; readers take a snapshot of
the list and never block appends.

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

from tidelog.records.batch import (
    PREFIX_SIZE,
    BatchHeader,
    assigned_prefix,
    iter_batch_headers,
    rewrite_base_offset_and_epoch,
)
from tidelog.records.legacy import legacy_magic, read_message_set, to_record_batch
from tidelog.records.validation import validate_producer_records, validate_replicated_records
from tidelog.storage.checkpoints import fsync_directory
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import OffsetOutOfRangeError, StorageError
from tidelog.storage.leader_epoch import LeaderEpochCache
from tidelog.storage.log_append_time import stamp_log_append_time
from tidelog.storage.log_loader import (
    CLEANED_SUFFIX,
    DELETED_SUFFIX,
    SWAP_SUFFIX,
    load_log,
)
from tidelog.storage.producer_state import BatchMetadata, ProducerStateManager
from tidelog.storage.retention import segments_below_start_offset, segments_to_delete
from tidelog.storage.scheduler import Scheduler
from tidelog.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    FetchSlice,
    LogSegment,
    segment_file_name,
)
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


class AppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    size: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    duplicate: bool = False  # a producer's retry of a batch already in the log


class Log:
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

    # -- append --------------------------------------------------------------------------

    def append_as_leader(
        self, records, leader_epoch: int = 0, *, validate: bool = True
    ) -> AppendInfo:
        """Validate a producer's batches and append them with offsets assigned here.

        Offsets are assigned without copying a batch: each batch is written as a new
        16-byte prefix (baseOffset, batchLength, partitionLeaderEpoch) followed by the
        producer's bytes from the magic byte on, in one ``pwritev``. Raises a
        ``RecordsError`` subclass (carrying its Kafka error code) and writes nothing
        when any batch is invalid. ``validate=False`` is for batches the broker built
        itself in memory (the group coordinator's), which are not checked again. A
        message set of magic 0 or 1 (an old producer's) is checked and converted into
        one record batch v2 first, as Kafka's LogValidator does.
        """
        if legacy_magic(records) is not None:  # an old producer's message set
            records = to_record_batch(
                read_message_set(records, require_keys=self.config.compact),
                target_codec=self.config.compression_type,
                levels=self.config.compression_level,
            )
        if validate:
            headers = validate_producer_records(
                records,
                max_message_bytes=self.config.max_message_bytes,
                require_keys=self.config.compact,
            ).batches
        else:
            headers = tuple(iter_batch_headers(records))
        if self.config.message_timestamp_type == "LogAppendTime":
            return self._append_with_log_append_time(records, headers, leader_epoch)
        view = memoryview(records).cast("B")
        with self._lock:
            duplicate = self.producer_state.check(headers)
            if duplicate is not None:
                return _duplicate_info(duplicate)
            first_offset = next_offset = self._next_offset
            self.leader_epochs.assign(leader_epoch, first_offset)
            pieces, batches = [], []
            for header in headers:
                start = header.position
                pieces.append(assigned_prefix(header, next_offset, leader_epoch))
                pieces.append(view[start + PREFIX_SIZE : start + header.size])
                batches.append(
                    header._replace(base_offset=next_offset, partition_leader_epoch=leader_epoch)
                )
                next_offset += header.last_offset_delta + 1
            return self._append(pieces, batches, first_offset, -1)

    def _append_with_log_append_time(self, records, headers, leader_epoch: int) -> AppendInfo:
        """LogAppendTime changes bytes under the CRC, so these batches are copied."""
        data = bytearray(records)
        with self._lock:
            duplicate = self.producer_state.check(headers)
            if duplicate is not None:
                return _duplicate_info(duplicate)
            first_offset = next_offset = self._next_offset
            self.leader_epochs.assign(leader_epoch, first_offset)
            for header in headers:
                rewrite_base_offset_and_epoch(data, header.position, next_offset, leader_epoch)
                next_offset += header.last_offset_delta + 1
            append_time = int(self._clock() * 1000)
            stamp_log_append_time(data, headers, append_time)
            return self._append([data], list(iter_batch_headers(data)), first_offset, append_time)

    def append_as_follower(self, records) -> AppendInfo:
        """Append batches that already carry their offsets (replication): each must be
        whole, intact (CRC) and above the previous one, the first at or above the log
        end offset; a partial batch at the end of a fetch response is left out. A new
        leader epoch among them is checkpointed by the scheduler's thread, not the
        caller's (the replica fetchers share the event loop with every request)."""
        batches = validate_replicated_records(records)
        view = memoryview(records).cast("B")[: batches[-1].position + batches[-1].size]
        with self._lock:
            if batches[0].base_offset < self._next_offset:
                raise OffsetOutOfRangeError(
                    f"batch at offset {batches[0].base_offset} is below the log end offset "
                    f"{self._next_offset} of {self.directory.name}"
                )
            new_epoch = self._assign_batch_epochs(batches)
            appended = self._append([view], batches, batches[0].base_offset, -1)
        if new_epoch:
            self._schedule(self.write_leader_epochs)
        return appended

    def _assign_batch_epochs(self, batches: Sequence[BatchHeader]) -> bool:
        """A follower's batches carry the epochs of the leaders that wrote them; True
        when that changed the entries (in memory only)."""
        cache = self.leader_epochs
        changed = False
        for batch in batches:
            if batch.partition_leader_epoch >= 0:  # -1: written before epochs existed
                epoch, start = batch.partition_leader_epoch, batch.base_offset
                changed |= cache.assign(epoch, start, write=False)
        return changed

    def _append(
        self, pieces: Sequence, batches: Sequence[BatchHeader], first_offset: int, append_time: int
    ) -> AppendInfo:
        last = batches[-1]
        max_batch = max(batches, key=lambda batch: batch.max_timestamp)
        size = last.position + last.size - batches[0].position
        segment = self._maybe_roll(size, max_batch.max_timestamp, first_offset, batches)
        segment.append(pieces, batches)
        self.producer_state.update(batches)
        self._publish_end(last.next_offset)
        if last.next_offset - self.recovery_point >= self.config.flush_messages:
            self.flush()  # flush.messages: durable before the caller acknowledges it
        return AppendInfo(
            first_offset=first_offset,
            last_offset=last.last_offset,
            max_timestamp=max_batch.max_timestamp,
            offset_of_max_timestamp=max_batch.last_offset,
            record_count=sum(batch.records_count for batch in batches),
            size=size,
            log_append_time=append_time,
        )

    def _maybe_roll(
        self, size: int, max_timestamp: int, first_offset: int, batches: Sequence[BatchHeader]
    ) -> LogSegment:
        segment = self.active_segment
        if segment.should_roll(size, max_timestamp, batches, self.config):
            return self.roll(first_offset)
        return segment

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Start a new active segment at the log end offset (or ``expected_next_offset``
        when a follower's append begins past it); flush the old one in the background."""
        with self._lock:
            new_base = max(expected_next_offset or 0, self._next_offset)
            active = self.active_segment
            if active.base_offset == new_base and active.size == 0:
                return active
            active.on_become_inactive()
            self.producer_state.take_snapshot(new_base)
            for suffix in (LOG_SUFFIX, INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                stale = self.directory / segment_file_name(new_base, suffix)
                if stale.exists():
                    logger.warning("deleting stale %s before rolling to it", stale)
                    stale.unlink()
            segment = self._new_segment(new_base)
            self._set_segments([*self._segments, segment])
            self._publish_end(self._next_offset)
        self._schedule(lambda: self.flush(new_base))
        return segment

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

    def _retire(self, segments: Sequence[LogSegment]) -> None:
        """Rename removed segments to ``.deleted`` now (so a crash cannot bring them back)
        and delete their files after ``file.delete.delay.ms``, when no reader still
        sends from them."""
        for segment in segments:
            logger.info("deleting segment %s", segment.log_path)
            segment.change_file_suffixes("", DELETED_SUFFIX)
        if self._scheduler is None:
            for segment in segments:
                segment.delete()
            return
        for segment in segments:
            self._scheduler.schedule(
                self.config.file_delete_delay_ms / 1000,
                lambda segment=segment: self._reporting_io_errors(segment.delete),
            )

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

    # -- flush, truncation, retention --------------------------------------------------------

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

    def truncate_to(self, offset: int) -> bool:
        """Remove every offset >= ``offset`` (a follower diverged from its leader)."""
        with self._lock:
            if offset >= self._next_offset:
                return False
            if offset < self._segments[0].base_offset:
                self.truncate_fully_and_start_at(offset)
                return True
            self._truncations += 1
            keep = [s for s in self._segments if s.base_offset <= offset]
            removed = self._segments[len(keep) :]
            self._set_segments(keep)
            self._retire(removed)
            keep[-1].truncate_to(offset)
            keep[-1].resize_indexes(self.config.segment_index_bytes)
            self._publish_end(keep[-1].read_next_offset())
            self.leader_epochs.truncate_from_end(self._next_offset)
            self._load_producer_state()
            self.recovery_point = min(self.recovery_point, self._next_offset)
            self.log_start_offset = min(self.log_start_offset, self._next_offset)
            return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Drop every segment and start empty at ``offset``."""
        with self._lock:
            self._truncations += 1
            self._retire(self._segments)
            self._set_segments([self._new_segment(offset)])
            self._publish_end(offset)
            self.leader_epochs.clear()
            self.producer_state.clear()
            self.producer_state.delete_snapshots_below(offset + 1)
            self.log_start_offset = offset
            self.recovery_point = offset

    def delete_old_segments(self) -> int:
        """Apply retention (time, size, log start offset); returns segments deleted."""
        now_ms = int(self._clock() * 1000)
        with self._lock:
            doomed = segments_to_delete(self._segments, self.config, self.log_start_offset, now_ms)
            self._delete_segments(doomed)
            return len(doomed)

    def maybe_increment_log_start_offset(self, offset: int) -> int:
        """DeleteRecords: move the log start offset up to ``offset`` and drop the
        segments wholly below it; returns the new log start offset."""
        with self._lock:
            if offset > self._next_offset:
                raise OffsetOutOfRangeError(
                    f"cannot delete records up to {offset}: the log ends at {self._next_offset}"
                )
            if offset > self.log_start_offset:
                self.log_start_offset = offset
                self._delete_segments(
                    segments_below_start_offset(self._segments, self.log_start_offset)
                )
                self.leader_epochs.truncate_from_start(self.log_start_offset)
            return self.log_start_offset

    def _delete_segments(self, doomed: Sequence[LogSegment]) -> None:
        if not doomed:
            return
        gone = set(map(id, doomed))
        self._set_segments([s for s in self._segments if id(s) not in gone])
        self.log_start_offset = max(self.log_start_offset, self._segments[0].base_offset)
        self.leader_epochs.truncate_from_start(self.log_start_offset)
        self._retire(doomed)
        self.producer_state.delete_snapshots_below(self.log_start_offset)

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

    # -- cleaner support -------------------------------------------------------------------------

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty ``.cleaned`` segment that a cleaning writes into."""
        for stale in self.directory.glob(segment_file_name(base_offset, ".*" + CLEANED_SUFFIX)):
            stale.unlink()
        return self._new_segment(base_offset, CLEANED_SUFFIX)

    def _new_segment(self, base_offset: int, file_suffix: str = "") -> LogSegment:
        return LogSegment(
            self.directory,
            base_offset,
            self.config,
            clock=self._clock,
            file_suffix=file_suffix,
            rolling_jitter_ms=_jitter(self.config),
        )

    def replace_segments(
        self, new_segments: Sequence[LogSegment], old_segments: Sequence[LogSegment]
    ) -> None:
        """Swap cleaned segments in for the ones they replace, crash-safely (seed 001):
        ``.cleaned`` → ``.swap`` in descending offset order, old segments → ``.deleted``
        and deleted, then the ``.swap`` suffix is dropped. ``log_loader`` finishes or
        undoes the sequence after a crash at any point."""
        with self._lock:
            current = set(map(id, self._segments))
            missing = [s for s in old_segments if id(s) not in current]
            if missing or self.active_segment in old_segments:
                raise StorageError(
                    f"cannot replace {missing or [self.active_segment]} of "
                    f"{self.directory.name}: the log changed under the cleaning"
                )
            old = sorted(old_segments, key=lambda s: s.base_offset)
            new = sorted(new_segments, key=lambda s: s.base_offset)
            for segment in new:
                segment.flush()  # the data must be durable before the rename commits it
            for segment in reversed(new):
                segment.change_file_suffixes(CLEANED_SUFFIX, SWAP_SUFFIX)
            fsync_directory(self.directory)
            replaced = set(map(id, old))
            self._set_segments([s for s in self._segments if id(s) not in replaced] + new)
            self._retire(old)
            for segment in new:
                segment.change_file_suffixes(SWAP_SUFFIX, "")
            fsync_directory(self.directory)

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


def _duplicate_info(original: BatchMetadata) -> AppendInfo:
    return AppendInfo(
        first_offset=original.first_offset,
        last_offset=original.last_offset,
        max_timestamp=original.timestamp,
        offset_of_max_timestamp=original.last_offset,
        record_count=0,
        size=0,
        log_append_time=-1,
        duplicate=True,
    )


def _jitter(config: LogConfig) -> int:
    if config.segment_jitter_ms <= 0 or config.segment_ms <= 1:
        return 0
    return random.randrange(min(config.segment_jitter_ms, config.segment_ms))
