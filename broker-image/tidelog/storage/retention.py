"""Which old segments retention removes: by log start offset, ``retention.ms`` and
``retention.bytes``. Pure decisions over the segment list; the log does the deleting.

Rules (Kafka's): segments are considered oldest first and the scan stops at the first
one that may stay; the active segment is never deleted.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from tidelog.storage.config import LogConfig
from tidelog.storage.segment import LogSegment

__all__ = ["segments_below_start_offset", "segments_to_delete"]


def segments_below_start_offset(
    segments: Sequence[LogSegment], log_start_offset: int
) -> list[LogSegment]:
    """Segments whose every offset is below the log start offset (the next segment
    starts at or before it)."""
    doomed = []
    for segment, following in pairwise(segments):
        if following.base_offset > log_start_offset:
            break
        doomed.append(segment)
    return doomed


def _breaching_time(segments: Sequence[LogSegment], config: LogConfig, now_ms: int):
    if config.retention_ms < 0:
        return []
    doomed = []
    for segment in segments[:-1]:
        if now_ms - segment.largest_timestamp <= config.retention_ms:
            break
        doomed.append(segment)
    return doomed


def _breaching_size(segments: Sequence[LogSegment], config: LogConfig):
    if config.retention_bytes < 0:
        return []
    excess = sum(segment.size for segment in segments) - config.retention_bytes
    doomed = []
    for segment in segments[:-1]:
        if excess - segment.size < 0:
            break
        excess -= segment.size
        doomed.append(segment)
    return doomed


def segments_to_delete(
    segments: Sequence[LogSegment], config: LogConfig, log_start_offset: int, now_ms: int
) -> list[LogSegment]:
    """Every segment retention removes now, oldest first; never the last (active) one."""
    doomed = segments_below_start_offset(segments, log_start_offset)
    if config.delete:
        for rule in (_breaching_time(segments, config, now_ms), _breaching_size(segments, config)):
            if len(rule) > len(doomed):
                doomed = rule
    return doomed
