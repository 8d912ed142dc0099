"""Compression codecs of record batch v2 (attributes bits 0-2).

Writing produces what Kafka's own clients read; reading accepts what every common client
writes:

* gzip: standard gzip members (stdlib ``zlib``).
* snappy: written as one raw snappy block (what librdkafka writes); read as either a raw
  block or the xerial framing of snappy-java's ``SnappyOutputStream`` (the Java client):
  ``b"\\x82SNAPPY\\x00"`` + int32 version + int32 compatible version, then chunks of
  ``[int32 length][raw snappy block]``.
* lz4: the standard LZ4 frame format, written with independent 64 KiB blocks and no
  content size, which is what Kafka's ``KafkaLZ4BlockInputStream`` accepts (it rejects
  linked blocks).
* zstd: standard zstd frames; read with a streaming decompressor so frames without a
  content size (zstd-jni's streaming output in the Java client) work.

Every decompression failure raises :class:`DecompressionError`; an unknown codec id
raises :class:`UnsupportedCompressionError`.
"""

from __future__ import annotations

import functools
import struct
import zlib
from enum import IntEnum

import cramjam
import lz4.frame
import zstandard

from .errors import DecompressionError, UnsupportedCompressionError

__all__ = [
    "XERIAL_SNAPPY_MAGIC",
    "CompressionType",
    "compress",
    "decompress",
]

XERIAL_SNAPPY_MAGIC = b"\x82SNAPPY\x00"
# Magic + version int32 + compatible-version int32.
_XERIAL_HEADER_SIZE = len(XERIAL_SNAPPY_MAGIC) + 8
_INT32 = struct.Struct(">i")

# Kafka's default zstd level (CompressionType.ZSTD default level 3).
_ZSTD_LEVEL = 3


class CompressionType(IntEnum):
    """The codec ids of the batch attributes; ``str()`` gives Kafka's lowercase name."""

    NONE = 0
    GZIP = 1
    SNAPPY = 2
    LZ4 = 3
    ZSTD = 4

    @property
    def name(self) -> str:  # type: ignore[override]
        """Kafka's name for the codec: ``none``, ``gzip``, ``snappy``, ``lz4``, ``zstd``."""
        return self._name_.lower()

    def __str__(self) -> str:
        return self.name

    @classmethod
    def from_id(cls, codec_id: int) -> CompressionType:
        """The codec for an attributes id; 5-7 (and anything else) are unsupported."""
        try:
            return cls(codec_id)
        except ValueError:
            raise UnsupportedCompressionError(f"unknown compression codec id {codec_id}") from None

    @classmethod
    def from_name(cls, name: str) -> CompressionType:
        """The codec for a Kafka name such as ``"zstd"`` (case-insensitive)."""
        try:
            return cls[name.upper()]
        except KeyError:
            raise UnsupportedCompressionError(f"unknown compression codec {name!r}") from None


# --- gzip ------------------------------------------------------------------------------


def _gzip_compress(data, level: int | None) -> bytes:
    # A fixed header (mtime 0, no name) keeps the output deterministic.
    level = zlib.Z_DEFAULT_COMPRESSION if level is None else level
    compressor = zlib.compressobj(level, zlib.DEFLATED, 31)
    return compressor.compress(data) + compressor.flush()


def _decompress_members(new_decompressor, data, truncated: str) -> bytes:
    """Decompress back-to-back members (gzip) or frames (zstd): a decompressor object
    stops at the end of one, so go on with what is left until nothing is."""
    out = []
    remaining = data
    while True:
        decompressor = new_decompressor()
        out.append(decompressor.decompress(remaining))
        if not decompressor.eof:
            raise DecompressionError(truncated)
        remaining = decompressor.unused_data
        if not remaining:
            return b"".join(out)


def _gzip_decompress(data) -> bytes:
    return _decompress_members(lambda: zlib.decompressobj(31), bytes(data), "truncated gzip data")


# --- snappy ----------------------------------------------------------------------------


def _snappy_compress(data, level: int | None) -> bytes:
    return bytes(cramjam.snappy.compress_raw(data))


