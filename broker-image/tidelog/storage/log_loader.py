"""Loading a partition directory: finish or undo interrupted replacements, open the
segments, rebuild bad indexes and, after an unclean shutdown, recover the tail.

Interrupted segment replacements (the cleaner's ``.cleaned`` → ``.swap`` → ``.deleted``
sequence, seed 001) are resolved in this order:

1. ``*.deleted`` files are old segments whose replacement had already started: delete.
2. ``*.cleaned`` files mean the renaming to ``.swap`` had not finished. That renaming
   goes in descending offset order, so every ``.swap`` at or above the lowest
   ``.cleaned`` base offset belongs to the aborted operation: delete those ``.swap``
   files, then all ``.cleaned`` files. The old segments are still complete.
3. The remaining ``.swap`` segments completed step 1: they replace every segment whose
   base offset falls in their offset range. The old segments go (rename to
   ``.deleted``, delete), the ``.swap`` suffix is removed and the indexes are rebuilt.

Recovering a segment also records in the leader epoch cache every batch epoch newer than
the latest it holds, as Kafka's LogSegment.recover does: the cache then covers the epochs
of data the checkpoint file may not have seen.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from tidelog.storage.config import LogConfig
from tidelog.storage.errors import CorruptIndexError
from tidelog.storage.leader_epoch import LeaderEpochCache
from tidelog.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
)

__all__ = ["CLEANED_SUFFIX", "DELETED_SUFFIX", "SWAP_SUFFIX", "LoadedLog", "load_log"]

log = logging.getLogger(__name__)

CLEANED_SUFFIX = ".cleaned"
SWAP_SUFFIX = ".swap"
DELETED_SUFFIX = ".deleted"
_SEGMENT_FILE = re.compile(r"^(\d{20})(\.log|\.index|\.timeindex)(\.cleaned|\.swap|\.deleted)?$")


class LoadedLog(NamedTuple):
    segments: list[LogSegment]
    next_offset: int
    recovery_point: int


class _SegmentFile(NamedTuple):
    path: Path
    base_offset: int
    kind: str
    suffix: str


def _segment_files(directory: Path) -> list[_SegmentFile]:
    found = []
    for path in directory.iterdir():
        match = _SEGMENT_FILE.match(path.name)
        if match:
            found.append(_SegmentFile(path, int(match[1]), match[2], match[3] or ""))
    return found


def load_log(
    directory: Path,
    config: LogConfig,
    *,
    clock: Callable[[], float],
    log_start_offset: int,
    recovery_point: int,
    had_clean_shutdown: bool,
    leader_epochs: LeaderEpochCache,
    rolling_jitter_ms: int = 0,
) -> LoadedLog:
    def open_segment(base_offset: int, suffix: str = "") -> LogSegment:
        return LogSegment(
            directory,
            base_offset,
            config,
            clock=clock,
            file_suffix=suffix,
            rolling_jitter_ms=rolling_jitter_ms,
        )

    swap_bases = _remove_temp_files_and_collect_swaps(directory)
    _complete_swaps(directory, swap_bases, open_segment)
    segments = _open_segments(directory, open_segment)
    if not segments:
        segments = [open_segment(log_start_offset)]
    if not had_clean_shutdown:
        recovery_point = _recover_tail(segments, recovery_point, leader_epochs)
    next_offset = segments[-1].read_next_offset()
    segments[-1].resize_indexes(config.segment_index_bytes)
    return LoadedLog(segments, next_offset, min(recovery_point, next_offset))


def _remove_temp_files_and_collect_swaps(directory: Path) -> list[int]:
    files = _segment_files(directory)
    for item in files:
        if item.suffix == DELETED_SUFFIX:
            log.info("deleting %s left by an interrupted segment deletion", item.path)
            item.path.unlink()
    cleaned = [item for item in files if item.suffix == CLEANED_SUFFIX]
    swaps = [item for item in files if item.suffix == SWAP_SUFFIX]
    if cleaned:
        lowest_cleaned = min(item.base_offset for item in cleaned)
        for item in swaps:
            if item.base_offset >= lowest_cleaned:
                log.info("deleting %s: its replacement did not finish renaming", item.path)
                item.path.unlink()
        swaps = [item for item in swaps if item.base_offset < lowest_cleaned]
        for item in cleaned:
            log.info("deleting %s left by an aborted cleaning", item.path)
            item.path.unlink()
    swap_logs = []
    for item in swaps:
        if item.kind == LOG_SUFFIX:
            swap_logs.append(item.base_offset)
        else:
            item.path.unlink()  # indexes of a swapped-in segment are rebuilt
    return sorted(swap_logs)


def _complete_swaps(directory: Path, swap_bases: list[int], open_segment) -> None:
    for base_offset in swap_bases:
        swap = open_segment(base_offset, SWAP_SUFFIX)
        swap.recover()
        end_offset = swap.read_next_offset()
        for item in _segment_files(directory):
            replaced = base_offset <= item.base_offset < end_offset and item.suffix == ""
            if replaced:
                log.info("completing the swap of %s: deleting %s", swap.log_path, item.path)
                deleted = item.path.with_name(item.path.name + DELETED_SUFFIX)
                item.path.rename(deleted)
                deleted.unlink()
        swap.change_file_suffixes(SWAP_SUFFIX, "")
        swap.close()


def _open_segments(directory: Path, open_segment) -> list[LogSegment]:
    files = _segment_files(directory)
    log_bases = {item.base_offset for item in files if item.kind == LOG_SUFFIX}
    for item in files:
        if item.base_offset not in log_bases:
            log.warning("deleting %s: it has no log file", item.path)
            item.path.unlink()
    segments = []
    for base_offset in sorted(log_bases):
        prefix = directory / f"{base_offset:020d}"
        missing = [
            suffix
            for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX)
            if not prefix.with_name(prefix.name + suffix).exists()
        ]
        segment = open_segment(base_offset)
        if missing:
            log.warning("%s: missing %s; rebuilding its indexes", segment.log_path, missing)
            segment.recover()
        else:
            try:
                segment.sanity_check()
            except CorruptIndexError as error:
                log.warning("%s; rebuilding the indexes of %s", error, segment.log_path)
                segment.recover()
        segments.append(segment)
    return segments


def _recover_tail(
    segments: list[LogSegment], recovery_point: int, leader_epochs: LeaderEpochCache
) -> int:
    """Re-validate every segment that may hold unflushed data; after a truncation,
    everything later is garbage from the crash and is deleted."""
    first = max(
        (i for i, segment in enumerate(segments) if segment.base_offset <= recovery_point),
        default=0,
    )
    for i in range(first, len(segments)):
        segment = segments[i]
        log.info("recovering unflushed segment %s", segment.log_path)
        truncated = segment.recover()
        _assign_newer_epochs(segment, leader_epochs)
        if truncated and i + 1 < len(segments):
            for later in segments[i + 1 :]:
                log.warning("deleting %s: it follows a truncated segment", later.log_path)
                later.delete()
            del segments[i + 1 :]
            break
    # Recovered bytes may still sit only in the page cache: the point does not move.
    return recovery_point


def _assign_newer_epochs(segment: LogSegment, leader_epochs: LeaderEpochCache) -> None:
    for header in segment.log.batch_headers():
        if header.partition_leader_epoch > leader_epochs.latest_epoch:
            leader_epochs.assign(header.partition_leader_epoch, header.base_offset)
