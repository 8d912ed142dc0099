"""Storage errors, each carrying the Kafka error code a broker answers with."""

from __future__ import annotations

__all__ = [
    "CorruptIndexError",
    "InvalidOffsetError",
    "InvalidProducerEpochError",
    "KafkaStorageError",
    "LogDirNotFoundError",
    "OffsetOutOfRangeError",
    "OutOfOrderSequenceError",
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


class OutOfOrderSequenceError(StorageError):
    """An idempotent producer's batch does not follow its last sequence."""

    error_code = 45


class InvalidProducerEpochError(StorageError):
    """A batch from an older epoch of a producer id than the one already seen."""

    error_code = 47
