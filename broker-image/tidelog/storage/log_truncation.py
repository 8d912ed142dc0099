"""Changes that take segments or offsets out of a partition's log: truncation of its
tail (a follower diverged from its leader), of its head (retention, DeleteRecords), and
the cleaner's replacement of segments by cleaned ones; each removed segment is retired
(renamed ``.deleted`` at once, its files deleted after ``file.delete.delay.ms``).

A part of :class:`tidelog.storage.log.Log`, which mixes :class:`LogTruncation` in; the
segment list, locks and offsets these methods change are the Log's, described in
``log.py``. Every change here holds the log's lock and replaces the segment list whole,
so readers keep the snapshot they took.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

from tidelog.storage.checkpoints import fsync_directory
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import OffsetOutOfRangeError, StorageError
from tidelog.storage.leader_epoch import LeaderEpochCache
from tidelog.storage.log_loader import CLEANED_SUFFIX, DELETED_SUFFIX, SWAP_SUFFIX
from tidelog.storage.producer_state import ProducerStateManager
from tidelog.storage.retention import segments_below_start_offset, segments_to_delete
from tidelog.storage.scheduler import Scheduler
from tidelog.storage.segment import LogSegment, segment_file_name

__all__ = ["LogTruncation"]

logger = logging.getLogger(__name__)


class LogTruncation:
    """The truncation, retention and segment-replacement half of
    :class:`~tidelog.storage.log.Log`."""

    # The Log's state that these changes read and change (see log.py).
    directory: Path
    config: LogConfig
    leader_epochs: LeaderEpochCache
    producer_state: ProducerStateManager
    log_start_offset: int
    recovery_point: int
    _clock: Callable[[], float]
    _scheduler: Scheduler | None
    _lock: threading.RLock
    _truncations: int

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

    def new_cleaned_segment(self, base_offset: int) -> LogSegment:
        """An empty ``.cleaned`` segment that a cleaning writes into."""
        for stale in self.directory.glob(segment_file_name(base_offset, ".*" + CLEANED_SUFFIX)):
            stale.unlink()
        return self._new_segment(base_offset, CLEANED_SUFFIX)

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