def _snappy_decompress(data) -> bytes:
    view = memoryview(data)
    if view[: len(XERIAL_SNAPPY_MAGIC)] != XERIAL_SNAPPY_MAGIC:
        return bytes(cramjam.snappy.decompress_raw(view))
    if len(view) < _XERIAL_HEADER_SIZE:
        raise DecompressionError("truncated xerial snappy header")
    chunks = []
    position = _XERIAL_HEADER_SIZE
    end = len(view)
    while position < end:
        if position + 4 > end:
            raise DecompressionError("truncated xerial snappy chunk length")
        (length,) = _INT32.unpack_from(view, position)
        position += 4
        if length < 0 or position + length > end:
            raise DecompressionError(f"xerial snappy chunk of {length} bytes overruns the data")
        chunks.append(bytes(cramjam.snappy.decompress_raw(view[position : position + length])))
        position += length
    return b"".join(chunks)


# --- lz4 -------------------------------------------------------------------------------


def _lz4_compress(data, level: int | None) -> bytes:
    # Kafka's levels run to 17; the library's high-compression levels stop at its maximum.
    level = 0 if level is None else min(level, lz4.frame.COMPRESSIONLEVEL_MAX)
    return lz4.frame.compress(
        data,
        compression_level=level,
        block_size=lz4.frame.BLOCKSIZE_MAX64KB,
        block_linked=False,
        content_checksum=False,
        store_size=False,
    )


def _lz4_decompress(data) -> bytes:
    decompressor = lz4.frame.LZ4FrameDecompressor()
    out = decompressor.decompress(data)
    if not decompressor.eof:
        raise DecompressionError("truncated lz4 frame")
    if decompressor.unused_data:
        raise DecompressionError("trailing bytes after the lz4 frame")
    return out


# --- zstd ------------------------------------------------------------------------------

_ZSTD_COMPRESSOR = zstandard.ZstdCompressor(level=_ZSTD_LEVEL)
_ZSTD_DECOMPRESSOR = zstandard.ZstdDecompressor()


@functools.lru_cache(maxsize=8)
def _zstd_compressor(level: int) -> zstandard.ZstdCompressor:
    return zstandard.ZstdCompressor(level=level)


def _zstd_compress(data, level: int | None) -> bytes:
    if level is None or level == _ZSTD_LEVEL:
        return _ZSTD_COMPRESSOR.compress(data)
    return _zstd_compressor(level).compress(data)


def _zstd_decompress(data) -> bytes:
    # A streaming decompressor needs no content size in the frame header.
    return _decompress_members(_ZSTD_DECOMPRESSOR.decompressobj, data, "truncated zstd frame")


# --- dispatch --------------------------------------------------------------------------

_COMPRESSORS = {
    CompressionType.GZIP: _gzip_compress,
    CompressionType.SNAPPY: _snappy_compress,
    CompressionType.LZ4: _lz4_compress,
    CompressionType.ZSTD: _zstd_compress,
}
_DECOMPRESSORS = {
    CompressionType.GZIP: _gzip_decompress,
    CompressionType.SNAPPY: _snappy_decompress,
    CompressionType.LZ4: _lz4_decompress,
    CompressionType.ZSTD: _zstd_decompress,
}


def compress(codec: int, data, level: int | None = None) -> bytes:
    """Compress ``data`` with ``codec`` (a :class:`CompressionType` or its id), at
    ``level`` (Kafka's ``compression.<codec>.level``; None: the library's default, what
    a producer of these libraries writes)."""
    codec = CompressionType.from_id(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    return _COMPRESSORS[codec](data, level)


def decompress(codec: int, data) -> bytes:
    """Decompress ``data`` written with ``codec``; damage raises DecompressionError."""
    codec = CompressionType.from_id(codec)
    if codec is CompressionType.NONE:
        return bytes(data)
    try:
        return _DECOMPRESSORS[codec](data)
    except DecompressionError:
        raise
    except Exception as exc:  # each library raises its own error types
        raise DecompressionError(f"cannot decompress {codec.name} data: {exc}") from exc
