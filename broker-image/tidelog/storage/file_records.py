"""The ``.log`` file of a segment: record batches back to back, exactly as on the wire.

Writes append whole batches at the end with ``pwrite``; reads are positional, so
readers never share a file offset with the writer. A ``FileSlice`` names a byte range
that the network layer can hand to ``sendfile`` without copying it into Python.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from tidelog.records.batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    read_batch_header,
)

__all__ = ["FileRecords", "FileSlice", "LogOffsetPosition"]

# Header scans read this much at a time, so small batches cost one read per page.
_READ_AHEAD = 4096
_SCAN_CHUNK = 1 << 20  # bytes a whole-batch scan reads at once
_MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
_IOV_MAX = os.sysconf("SC_IOV_MAX")


class LogOffsetPosition(NamedTuple):
    """A batch found by offset: its base offset, position and size in the file."""

    offset: int
    position: int
    size: int


class FileSlice:
    """``size`` bytes of ``records`` from ``position``: whole batches, ready to send.

    Its ``len()`` is its size in bytes, so a protocol encoder can treat it like the
    bytes it stands for and leave it in the response for the network layer to
    ``sendfile``."""

    __slots__ = ("position", "records", "size")

    def __init__(self, records: FileRecords, position: int, size: int):
        self.records = records
        self.position = position
        self.size = size

    def __len__(self) -> int:
        return self.size

    def fileno(self) -> int:
        return self.records.fileno()

    def to_bytes(self) -> bytes:
        return self.records.read(self.position, self.size)

    def __repr__(self) -> str:
        return f"FileSlice({self.records.path.name}, position={self.position}, size={self.size})"


class FileRecords:
    def __init__(self, path: Path, *, create: bool = True, read_only: bool = False):
        self.path = Path(path)
        flags = os.O_RDONLY if read_only else os.O_RDWR | (os.O_CREAT if create else 0)
        self._fd = os.open(self.path, flags, 0o644)
        self._size = os.fstat(self._fd).st_size

    @property
    def size(self) -> int:
        return self._size

    def fileno(self) -> int:
        return self._fd

    def append(self, buffers: Sequence) -> int:
        """Write the buffers, in order, at the end of the file with as few ``pwritev``
        calls as the kernel allows; returns the bytes written."""
        pending = [memoryview(buffer).cast("B") for buffer in buffers]
        position = self._size
        while pending:
            chunk = pending[:_IOV_MAX]
            written = os.pwritev(self._fd, chunk, position)
            position += written
            while written:  # drop what went out, keep a partly written buffer's rest
                if written >= len(pending[0]):
                    written -= len(pending.pop(0))
                else:
                    pending[0] = pending[0][written:]
                    written = 0
            while pending and not len(pending[0]):
                pending.pop(0)
        appended = position - self._size
        self._size = position
        return appended

    def read(self, position: int, size: int) -> bytes:
        return os.pread(self._fd, size, position)

    def slice(self, position: int, size: int) -> FileSlice:
        available = max(0, min(size, self._size - position))
        return FileSlice(self, position, available)

    def batch_headers(self, start: int = 0, end: int | None = None) -> Iterator[BatchHeader]:
        """Headers of the whole batches from ``start``; stops at the first bad frame."""
        limit = self._size if end is None else min(end, self._size)
        position = start
        window, window_start = b"", start
        while position + BATCH_HEADER_SIZE <= limit:
            offset = position - window_start
            if offset + BATCH_HEADER_SIZE > len(window):
                window = os.pread(self._fd, _READ_AHEAD, position)
                window_start, offset = position, 0
                if len(window) < BATCH_HEADER_SIZE:
                    return
            header = read_batch_header(window, offset, position)
            if header.batch_length < _MIN_BATCH_LENGTH or position + header.size > limit:
                return
            yield header
            position += header.size

    def batches(self, start: int = 0) -> Iterator[tuple[BatchHeader, memoryview]]:
        """Whole batches with their bytes, for scans that check or decode them (a log
        recovery): read ``_SCAN_CHUNK`` bytes at a time, a larger batch whole, and
        handed out as views into that read; stops at the first bad frame."""
        limit = self._size
        position = start
        chunk_size = _SCAN_CHUNK
        while position + BATCH_HEADER_SIZE <= limit:
            chunk = os.pread(self._fd, min(chunk_size, limit - position), position)
            view = memoryview(chunk)
            offset = 0
            while offset + BATCH_HEADER_SIZE <= len(chunk):
                header = read_batch_header(chunk, offset, position + offset)
                if (
                    header.batch_length < _MIN_BATCH_LENGTH
                    or position + offset + header.size > limit
                ):
                    return
                if offset + header.size > len(chunk):
                    break  # the batch continues past this read: the next one starts here
                yield header, view[offset : offset + header.size]
                offset += header.size
            if offset == 0:  # one batch larger than a read: read it whole
                if len(chunk) < BATCH_HEADER_SIZE:
                    return
                chunk_size = read_batch_header(chunk, 0, position).size
                continue
            position += offset
            chunk_size = _SCAN_CHUNK

    def search_for_offset_with_size(
        self, target_offset: int, starting_position: int
    ) -> LogOffsetPosition | None:
        """The first batch at or after ``starting_position`` holding offsets >= target."""
        for header in self.batch_headers(starting_position):
            if header.last_offset >= target_offset:
                return LogOffsetPosition(header.base_offset, header.position, header.size)
        return None

    def truncate_to(self, size: int) -> int:
        """Cut the file to ``size`` bytes; returns how many bytes went."""
        if size > self._size or size < 0:
            raise ValueError(f"cannot truncate {self.path} of {self._size} bytes to {size}")
        removed = self._size - size
        if removed:
            os.ftruncate(self._fd, size)
            self._size = size
        return removed

    def flush(self) -> None:
        os.fsync(self._fd)

    def close(self) -> None:
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1

    def rename(self, new_path: Path) -> None:
        os.replace(self.path, new_path)
        self.path = Path(new_path)

    def delete(self) -> None:
        self.close()
        self.path.unlink(missing_ok=True)
