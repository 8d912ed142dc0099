"""Errors raised while building, reading and validating record batches.

Every error carries the numeric Kafka error code the broker answers with when that
failure happens on a Produce, so the request layer can map an exception to a response
without a lookup table of its own. Two families mirror Kafka's:

* :class:`CorruptRecordError` (``CORRUPT_MESSAGE`` = 2): the bytes themselves are damaged
  or do not parse (bad CRC, truncated batch, overrunning lengths, bad compressed data).
* :class:`InvalidRecordError` (``INVALID_RECORD`` = 87): the bytes parse but break a rule
  a producer must follow (wrong magic, inconsistent counts, control batch, null key on a
  compacted topic...).

Each failure has its own subclass so that callers and tests can tell them apart.
"""

from __future__ import annotations

__all__ = [
    "CORRUPT_MESSAGE",
    "INVALID_RECORD",
    "MESSAGE_TOO_LARGE",
    "UNKNOWN_SERVER_ERROR",
    "UNSUPPORTED_COMPRESSION_TYPE",
    "ControlBatchFromProducerError",
    "CorruptRecordError",
    "DecompressionError",
    "EmptyBatchError",
    "EmptyRecordsError",
    "IncompleteBatchError",
    "InvalidBaseOffsetError",
    "InvalidBatchLengthError",
    "InvalidCrcError",
    "InvalidMagicError",
    "InvalidRecordCountError",
    "InvalidRecordError",
    "InvalidSequenceError",
    "NullKeyOnCompactedTopicError",
    "RecordTooLargeError",
    "RecordsError",
    "UnsupportedCompressionError",
]

# Kafka's numeric error codes (org.apache.kafka.common.protocol.Errors).
UNKNOWN_SERVER_ERROR = -1
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
UNSUPPORTED_COMPRESSION_TYPE = 76
INVALID_RECORD = 87


class RecordsError(Exception):
    """Base of every records error.

    ``error_code`` is the Kafka error code for the failure; ``position`` is the byte
    position of the offending batch in the buffer that was being read, when known.
    """

    error_code: int = UNKNOWN_SERVER_ERROR

    def __init__(self, message: str, *, position: int | None = None) -> None:
        if position is not None:
            message = f"{message} (batch at position {position})"
        super().__init__(message)
        self.message = message
        self.position = position


# --- CORRUPT_MESSAGE ------------------------------------------------------------------


class CorruptRecordError(RecordsError):
    """The bytes are damaged or do not parse as record batch v2."""

    error_code = CORRUPT_MESSAGE


class InvalidCrcError(CorruptRecordError):
    """The stored CRC32C does not match the batch contents."""


class InvalidBatchLengthError(CorruptRecordError):
    """batchLength is smaller than a batch header, so the framing cannot be trusted."""


class IncompleteBatchError(CorruptRecordError):
    """The buffer ends inside a batch (a partial header or a batch cut short)."""


class DecompressionError(CorruptRecordError):
    """The records section of a compressed batch cannot be decompressed."""


# --- INVALID_RECORD -------------------------------------------------------------------


class InvalidRecordError(RecordsError):
    """The batch parses but breaks a rule producers must follow."""

    error_code = INVALID_RECORD


class InvalidMagicError(InvalidRecordError):
    """The batch is not magic 2 (record batch v2)."""


class EmptyRecordsError(InvalidRecordError):
    """A produce carried no record batch at all."""


class EmptyBatchError(InvalidRecordError):
    """A producer's batch declares zero records."""


class InvalidRecordCountError(InvalidRecordError):
    """A producer's batch declares a negative recordsCount, or one that is not
    lastOffsetDelta + 1. (Records present that disagree with the declared count are
    damage: the reader raises CorruptRecordError for that.)"""


class InvalidBaseOffsetError(InvalidRecordError):
    """A producer's v2 batch must carry baseOffset 0; the broker assigns offsets."""


class InvalidSequenceError(InvalidRecordError):
    """A batch with a producer id has a negative base sequence."""


class ControlBatchFromProducerError(InvalidRecordError):
    """Clients may not write control (transaction marker) batches."""


class NullKeyOnCompactedTopicError(InvalidRecordError):
    """A compacted topic cannot accept a record without a key."""


# --- other codes ----------------------------------------------------------------------


class RecordTooLargeError(RecordsError):
    """A batch is larger than ``max.message.bytes``."""

    error_code = MESSAGE_TOO_LARGE


class UnsupportedCompressionError(RecordsError):
    """The compression codec id (attributes bits 0-2) is not one Kafka defines."""

    error_code = UNSUPPORTED_COMPRESSION_TYPE
