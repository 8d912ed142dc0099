"""Storage errors, each carrying the Kafka error code a broker answers with."""

from __future__ import annotations

__all__ = [
    "CorruptIndexError",
    "InvalidOffsetError",
    "KafkaStorageError",
    "LogDirNotFoundError",
    "OffsetOutOfRangeError",
    "StorageError",
]


class StorageError(Exception):
    error_code = -1  # UNKNOWN_SERVER_ERROR


class OffsetOutOfRangeError(StorageError):
    error_code = 1


class KafkaStorageError(StorageError):
    """The log directory holding a partition failed (disk error, full, unreadable)."""

    error_code = 56


class LogDirNotFoundError(StorageError):
    error_code = 57


class CorruptIndexError(StorageError):
    """An index file fails its sanity check; it is rebuilt from the log."""


class InvalidOffsetError(StorageError):
    """An index append or truncation that would break the offset ordering."""
