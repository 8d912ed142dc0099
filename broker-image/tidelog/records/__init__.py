"""Record batch v2 (magic 2): the wire and on-disk format of Kafka records.

Modules, one job each:

* :mod:`.batch` - the 61-byte batch header: layout, parsing, in-place offset rewrite.
* :mod:`.crc` - CRC32C of a batch.
* :mod:`.compression` - the gzip / snappy / lz4 / zstd codecs.
* :mod:`.varint` - Kafka's zig-zag varints.
* :mod:`.record` - one record and the records section.
* :mod:`.control` - control record keys and transaction markers.
* :mod:`.builder` - writing batches.
* :mod:`.reader` - decoding batches into records with absolute offsets.
* :mod:`.validation` - the broker's checks on a producer's batches.
* :mod:`.errors` - the errors, each with its Kafka error code.
"""

from .batch import (
    BATCH_HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    NO_TIMESTAMP,
    BatchHeader,
    iter_batch_headers,
    read_batch_header,
    rewrite_base_offset_and_epoch,
)
from .builder import (
    CREATE_TIME,
    LOG_APPEND_TIME,
    Entry,
    build_batch,
    build_control_batch,
    encode_batch,
)
from .compression import CompressionType, compress, decompress
from .control import (
    ControlRecordType,
    EndTransactionMarker,
    decode_control_key,
    decode_end_txn_marker,
    encode_control_key,
    encode_end_txn_marker,
)
from .crc import batch_crc, crc32c, is_crc_valid
from .errors import (
    ControlBatchFromProducerError,
    CorruptRecordError,
    DecompressionError,
    EmptyBatchError,
    EmptyRecordsError,
    IncompleteBatchError,
    InvalidBaseOffsetError,
    InvalidBatchLengthError,
    InvalidCrcError,
    InvalidMagicError,
    InvalidRecordCountError,
    InvalidRecordError,
    InvalidSequenceError,
    NullKeyOnCompactedTopicError,
    RecordsError,
    RecordTooLargeError,
    UnsupportedCompressionError,
)
from .reader import DecodedBatch, LogRecord, decode_batch, iter_decoded_batches
from .record import Header, Record, decode_records, encode_record
from .validation import (
    DEFAULT_MAX_MESSAGE_BYTES,
    ValidatedRecords,
    validate_producer_records,
    validate_replicated_records,
)
from .varint import decode_varint, decode_varlong, encode_varint, encode_varlong

__all__ = [
    "BATCH_HEADER_SIZE",
    "CREATE_TIME",
    "DEFAULT_MAX_MESSAGE_BYTES",
    "LOG_APPEND_TIME",
    "LOG_OVERHEAD",
    "MAGIC_V2",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "BatchHeader",
    "CompressionType",
    "ControlBatchFromProducerError",
    "ControlRecordType",
    "CorruptRecordError",
    "DecodedBatch",
    "DecompressionError",
    "EmptyBatchError",
    "EmptyRecordsError",
    "EndTransactionMarker",
    "Entry",
    "Header",
    "IncompleteBatchError",
    "InvalidBaseOffsetError",
    "InvalidBatchLengthError",
    "InvalidCrcError",
    "InvalidMagicError",
    "InvalidRecordCountError",
    "InvalidRecordError",
    "InvalidSequenceError",
    "LogRecord",
    "NullKeyOnCompactedTopicError",
    "Record",
    "RecordTooLargeError",
    "RecordsError",
    "UnsupportedCompressionError",
    "ValidatedRecords",
    "batch_crc",
    "build_batch",
    "build_control_batch",
    "compress",
    "crc32c",
    "decode_batch",
    "decode_control_key",
    "decode_end_txn_marker",
    "decode_records",
    "decode_varint",
    "decode_varlong",
    "decompress",
    "encode_batch",
    "encode_control_key",
    "encode_end_txn_marker",
    "encode_record",
    "encode_varint",
    "encode_varlong",
    "is_crc_valid",
    "iter_batch_headers",
    "iter_decoded_batches",
    "read_batch_header",
    "rewrite_base_offset_and_epoch",
    "validate_producer_records",
    "validate_replicated_records",
]
