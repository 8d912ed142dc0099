"""One cleaning of one log: Kafka's ``Cleaner.doClean`` (seed 000 "清理的工作原理", seed 001).

1. **Map** the dirty section, oldest segment first: every keyed record's offset goes
   into the offset map under its key's hash. Mapping stops at a segment boundary when
   the next segment might not fit; at least the first dirty segment must fit, otherwise
   the cleaning fails and says how to give the map more memory.
2. **Group** every segment from the log start up to the end of the mapped range so
   that each group fits one segment: total log bytes ≤ ``segment.bytes``, index bytes ≤
   ``segment.index.bytes``, offsets within an int32 of the first base offset.
3. **Clean** each group into one ``.cleaned`` segment. A record is kept when it is the
   latest for its key (the map has no entry for the key, or an offset ≤ the record's);
   a tombstone (null value) only while its segment was modified less than
   ``delete.retention.ms`` before the newest clean segment; a record without a key
   never. Each batch keeps its baseOffset, lastOffsetDelta, record offset and timestamp
   deltas, producer id/epoch/sequence, timestamps, codec and leader epoch; a batch with
   every record kept is copied byte for byte, one with none kept is dropped. Control
   and transactional batches are copied untouched and never mapped (no transaction
   support yet: nothing is dropped on the strength of data that may be aborted).
4. **Swap**: the cleaned segment gets the last modified time of the group's newest
   segment (tombstone ages depend on it), is flushed, and replaces the group through
   ``Log.replace_segments`` (``.cleaned`` → ``.swap`` → ``.deleted``, seed 001).

The cleaning returns the end of the mapped range, the next first dirty offset, which
the caller checkpoints. ``check_done`` is called between batches; it raises
:class:`LogCleaningAbortedError` to stop, and the ``.cleaned`` files of the group in
progress are deleted, leaving the log as it was (groups already swapped stay swapped:
each is a complete, correct cleaning on its own).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from tidelog.records.batch import (
    BATCH_HEADER_SIZE,
    CONTROL_FLAG,
    LOG_OVERHEAD,
    TRANSACTIONAL_FLAG,
    BatchHeader,
    iter_batch_headers,
    read_batch_header,
)
from tidelog.records.crc import batch_crc
from tidelog.records.errors import InvalidCrcError
from tidelog.storage.cleaner import record_passes
from tidelog.storage.cleaner.batch_filter import rebuild_batch, records_section
from tidelog.storage.cleaner.errors import CleanerError, OffsetMapFullError
from tidelog.storage.cleaner.log_to_clean import (
    LogToClean,
    TopicPartition,
    cleanable_offsets,
    max_compaction_delay_ms,
    segments_between,
)
from tidelog.storage.cleaner.offset_map import OffsetMap
from tidelog.storage.cleaner.record_passes import RecordPasses
from tidelog.storage.segment import MAX_RELATIVE_OFFSET

if TYPE_CHECKING:
    from tidelog.storage.config import LogConfig
    from tidelog.storage.log import Log
    from tidelog.storage.segment import LogSegment

__all__ = [
    "DEFAULT_IO_BUFFER_SIZE",
    "Cleaner",
    "CleanerStats",
    "clean_log",
    "group_segments_by_size",
]

logger = logging.getLogger(__name__)

DEFAULT_IO_BUFFER_SIZE = 512 * 1024
_UNTOUCHABLE = CONTROL_FLAG | TRANSACTIONAL_FLAG
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD


def _never_done(topic_partition: TopicPartition) -> None:
    return None


@dataclass
class CleanerStats:
    """What one cleaning did; times are wall-clock seconds (``time.perf_counter``)."""

    map_bytes_read: int = 0
    map_messages_read: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    messages_read: int = 0
    messages_written: int = 0
    invalid_messages: int = 0
    tombstones_removed: int = 0
    segments_mapped: int = 0
    segments_cleaned: int = 0
    groups: int = 0
    map_size: int = 0
    buffer_utilization: float = 0.0
    start_time: float = 0.0
    map_complete_time: float = 0.0
    end_time: float = 0.0

    @property
    def elapsed_secs(self) -> float:
        return max(self.end_time - self.start_time, 1e-9)

    @property
    def map_elapsed_secs(self) -> float:
        return max(self.map_complete_time - self.start_time, 0.0)

    @property
    def mb_per_sec(self) -> float:
        """Log processed (bytes read by the cleaning pass) per second of the whole run."""
        return self.bytes_read / self.elapsed_secs / (1024 * 1024)

    @property
    def map_mb_per_sec(self) -> float:
        return self.map_bytes_read / max(self.map_elapsed_secs, 1e-9) / (1024 * 1024)

    def summary(self) -> str:
        return (
            f"indexed {self.map_bytes_read / 1048576:.1f} MB in {self.map_elapsed_secs:.2f} s "
            f"({self.map_mb_per_sec:.1f} MB/s); cleaned {self.bytes_read / 1048576:.1f} MB "
            f"to {self.bytes_written / 1048576:.1f} MB in {self.elapsed_secs:.2f} s "
            f"({self.mb_per_sec:.1f} MB/s); {self.messages_read} messages read, "
            f"{self.messages_written} written; map {self.map_size} keys, "
            f"{100 * self.buffer_utilization:.1f}% of its slots"
        )


# -- reading segments ----------------------------------------------------------------------


def _iter_batches(
    segment: LogSegment, position: int, buffer_size: int
) -> Iterator[tuple[BatchHeader, bytes]]:
    """Every whole batch from ``position``, read ``buffer_size`` bytes at a time. Yields
    each header (``position`` relative to the chunk) with its chunk. A batch larger than
    the buffer gets a read of its own size; a torn tail ends the iteration."""
    end = segment.size
    records = segment.log
    while position < end:
        chunk = records.read(position, min(buffer_size, end - position))
        consumed = 0
        for header in iter_batch_headers(chunk):
            yield header, chunk
            consumed = header.position + header.size
        if consumed == 0:
            if len(chunk) < BATCH_HEADER_SIZE:
                return
            header = read_batch_header(chunk)
            if header.batch_length < _MIN_BATCH_LENGTH or position + header.size > end:
                return
            buffer_size = max(buffer_size, header.size)
            continue
        position += consumed


# -- grouping ------------------------------------------------------------------------------


def group_segments_by_size(
    segments: Sequence[LogSegment], max_size: int, max_index_size: int, end_offset: int
) -> list[list[LogSegment]]:
    """Consecutive runs of ``segments`` that each fit one segment: log bytes ≤
    ``max_size``, offset and time index bytes ≤ ``max_index_size``, and every offset
    within ``MAX_RELATIVE_OFFSET`` of the run's first base offset. ``end_offset`` bounds
    the offsets of the last segment (the next segment's base offset)."""
    groups = []
    remaining = list(segments)
    while remaining:
        first = remaining.pop(0)
        group = [first]
        log_size = first.size
        index_size = first.offset_index.size_in_bytes
        time_index_size = first.time_index.size_in_bytes
        while remaining:
            candidate = remaining[0]
            following = remaining[1].base_offset if len(remaining) > 1 else end_offset
            if (
                log_size + candidate.size > max_size
                or index_size + candidate.offset_index.size_in_bytes > max_index_size
                or time_index_size + candidate.time_index.size_in_bytes > max_index_size
                or (
                    candidate.size > 0
                    and following - 1 - group[0].base_offset > MAX_RELATIVE_OFFSET
                )
            ):
                break
            group.append(remaining.pop(0))
            log_size += candidate.size
            index_size += candidate.offset_index.size_in_bytes
            time_index_size += candidate.time_index.size_in_bytes
        groups.append(group)
    return groups


# -- writing the cleaned segment -----------------------------------------------------------


class _SegmentWriter:
    """Collects retained batches (slices of the read chunks, or rebuilt batches) and
    appends them to the cleaned segment in one vectored write per ``buffer_size``."""

    def __init__(self, segment: LogSegment, buffer_size: int):
        self.segment = segment
        self.buffer_size = buffer_size
        self.pieces: list = []
        self.headers: list[BatchHeader] = []
        self.pending = 0
        self.written = 0

    def copy(self, chunk: bytes, header: BatchHeader) -> None:
        start = header.position
        self.pieces.append(memoryview(chunk)[start : start + header.size])
        self.headers.append(header._replace(position=self.pending))
        self.pending += header.size
        if self.pending >= self.buffer_size:
            self.flush()

    def add(self, batch: bytes) -> None:
        self.pieces.append(batch)
        self.headers.append(read_batch_header(batch, 0, self.pending))
        self.pending += len(batch)
        if self.pending >= self.buffer_size:
            self.flush()

    def flush(self) -> None:
        if self.headers:
            self.segment.append(self.pieces, self.headers)
            self.written += self.pending
            self.pieces = []
            self.headers = []
            self.pending = 0


# -- the cleaner ---------------------------------------------------------------------------


class Cleaner:
    """Cleans one log at a time with its own offset map (one per cleaner thread); the
    per-record work is ``passes`` (:func:`.record_passes.default` when not given)."""

    def __init__(
        self,
        offset_map: OffsetMap,
        *,
        check_done: Callable[[TopicPartition], None] = _never_done,
        io_buffer_size: int = DEFAULT_IO_BUFFER_SIZE,
        passes: RecordPasses | None = None,
    ):
        self.offset_map = offset_map
        self.check_done = check_done
        self.io_buffer_size = io_buffer_size
        self.passes = passes or record_passes.default()

    def clean(self, to_clean: LogToClean) -> tuple[int, CleanerStats]:
        """Clean ``to_clean.log``; returns the next first dirty offset and the stats."""
        stats = CleanerStats(start_time=time.perf_counter())
        log = to_clean.log
        tp = to_clean.topic_partition
        first_dirty = to_clean.first_dirty_offset
        offset_map = self.offset_map
        offset_map.clear()

        segments = log.segments
        dirty = segments_between(segments, first_dirty, to_clean.first_uncleanable_offset)
        if not dirty:
            stats.map_complete_time = stats.end_time = time.perf_counter()
            return first_dirty, stats
        end_offset = self._build_offset_map(
            tp, dirty, first_dirty, to_clean.first_uncleanable_offset, stats
        )
        stats.map_complete_time = time.perf_counter()
        stats.map_size = offset_map.size
        stats.buffer_utilization = offset_map.utilization

        # Tombstones age against the newest segment already clean (Kafka 2.8).
        clean = [s for s in segments if s.base_offset < first_dirty]
        cleanable_horizon_ms = clean[-1].last_modified_ms if clean else 0
        delete_horizon_ms = cleanable_horizon_ms - log.config.delete_retention_ms

        config = log.config
        groups = group_segments_by_size(
            segments_between(segments, 0, end_offset),
            config.segment_bytes,
            config.segment_index_bytes,
            end_offset,
        )
        for group in groups:
            self._clean_segments(tp, log, group, delete_horizon_ms, stats)
        stats.groups = len(groups)
        stats.end_time = time.perf_counter()
        logger.info("cleaned %s up to offset %d: %s", log, end_offset, stats.summary())
        return end_offset, stats

    # -- step 1: the offset map ------------------------------------------------------------

    def _build_offset_map(
        self,
        tp: TopicPartition,
        dirty: Sequence[LogSegment],
        start: int,
        upper: int,
        stats: CleanerStats,
    ) -> int:
        """Map whole dirty segments while they surely fit; returns the end of the mapped
        range (the base offset of the first segment not mapped, at most ``upper``)."""
        offset_map = self.offset_map
        end = start
        for index, segment in enumerate(dirty):
            self.check_done(tp)
            position = 0
            if segment.base_offset < start:
                position = segment.offset_index.lookup(start).position
            if index > 0:
                # An upper bound of the new keys: every keyed-or-not record still to map.
                candidates = sum(
                    header.records_count
                    for header in segment.log.batch_headers(position)
                    if not header.attributes & _UNTOUCHABLE
                )
                if offset_map.size + candidates > offset_map.capacity:
                    logger.info(
                        "offset map full after %d of %d dirty segments of %s",
                        index,
                        len(dirty),
                        tp,
                    )
                    break
            try:
                self._map_segment(tp, segment, position, start, upper, stats)
            except OffsetMapFullError:
                raise CleanerError(
                    f"cannot build the offset map of {tp[0]}-{tp[1]}: segment "
                    f"{segment.log_path.name} has more keys than the {offset_map.capacity} "
                    "an offset map holds; increase log.cleaner.dedupe.buffer.size or "
                    "decrease log.cleaner.threads"
                ) from None
            stats.segments_mapped += 1
            following = dirty[index + 1].base_offset if index + 1 < len(dirty) else upper
            end = min(following, upper)
        return end

    def _map_segment(
        self,
        tp: TopicPartition,
        segment: LogSegment,
        position: int,
        start: int,
        upper: int,
        stats: CleanerStats,
    ) -> None:
        offset_map = self.offset_map
        map_keys = self.passes.map_keys
        check_done = self.check_done
        for header, chunk in _iter_batches(segment, position, self.io_buffer_size):
            check_done(tp)
            base = header.base_offset
            if base >= upper:
                break
            last = base + header.last_offset_delta
            if last < start:
                continue
            stats.map_bytes_read += header.batch_length + LOG_OVERHEAD
            if not header.attributes & _UNTOUCHABLE:
                _verify_crc(chunk, header, segment)
                section = records_section(chunk, header)
                stats.map_messages_read += map_keys(
                    offset_map, section, header.records_count, base, start, upper
                )
            self.offset_map.update_latest_offset(min(last, upper - 1))

    # -- steps 3 and 4: one group into one cleaned segment ---------------------------------

    def _clean_segments(
        self,
        tp: TopicPartition,
        log: Log,
        group: Sequence[LogSegment],
        delete_horizon_ms: int,
        stats: CleanerStats,
    ) -> None:
        cleaned = log.new_cleaned_segment(group[0].base_offset)
        try:
            writer = _SegmentWriter(cleaned, self.io_buffer_size)
            for segment in group:
                retain_deletes = segment.last_modified_ms > delete_horizon_ms
                self._clean_into(tp, segment, writer, retain_deletes, log.config, stats)
            writer.flush()
            cleaned.on_become_inactive()
            cleaned.flush()
            modified_ms = group[-1].last_modified_ms
            for path in (cleaned.log_path, cleaned.index_path, cleaned.time_index_path):
                os.utime(path, ns=(modified_ms * 1_000_000, modified_ms * 1_000_000))
            self.check_done(tp)
        except Exception:
            cleaned.delete()
            raise
        stats.bytes_written += writer.written
        stats.segments_cleaned += len(group)
        # From here a crash is resolved by the log loader (seed 001's table).
        log.replace_segments([cleaned], group)

    def _clean_into(
        self,
        tp: TopicPartition,
        segment: LogSegment,
        writer: _SegmentWriter,
        retain_deletes: bool,
        log_config: LogConfig,
        stats: CleanerStats,
    ) -> None:
        offset_map = self.offset_map
        retain = self.passes.retain
        check_done = self.check_done
        levels = log_config.compression_level
        for header, chunk in _iter_batches(segment, 0, self.io_buffer_size):
            check_done(tp)
            stats.bytes_read += header.batch_length + LOG_OVERHEAD
            count = header.records_count
            if header.attributes & _UNTOUCHABLE:
                writer.copy(chunk, header)
                stats.messages_read += count
                stats.messages_written += count
                continue
            _verify_crc(chunk, header, segment)
            section = records_section(chunk, header)
            kept = retain(offset_map, section, count, header.base_offset, retain_deletes)
            stats.messages_read += count
            stats.messages_written += kept.count
            stats.invalid_messages += kept.invalid
            stats.tombstones_removed += kept.tombstones_removed
            if kept.section is None:
                writer.copy(chunk, header)
            elif kept.count:
                batch = rebuild_batch(
                    header, kept.section, kept.count, kept.max_timestamp_delta, levels
                )
                writer.add(batch)


def _verify_crc(chunk: bytes, header: BatchHeader, segment: LogSegment) -> None:
    if batch_crc(chunk, header) != header.crc:
        raise InvalidCrcError(
            f"batch at offset {header.base_offset} of {segment.log_path} fails its CRC check"
        )


# -- one-shot entry point (tools, benchmarks, tests) ---------------------------------------


def clean_log(
    log: Log,
    offset_map: OffsetMap | None = None,
    *,
    first_dirty_offset: int | None = None,
    now_ms: int | None = None,
    memory: int = 128 * 1024 * 1024,
    load_factor: float = 0.9,
    io_buffer_size: int = DEFAULT_IO_BUFFER_SIZE,
    passes: RecordPasses | None = None,
) -> tuple[int, CleanerStats]:
    """Clean ``log`` once, from ``first_dirty_offset`` (default: the log start offset),
    outside any cleaner thread or checkpoint. Returns the next first dirty offset and the
    stats. ``now_ms`` (default: the wall clock) drives ``min.compaction.lag.ms``."""
    if now_ms is None:
        now_ms = int(time.time() * 1000)
    if offset_map is None:
        offset_map = OffsetMap(memory, load_factor)
    offsets = cleanable_offsets(log, first_dirty_offset, now_ms)
    to_clean = LogToClean(
        (log.topic, log.partition),
        log,
        offsets.first_dirty_offset,
        offsets.first_uncleanable_offset,
        max_compaction_delay_ms(log, offsets.first_dirty_offset, now_ms) > 0,
    )
    return Cleaner(offset_map, io_buffer_size=io_buffer_size, passes=passes).clean(to_clean)
