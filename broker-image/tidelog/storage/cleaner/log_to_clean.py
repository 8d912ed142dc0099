"""Which part of a log a cleaning may touch, and how dirty the log is (seed 000, 001).

A compacted log has a clean head (cleaned before, below the cleaner checkpoint) and a
dirty tail (written since). The dirty section a cleaning may map runs from the first
dirty offset (the checkpoint, clamped to the log) to the first uncleanable offset: the
active segment's base offset, or earlier the base of the first dirty segment holding a
record newer than ``now - min.compaction.lag.ms``. Pure functions over the segment list.
"""

from __future__ import annotations

import bisect
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from tidelog.storage.log import Log
    from tidelog.storage.segment import LogSegment

__all__ = [
    "CleanableOffsets",
    "LogToClean",
    "TopicPartition",
    "cleanable_offsets",
    "max_compaction_delay_ms",
    "segments_between",
]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


def segments_between(
    segments: Sequence[LogSegment], from_offset: int, to_offset: int
) -> list[LogSegment]:
    """The segments holding offsets in [from_offset, to_offset): from the one whose range
    contains ``from_offset`` (or the first) up to the last with a base below
    ``to_offset`` (Kafka's ``logSegments(from, to)``)."""
    if from_offset >= to_offset or not segments:
        return []
    bases = [segment.base_offset for segment in segments]
    first = max(0, bisect.bisect_right(bases, from_offset) - 1)
    last = bisect.bisect_left(bases, to_offset)
    return list(segments[first:last])


class CleanableOffsets(NamedTuple):
    first_dirty_offset: int
    first_uncleanable_offset: int
    # The checkpoint was out of the log's range and was reset: write it back.
    force_update_checkpoint: bool


def cleanable_offsets(log: Log, last_clean_offset: int | None, now_ms: int) -> CleanableOffsets:
    """Where the dirty section of ``log`` starts and where cleaning must stop."""
    log_start_offset = log.log_start_offset
    checkpoint = log_start_offset if last_clean_offset is None else last_clean_offset
    force = False
    if checkpoint < log_start_offset:
        if not log.config.delete:
            logger.warning(
                "resetting the first dirty offset of %s to the log start offset %d: the "
                "checkpointed offset %d is below it",
                log,
                log_start_offset,
                checkpoint,
            )
        checkpoint, force = log_start_offset, True
    elif checkpoint > log.log_end_offset:
        logger.warning(
            "the first dirty offset %d of %s is past the log end offset %d; cleaning "
            "the whole log",
            checkpoint,
            log,
            log.log_end_offset,
        )
        checkpoint, force = log_start_offset, True

    segments = log.segments
    active_base = segments[-1].base_offset
    first_uncleanable = active_base
    min_lag = max(log.config.min_compaction_lag_ms, 0)
    if min_lag > 0:
        for segment in segments_between(segments, checkpoint, active_base):
            if segment.largest_timestamp > now_ms - min_lag:
                first_uncleanable = min(first_uncleanable, segment.base_offset)
                break
    return CleanableOffsets(checkpoint, max(checkpoint, first_uncleanable), force)


def _first_batch_timestamp(segment: LogSegment) -> int:
    """Estimated earliest timestamp of a segment: its first batch's max timestamp."""
    first = next(segment.log.batch_headers(), None)
    return first.max_timestamp if first is not None else -1


def max_compaction_delay_ms(log: Log, first_dirty_offset: int, now_ms: int) -> int:
    """How long past ``max.compaction.lag.ms`` the oldest dirty record has waited; 0 when
    no dirty record has waited that long (KIP-354)."""
    segments = log.segments
    dirty = segments_between(segments, first_dirty_offset, segments[-1].base_offset)
    timestamps = [ts for ts in map(_first_batch_timestamp, dirty) if ts > 0]
    if not timestamps:
        return 0
    clean_until = now_ms - max(log.config.max_compaction_lag_ms, 0)
    earliest = min(timestamps)
    return clean_until - earliest if earliest < clean_until else 0


@dataclass
class LogToClean:
    """A log chosen for cleaning and the sizes of its clean and cleanable parts."""

    topic_partition: TopicPartition
    log: Log
    first_dirty_offset: int
    first_uncleanable_offset: int
    needs_compaction_now: bool = False
    clean_bytes: int = field(init=False)
    cleanable_bytes: int = field(init=False)

    def __post_init__(self) -> None:
        segments = self.log.segments
        self.clean_bytes = sum(
            s.size for s in segments_between(segments, -1, self.first_dirty_offset)
        )
        self.cleanable_bytes = sum(
            s.size
            for s in segments_between(
                segments,
                self.first_dirty_offset,
                max(self.first_dirty_offset, self.first_uncleanable_offset),
            )
        )

    @property
    def total_bytes(self) -> int:
        return self.clean_bytes + self.cleanable_bytes

    @property
    def cleanable_ratio(self) -> float:
        """The dirty ratio: cleanable bytes / (clean + cleanable bytes)."""
        total = self.total_bytes
        return self.cleanable_bytes / total if total else 0.0

    @property
    def log_dir(self):
        return self.log.directory.parent
