"""CRC32C (Castagnoli) of record batches, computed by the C-backed ``crc32c`` package.

The v2 batch CRC covers the bytes from ``attributes`` (offset 21 in the batch) to the end
of the batch, so the broker can rewrite baseOffset and partitionLeaderEpoch without
recomputing it.
"""

from __future__ import annotations

from crc32c import crc32c as _crc32c

from .batch import ATTRIBUTES_OFFSET, BatchHeader

__all__ = ["batch_crc", "crc32c", "is_crc_valid"]


def crc32c(data) -> int:
    """CRC32C of ``data`` (any bytes-like object) as an unsigned 32-bit int."""
    return _crc32c(data)


def batch_crc(buffer, header: BatchHeader, offset: int | None = None) -> int:
    """CRC32C of the batch described by ``header``: attributes up to the end of the batch.

    The batch starts at ``offset`` in ``buffer`` (default ``header.position``, for when the
    buffer is a window onto a file rather than the file itself); no copy is made.
    """
    start = header.position if offset is None else offset
    with memoryview(buffer)[start + ATTRIBUTES_OFFSET : start + header.size] as view:
        return _crc32c(view)


def is_crc_valid(buffer, header: BatchHeader, offset: int | None = None) -> bool:
    """True when the CRC stored in the header matches the batch bytes (see batch_crc)."""
    return batch_crc(buffer, header, offset) == header.crc
