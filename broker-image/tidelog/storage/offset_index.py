"""The ``.index`` file: a sparse map from offsets to positions in the segment's ``.log``.

Entry (8 bytes, big-endian): relative offset int32 (offset - segment base offset),
position int32 (byte position of the batch in the ``.log`` file). Offsets and positions
both increase strictly. An entry (o, p) says: the batch whose last offset is ``o``
starts at ``p``, so every offset >= o lies at position >= p. The segment appends one
entry per ``index.interval.bytes`` of log written, at batch boundaries.
"""

from __future__ import annotations

import struct
from typing import NamedTuple

from tidelog.storage.errors import CorruptIndexError, InvalidOffsetError
from tidelog.storage.index import AbstractIndex

__all__ = ["OffsetIndex", "OffsetPosition"]


class OffsetPosition(NamedTuple):
    offset: int
    position: int


class OffsetIndex(AbstractIndex[OffsetPosition]):
    ENTRY = struct.Struct(">ii")

    def _after_entries_changed(self, last_raw: tuple | None = None) -> None:
        if self._entries:
            relative, _ = last_raw or self._raw(self._entries - 1)
            self.last_offset = self.base_offset + relative
        else:
            self.last_offset = self.base_offset

    def _key(self, slot: int) -> int:
        return self.base_offset + self.ENTRY.unpack_from(self._mmap, slot * 8)[0]

    def _parse(self, raw: tuple) -> OffsetPosition:
        return OffsetPosition(self.base_offset + raw[0], raw[1])

    def lookup(self, target_offset: int) -> OffsetPosition:
        """The greatest entry with offset <= target, or (base offset, 0) if none."""
        slot = self.largest_lower_bound_slot(target_offset)
        if slot == -1:
            return OffsetPosition(self.base_offset, 0)
        return self.entry(slot)

    def fetch_upper_bound(self, target_offset: int) -> OffsetPosition | None:
        """The least entry with offset >= target, or None."""
        slot = self.smallest_upper_bound_slot(target_offset)
        return None if slot == -1 else self.entry(slot)

    def floor_position(self, position: int) -> OffsetPosition | None:
        """The entry with the greatest position <= ``position`` (positions increase too)."""
        low, high, found = 0, self._entries - 1, None
        while low <= high:
            middle = (low + high) >> 1
            entry = self.entry(middle)
            if entry.position <= position:
                found, low = entry, middle + 1
            else:
                high = middle - 1
        return found

    def append(self, offset: int, position: int) -> None:
        if self._entries and offset <= self.last_offset:
            raise InvalidOffsetError(
                f"attempt to append offset {offset} to {self.path}, "
                f"not above its last offset {self.last_offset}"
            )
        self._append_raw(self.relative(offset), position)

    def truncate_to(self, offset: int) -> None:
        """Remove every entry with offset >= ``offset``."""
        slot = self.largest_lower_bound_slot(offset)
        if slot == -1:
            keep = 0
        elif self._key(slot) == offset:
            keep = slot
        else:
            keep = slot + 1
        self.truncate_to_entries(keep)

    def sanity_check(self, log_size: int | None = None) -> None:
        super().sanity_check()
        if self._entries == 0:
            return
        first = self.entry(0)
        last = self.entry(self._entries - 1)
        if last.offset < self.base_offset or first.offset < self.base_offset:
            raise CorruptIndexError(
                f"corrupt index {self.path}: last offset {last.offset} is below "
                f"the base offset {self.base_offset}"
            )
        if self._entries > 1 and (last.offset <= first.offset or last.position <= first.position):
            raise CorruptIndexError(f"corrupt index {self.path}: entries are not increasing")
        if log_size is not None and last.position >= max(log_size, 1):
            raise CorruptIndexError(
                f"corrupt index {self.path}: position {last.position} is past the log's "
                f"end ({log_size} bytes)"
            )
