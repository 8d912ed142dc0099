"""Memory-mapped sparse index mechanics shared by the offset and time indexes.

File format: fixed-size big-endian entries, no header and no checksum. A writable
index is preallocated to ``max_index_size`` (rounded down to whole entries) so appends
never extend the file; it is trimmed to its entries when its segment rolls or
closes. An index that is missing or fails ``sanity_check`` is rebuilt from the log,
never trusted.

Lookups use the warm-section binary search (seed 002): readers mostly ask for recent
offsets, so the last ``WARM_SECTION_BYTES`` of entries are searched first; their pages
stay in the page cache, and a search that stays inside them touches no cold page.

Thread safety: appends, truncation and resizing happen under the owning log's lock;
lookups may run concurrently and only ever see whole entries, because the entry count
is published after the entry is written.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import struct
from pathlib import Path
from typing import Generic, TypeVar

from tidelog.storage.errors import CorruptIndexError

__all__ = ["WARM_SECTION_BYTES", "AbstractIndex"]

WARM_SECTION_BYTES = 8192

Entry = TypeVar("Entry")


class AbstractIndex(Generic[Entry]):
    """Subclasses set ``ENTRY`` (a ``struct.Struct``) and define parsing and key order."""

    ENTRY: struct.Struct

    def __init__(self, path: Path, base_offset: int, max_index_size: int, writable: bool = True):
        self.path = Path(path)
        self.base_offset = base_offset
        self.writable = writable
        self._entry_size = self.ENTRY.size
        self._max_index_size = max_index_size
        self._mmap: mmap.mmap | None = None
        self._length = 0
        self._entries = 0
        self._open()

    # -- file and map management ----------------------------------------------------

    def _open(self) -> None:
        newly_created = not self.path.exists()
        flags = os.O_RDWR | os.O_CREAT if self.writable else os.O_RDONLY
        self._fd = os.open(self.path, flags, 0o644)
        if newly_created:
            os.ftruncate(self._fd, self._round_down(self._max_index_size))
        self._length = os.fstat(self._fd).st_size
        self._map()
        # A pre-existing file is assumed full of valid entries up to its length; a file
        # left preallocated by a crash fails sanity_check and recovery rebuilds it.
        self._entries = 0 if newly_created else self._length // self._entry_size
        self._after_entries_changed(self._read_last_entry())

    def _read_last_entry(self) -> tuple | None:
        """The last entry, read with pread: after a crash the file is still preallocated
        and that entry lies in a hole, which through the map costs a fault with
        readahead over the holes around it (a millisecond per index)."""
        if not self._entries:
            return None
        position = (self._entries - 1) * self._entry_size
        return self.ENTRY.unpack(os.pread(self._fd, self._entry_size, position))

    def _map(self) -> None:
        if self._length == 0:
            self._mmap = None
            return
        self._mmap = mmap.mmap(self._fd, self._length, access=mmap.ACCESS_READ)

    def _round_down(self, size: int) -> int:
        return size - size % self._entry_size

    def resize(self, new_size: int) -> bool:
        """Change the file's length (whole entries, never below the entries held)."""
        rounded = max(self._round_down(new_size), self._entries * self._entry_size)
        if rounded == self._length:
            return False
        # The old map is dropped, not closed: a concurrent lookup may still hold it, and
        # it is unmapped when the last reference goes.
        os.ftruncate(self._fd, rounded)
        self._length = rounded
        self._map()
        return True

    def trim_to_valid_size(self) -> None:
        """Drop the preallocated tail: done when the segment rolls or closes."""
        self.resize(self._entries * self._entry_size)

    def flush(self) -> None:
        if self.writable:
            os.fsync(self._fd)

    def _close_map(self) -> None:
        if self._mmap is not None:
            self._mmap.close()
            self._mmap = None

    def close(self) -> None:
        if self._fd < 0:
            return
        if self.writable:
            self.trim_to_valid_size()
        self._close_map()
        os.close(self._fd)
        self._fd = -1

    def close_quietly(self) -> None:
        """Release the map and descriptor without touching the file (after a failure)."""
        self._mmap = None
        if self._fd >= 0:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = -1

    def delete(self) -> None:
        self._close_map()
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
        self.path.unlink(missing_ok=True)

    def rename(self, new_path: Path) -> None:
        os.replace(self.path, new_path)
        self.path = Path(new_path)

    def reset(self) -> None:
        """Forget every entry and reopen at full preallocated size (used by rebuilds)."""
        self.truncate_to_entries(0)
        self.resize(self._max_index_size)

    # -- entries ----------------------------------------------------------------------

    @property
    def entries(self) -> int:
        return self._entries

    @property
    def max_entries(self) -> int:
        return self._length // self._entry_size

    @property
    def is_full(self) -> bool:
        return self._entries >= self.max_entries

    @property
    def size_in_bytes(self) -> int:
        return self._entries * self._entry_size

    def entry(self, slot: int) -> Entry:
        if not 0 <= slot < self._entries:
            raise IndexError(f"slot {slot} out of range for {self._entries} entries in {self.path}")
        return self._parse(self._raw(slot))

    def _raw(self, slot: int) -> tuple:
        return self.ENTRY.unpack_from(self._mmap, slot * self._entry_size)

    def _append_raw(self, *fields: int) -> None:
        if self._entries >= self.max_entries:
            raise CorruptIndexError(f"attempt to append to a full index {self.path}")
        # pwrite, not a store into the map: on a full disk the page behind a sparse
        # preallocated file cannot be allocated, which is ENOSPC here but SIGBUS via mmap.
        entry = self.ENTRY.pack(*fields)
        if os.pwrite(self._fd, entry, self._entries * self._entry_size) != len(entry):
            raise OSError(f"short write to {self.path}")
        self._entries += 1
        self._after_entries_changed(fields)

    def truncate_to_entries(self, entries: int) -> None:
        self._entries = max(0, min(entries, self._entries))
        self._after_entries_changed()

    def relative(self, offset: int) -> int:
        relative = offset - self.base_offset
        if not 0 <= relative <= 0x7FFFFFFF:
            raise CorruptIndexError(
                f"offset {offset} does not fit an index based at {self.base_offset}"
            )
        return relative

    # -- search -------------------------------------------------------------------------

    def largest_lower_bound_slot(self, target: int) -> int:
        """Slot of the greatest entry whose key is <= target, or -1 if there is none."""
        entries = self._entries
        if entries == 0:
            return -1
        first_hot = max(0, entries - 1 - WARM_SECTION_BYTES // self._entry_size)
        if self._key(first_hot) < target:
            return self._binary_search(target, first_hot, entries - 1)
        if self._key(0) > target:
            return -1
        return self._binary_search(target, 0, first_hot)

    def smallest_upper_bound_slot(self, target: int) -> int:
        """Slot of the least entry whose key is >= target, or -1 if there is none."""
        slot = self.largest_lower_bound_slot(target)
        if slot != -1 and self._key(slot) == target:
            return slot
        slot += 1
        return slot if slot < self._entries else -1

    def _binary_search(self, target: int, low: int, high: int) -> int:
        # Invariant: key(low) <= target; find the last slot in [low, high] with key <= target.
        while low < high:
            middle = (low + high + 1) >> 1
            if self._key(middle) > target:
                high = middle - 1
            else:
                low = middle
        return low

    # -- subclass hooks -------------------------------------------------------------------

    def _key(self, slot: int) -> int:
        """The searchable key of a slot, as an absolute value."""
        raise NotImplementedError

    def _parse(self, raw: tuple) -> Entry:
        raise NotImplementedError

    def _after_entries_changed(self, last_raw: tuple | None = None) -> None:
        """Refresh cached facts about the last entry (called under the log's lock);
        ``last_raw`` is that entry's fields when they were just appended (reading them
        back through the map would fault its page in, one a rebuild can least afford)."""

    def sanity_check(self) -> None:
        if self._length % self._entry_size != 0:
            raise CorruptIndexError(
                f"index file {self.path} has length {self._length}, "
                f"not a multiple of {self._entry_size}"
            )
