"""The ``.timeindex`` file: a sparse map from timestamps to offsets.

Entry (12 bytes, big-endian): timestamp int64, relative offset int32. Timestamps
increase strictly: an entry is appended only when a batch raises the segment's maximum
timestamp, so out-of-order producer timestamps never make the index decrease. An entry
(t, o) says: every record with a timestamp > t lies at an offset > o, and the batch
holding ``o`` has max timestamp ``t``. Lookup by timestamp then scans the log from the
offset index position of ``o``.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from tidelog.storage.errors import CorruptIndexError, InvalidOffsetError
from tidelog.storage.index import AbstractIndex

__all__ = ["NO_TIMESTAMP", "TimeIndex", "TimestampOffset"]

NO_TIMESTAMP = -1


class TimestampOffset(NamedTuple):
    timestamp: int
    offset: int


class TimeIndex(AbstractIndex[TimestampOffset]):
    ENTRY = struct.Struct(">qi")

    def _after_entries_changed(self, last_raw: tuple | None = None) -> None:
        if self._entries:
            self.last_entry = self._parse(last_raw or self._raw(self._entries - 1))
        else:
            self.last_entry = TimestampOffset(NO_TIMESTAMP, self.base_offset)

    def _key(self, slot: int) -> int:
        return self.ENTRY.unpack_from(self._mmap, slot * 12)[0]

    def _parse(self, raw: tuple) -> TimestampOffset:
        return TimestampOffset(raw[0], self.base_offset + raw[1])

    def lookup(self, target_timestamp: int) -> TimestampOffset:
        """The greatest entry with timestamp <= target, or (-1, base offset) if none."""
        slot = self.largest_lower_bound_slot(target_timestamp)
        if slot == -1:
            return TimestampOffset(NO_TIMESTAMP, self.base_offset)
        return self.entry(slot)

    def maybe_append(self, timestamp: int, offset: int, skip_full_check: bool = False) -> None:
        """Append when ``timestamp`` is above the last entry's; otherwise do nothing.

        ``skip_full_check`` lets a rolling segment record its final maximum in the slot
        Kafka keeps for it, even when the index is otherwise full.
        """
        if not skip_full_check and self.is_full:
            raise CorruptIndexError(f"attempt to append to a full time index {self.path}")
        last = self.last_entry
        if self._entries and offset < last.offset:
            raise InvalidOffsetError(
                f"attempt to append offset {offset} to {self.path}, below its last "
                f"offset {last.offset}"
            )
        if self._entries and timestamp <= last.timestamp:
            return
        self._append_raw(timestamp, self.relative(offset))

    @property
    def is_full(self) -> bool:
        # One slot stays free for the entry written when the segment rolls.
        return self._entries >= self.max_entries - 1

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= ``offset`` (entries' offsets increase too)."""
        low, high = 0, self._entries
        while low < high:
            middle = (low + high) >> 1
            if self._parse(self._raw(middle)).offset >= offset:
                high = middle
            else:
                low = middle + 1
        self.truncate_to_entries(low)

    def sanity_check(self) -> None:
        super().sanity_check()
        if self._entries == 0:
            return
        first = self.entry(0)
        last = self.last_entry
        if last.offset < self.base_offset or last.timestamp < first.timestamp:
            raise CorruptIndexError(
                f"corrupt time index {self.path}: last entry {tuple(last)} does not follow "
                f"first entry {tuple(first)} with base offset {self.base_offset}"
            )
