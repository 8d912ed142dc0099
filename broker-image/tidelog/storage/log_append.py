"""Appends to a partition's log: a leader's (offsets assigned here) and a follower's
(offsets as the leader assigned them), rolling the active segment when it is full or
old, and flushing when ``flush.messages`` says so.

A part of :class:`tidelog.storage.log.Log`, which mixes :class:`LogAppends` in; the state
these methods use (the segment list, the log end, the locks) is the Log's, described in
``log.py``. Offsets are assigned without copying a batch: see ``append_as_leader``.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
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
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import OffsetOutOfRangeError
from tidelog.storage.leader_epoch import LeaderEpochCache
from tidelog.storage.log_append_time import stamp_log_append_time
from tidelog.storage.producer_state import BatchMetadata, ProducerStateManager
from tidelog.storage.segment import (
    INDEX_SUFFIX,
    LOG_SUFFIX,
    TIME_INDEX_SUFFIX,
    LogSegment,
    segment_file_name,
)

__all__ = ["AppendInfo", "LogAppends"]

logger = logging.getLogger(__name__)


class AppendInfo(NamedTuple):
    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    record_count: int
    size: int
    log_append_time: int  # -1 unless the topic uses LogAppendTime
    duplicate: bool = False  # a producer's retry of a batch already in the log


class LogAppends:
    """The append half of :class:`~tidelog.storage.log.Log`."""

    # The Log's state that appends read and change (see log.py).
    directory: Path
    config: LogConfig
    leader_epochs: LeaderEpochCache
    producer_state: ProducerStateManager
    recovery_point: int
    _lock: threading.RLock

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
