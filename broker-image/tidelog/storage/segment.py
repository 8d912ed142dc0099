"""One log segment: a ``.log`` file with its ``.index`` and ``.timeindex``.

Files are named by the segment's base offset, ``%020d`` plus the suffix; an optional
second suffix (``.cleaned``, ``.swap``, ``.deleted``) marks files in the middle of a
replacement (see ``log_loader``). The segment appends batches whose offsets are already
assigned and keeps the indexes sparse: one entry per ``index.interval.bytes`` written,
at a batch boundary, so per-append work is per batch, never per record.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from tidelog.records.batch import MAGIC_V2, BatchHeader
from tidelog.records.crc import is_crc_valid
from tidelog.records.reader import decode_batch
from tidelog.storage.config import LogConfig
from tidelog.storage.file_records import FileRecords, FileSlice, LogOffsetPosition
from tidelog.storage.offset_index import OffsetIndex
from tidelog.storage.time_index import NO_TIMESTAMP, TimeIndex, TimestampOffset

__all__ = [
    "INDEX_SUFFIX",
    "LOG_SUFFIX",
    "TIME_INDEX_SUFFIX",
    "FetchSlice",
    "LogSegment",
    "segment_file_name",
]

log = logging.getLogger(__name__)

LOG_SUFFIX = ".log"
INDEX_SUFFIX = ".index"
TIME_INDEX_SUFFIX = ".timeindex"
MAX_RELATIVE_OFFSET = 0x7FFFFFFF


def segment_file_name(base_offset: int, suffix: str) -> str:
    return f"{base_offset:020d}{suffix}"


class FetchSlice(NamedTuple):
    """What a read returns: the first offset it starts at and the bytes to send."""

    first_offset: int
    records: FileSlice


class LogSegment:
    def __init__(
        self,
        directory: Path,
        base_offset: int,
        config: LogConfig,
        *,
        clock: Callable[[], float],
        file_suffix: str = "",
        rolling_jitter_ms: int = 0,
    ):
        self.base_offset = base_offset
        self.directory = Path(directory)
        self._clock = clock
        self.index_interval_bytes = config.index_interval_bytes
        self.rolling_jitter_ms = rolling_jitter_ms
        self.log = FileRecords(self._path(LOG_SUFFIX, file_suffix))
        self.offset_index = OffsetIndex(
            self._path(INDEX_SUFFIX, file_suffix), base_offset, config.segment_index_bytes
        )
        self.time_index = TimeIndex(
            self._path(TIME_INDEX_SUFFIX, file_suffix), base_offset, config.segment_index_bytes
        )
        self.bytes_since_last_index_entry = 0
        self.created_ms = self._now_ms()
        self._rolling_based_timestamp: int | None = None
        last = self.time_index.last_entry
        self.max_timestamp_so_far = last.timestamp
        self.offset_of_max_timestamp_so_far = last.offset

    def _path(self, suffix: str, file_suffix: str = "") -> Path:
        return self.directory / (segment_file_name(self.base_offset, suffix) + file_suffix)

    def _now_ms(self) -> int:
        return int(self._clock() * 1000)

    @property
    def log_path(self) -> Path:
        return self.log.path

    @property
    def index_path(self) -> Path:
        return self.offset_index.path

    @property
    def time_index_path(self) -> Path:
        return self.time_index.path

    @property
    def size(self) -> int:
        return self.log.size

    # -- append --------------------------------------------------------------------------

    def append(self, buffers: Sequence, batches: Sequence[BatchHeader]) -> None:
        """Append ``buffers`` (whole batches with offsets assigned, in pieces that are
        written in order) described by ``batches``.

        ``batches`` carry positions relative to the start of this append; the index gets
        an entry for a batch when more than ``index.interval.bytes`` were written since
        the last one.
        """
        if not batches:
            return
        physical = self.log.size
        if physical == 0:
            self._rolling_based_timestamp = batches[0].max_timestamp
        self.log.append(buffers)
        self._index_batches(batches, physical)

    def _index_batches(self, batches: Sequence[BatchHeader], physical: int) -> None:
        for batch in batches:
            if batch.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = batch.max_timestamp
                self.offset_of_max_timestamp_so_far = batch.last_offset
            if self.bytes_since_last_index_entry > self.index_interval_bytes and not (
                # The log bytes are written already: a full index only costs density here
                # (lookups scan a little further), never the append. Rolling keeps this rare.
                self.offset_index.is_full or self.time_index.is_full
            ):
                self.offset_index.append(batch.last_offset, physical + batch.position)
                self.time_index.maybe_append(
                    self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far
                )
                self.bytes_since_last_index_entry = 0
            self.bytes_since_last_index_entry += batch.size

    def can_hold(self, last_offset: int) -> bool:
        """Whether ``last_offset`` fits the int32 relative offsets of the indexes."""
        return 0 <= last_offset - self.base_offset <= MAX_RELATIVE_OFFSET

    def should_roll(
        self,
        messages_size: int,
        max_timestamp: int,
        batches: Sequence[BatchHeader],
        config: LogConfig,
    ) -> bool:
        """Kafka's roll rules: size, age (segment.ms with jitter, only once the segment
        holds data), no room in an index for this append's entries, or an offset beyond
        the int32 span of relative offsets."""
        if self.size > config.segment_bytes - messages_size:
            return True
        if self.size > 0 and (
            self._time_waited_for_roll(max_timestamp) > config.segment_ms - self.rolling_jitter_ms
        ):
            return True
        entries = len(batches)  # at most one index entry per batch
        if self.offset_index.entries + entries > self.offset_index.max_entries:
            return True
        if self.time_index.entries + entries > self.time_index.max_entries - 1:
            return True
        return not self.can_hold(batches[-1].last_offset)

    def _time_waited_for_roll(self, max_timestamp_in_messages: int) -> int:
        if self._rolling_based_timestamp is None:
            first = next(self.log.batch_headers(), None)
            self._rolling_based_timestamp = first.max_timestamp if first else NO_TIMESTAMP
        if self._rolling_based_timestamp >= 0:
            return max_timestamp_in_messages - self._rolling_based_timestamp
        return self._now_ms() - self.created_ms

    def on_become_inactive(self) -> None:
        """Called when a newer segment takes over appends: record the final maximum
        timestamp in the time index and trim both indexes to their entries."""
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, True
            )
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()

    def resize_indexes(self, size: int) -> None:
        self.offset_index.resize(size)
        self.time_index.resize(size)

    # -- read ------------------------------------------------------------------------------

    def translate_offset(self, offset: int, starting_position: int = 0) -> LogOffsetPosition | None:
        """Position of the batch holding ``offset`` (or the first after it), via the index."""
        mapping = self.offset_index.lookup(offset)
        return self.log.search_for_offset_with_size(
            offset, max(mapping.position, starting_position)
        )

    def read(
        self,
        start_offset: int,
        max_size: int,
        max_position: int | None = None,
        min_one_message: bool = True,
    ) -> FetchSlice | None:
        """Whole batches from the one holding ``start_offset``, up to ``max_size`` bytes
        (but always the first batch when ``min_one_message``) and below ``max_position``.
        None when the segment holds nothing at or after ``start_offset``."""
        limit = self.log.size if max_position is None else max_position
        start = self.translate_offset(start_offset)
        if start is None or start.position >= limit:
            return None
        wanted = max(max_size, start.size) if min_one_message else max_size
        end = start.position + min(limit - start.position, wanted)
        if end < limit:
            end = self._last_batch_boundary(start.position, end)
        return FetchSlice(start_offset, self.log.slice(start.position, end - start.position))

    def _last_batch_boundary(self, start: int, end: int) -> int:
        """The last batch boundary in (start, end], or ``start`` if no whole batch fits.

        The offset index (entries at batch starts) jumps close to ``end`` so the walk
        covers at most about ``index.interval.bytes``.
        """
        near = self.offset_index.floor_position(end)
        position = near.position if near is not None and near.position > start else start
        boundary = position if position > start else start
        for header in self.log.batch_headers(position, end):
            boundary = header.position + header.size
        return boundary

    def read_next_offset(self) -> int:
        """The offset after the last batch of this segment."""
        start = self.offset_index.lookup(self.offset_index.last_offset).position
        next_offset = self.base_offset
        for header in self.log.batch_headers(start):
            next_offset = header.next_offset
        return next_offset

    def find_offset_by_timestamp(
        self, timestamp: int, starting_offset: int
    ) -> TimestampOffset | None:
        """The first record at or after ``starting_offset`` with a timestamp >= target."""
        entry = self.time_index.lookup(timestamp)
        position = self.offset_index.lookup(max(entry.offset, starting_offset)).position
        for header in self.log.batch_headers(position):
            if header.max_timestamp < timestamp or header.last_offset < starting_offset:
                continue
            batch = decode_batch(self.log.read(header.position, header.size))
            for record in batch.records:
                if record.timestamp >= timestamp and record.offset >= starting_offset:
                    return TimestampOffset(record.timestamp, record.offset)
        return None

    @property
    def largest_timestamp(self) -> int:
        """The segment's max record timestamp, or its file's mtime when it has none."""
        if self.max_timestamp_so_far >= 0:
            return self.max_timestamp_so_far
        return self.last_modified_ms

    @property
    def last_modified_ms(self) -> int:
        return int(os.stat(self.log.path).st_mtime * 1000)

    # -- truncation and recovery -----------------------------------------------------------

    def truncate_to(self, offset: int) -> int:
        """Remove every batch holding offsets >= ``offset``; returns the bytes removed."""
        mapping = self.translate_offset(offset)
        self.offset_index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        if mapping is None:
            return 0
        removed = self.log.truncate_to(mapping.position)
        self.bytes_since_last_index_entry = 0
        if self.log.size == 0:
            self.created_ms = self._now_ms()
            self._rolling_based_timestamp = None
        self._reload_max_timestamp()
        return removed

    def _reload_max_timestamp(self) -> None:
        last = self.time_index.last_entry
        self.max_timestamp_so_far = last.timestamp
        self.offset_of_max_timestamp_so_far = last.offset
        start = self.offset_index.lookup(last.offset).position if last.timestamp >= 0 else 0
        for header in self.log.batch_headers(start):
            if header.max_timestamp > self.max_timestamp_so_far:
                self.max_timestamp_so_far = header.max_timestamp
                self.offset_of_max_timestamp_so_far = header.last_offset

    def recover(self) -> int:
        """Re-validate every batch, rebuild both indexes, cut a torn or corrupt tail.

        Returns the bytes truncated. A batch is valid when its frame fits the file, its
        magic is 2, its CRC matches and its offsets follow the previous batch's.
        """
        self.offset_index.reset()
        self.time_index.reset()
        self.max_timestamp_so_far = NO_TIMESTAMP
        self.offset_of_max_timestamp_so_far = self.base_offset
        self.bytes_since_last_index_entry = 0
        valid_bytes = 0
        next_offset = self.base_offset
        for header, data in self.log.batches():
            problem = _batch_problem(header, data, next_offset) or (
                None if self.can_hold(header.last_offset) else "offset beyond this segment's span"
            )
            if problem:
                log.warning(
                    "%s: %s at position %d (offset %d); truncating",
                    self.log.path,
                    problem,
                    header.position,
                    header.base_offset,
                )
                break
            self._index_batches([header], 0)
            valid_bytes = header.position + header.size
            next_offset = header.next_offset
        removed = self.log.size - valid_bytes
        if removed:
            log.warning(
                "%s: truncating %d invalid bytes at position %d (next offset %d)",
                self.log.path,
                removed,
                valid_bytes,
                next_offset,
            )
            self.log.truncate_to(valid_bytes)
        if self.max_timestamp_so_far >= 0:
            self.time_index.maybe_append(
                self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, True
            )
        # Rebuilt indexes are trimmed; the loader re-expands the active segment's.
        self.offset_index.trim_to_valid_size()
        self.time_index.trim_to_valid_size()
        return removed

    def sanity_check(self) -> None:
        """Cheap checks of the indexes against the log; raises CorruptIndexError."""
        self.offset_index.sanity_check(self.log.size)
        self.time_index.sanity_check()

    # -- files ---------------------------------------------------------------------------------

    def flush(self) -> None:
        self.log.flush()
        self.offset_index.flush()
        self.time_index.flush()

    def change_file_suffixes(self, old_suffix: str, new_suffix: str) -> None:
        for item in (self.log, self.offset_index, self.time_index):
            name = item.path.name
            if not name.endswith(old_suffix):
                raise ValueError(f"{item.path} does not end with {old_suffix!r}")
            item.rename(item.path.with_name(name[: len(name) - len(old_suffix)] + new_suffix))

    def close(self) -> None:
        # Like a roll, a close records the final maximum timestamp (Kafka does the same,
        # so a reopened segment knows its largest timestamp from the index alone).
        try:
            if self.max_timestamp_so_far >= 0:
                self.time_index.maybe_append(
                    self.max_timestamp_so_far, self.offset_of_max_timestamp_so_far, True
                )
            self.offset_index.close()
            self.time_index.close()
        finally:  # a failed disk must not leak the other descriptors
            self.offset_index.close_quietly()
            self.time_index.close_quietly()
            self.log.close()

    def delete(self) -> None:
        self.offset_index.delete()
        self.time_index.delete()
        self.log.delete()

    def __repr__(self) -> str:
        return f"LogSegment({self.log.path}, size={self.size})"


def _batch_problem(header: BatchHeader, data: bytes, expected_offset: int) -> str | None:
    if header.magic != MAGIC_V2:
        return f"unsupported magic {header.magic}"
    if not is_crc_valid(data, header, offset=0):
        return "CRC mismatch"
    if header.last_offset_delta < 0 or header.base_offset < expected_offset:
        return f"offsets go backwards (base {header.base_offset}, expected >= {expected_offset})"
    return None
