"""Compression codecs: round trips, and the framings other clients write."""

import gzip
import io
import random
import struct

import cramjam
import pytest
import zstandard

from tidelog.records.compression import (
    XERIAL_SNAPPY_MAGIC,
    CompressionType,
    compress,
    decompress,
)
from tidelog.records.errors import (
    UNSUPPORTED_COMPRESSION_TYPE,
    DecompressionError,
    UnsupportedCompressionError,
)

CODECS = list(CompressionType)
COMPRESSED = [codec for codec in CODECS if codec is not CompressionType.NONE]

_rng = random.Random(1)
SAMPLES = [
    b"",
    b"x",
    b"hello world " * 50,
    bytes(_rng.randrange(256) for _ in range(5000)),
    b"compressible " * 20000,  # several 64 KiB lz4 blocks
]


def test_ids_and_kafka_names():
    assert [(codec.value, codec.name) for codec in CODECS] == [
        (0, "none"),
        (1, "gzip"),
        (2, "snappy"),
        (3, "lz4"),
        (4, "zstd"),
    ]
    assert str(CompressionType.ZSTD) == "zstd"
    assert f"{CompressionType.GZIP}" == "gzip"
    assert CompressionType.from_name("LZ4") is CompressionType.LZ4
    assert CompressionType.from_id(2) is CompressionType.SNAPPY


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("index", range(len(SAMPLES)))
def test_round_trip(codec, index):
    data = SAMPLES[index]
    compressed = compress(codec, data)
    assert decompress(codec, compressed) == data
    assert decompress(codec, memoryview(compressed)) == data


def test_none_is_identity():
    assert compress(CompressionType.NONE, b"abc") == b"abc"
    assert decompress(0, bytearray(b"abc")) == b"abc"


@pytest.mark.parametrize("codec_id", [5, 6, 7])
def test_unknown_codec_ids_are_unsupported(codec_id):
    with pytest.raises(UnsupportedCompressionError) as info:
        decompress(codec_id, b"data")
    assert info.value.error_code == UNSUPPORTED_COMPRESSION_TYPE == 76
    with pytest.raises(UnsupportedCompressionError):
        compress(codec_id, b"data")
    with pytest.raises(UnsupportedCompressionError):
        CompressionType.from_name("brotli")


@pytest.mark.parametrize("codec", COMPRESSED)
def test_garbage_raises_decompression_error(codec):
    with pytest.raises(DecompressionError):
        decompress(codec, b"\x00\x01garbage that is not compressed data at all\xff")


@pytest.mark.parametrize("codec", COMPRESSED)
def test_every_truncation_raises_decompression_error(codec):
    compressed = compress(codec, SAMPLES[2])
    for cut in range(len(compressed)):
        with pytest.raises(DecompressionError):
            decompress(codec, compressed[:cut])


def test_snappy_is_written_as_a_raw_block():
    data = SAMPLES[2]
    compressed = compress(CompressionType.SNAPPY, data)
    assert not compressed.startswith(XERIAL_SNAPPY_MAGIC)
    assert bytes(cramjam.snappy.decompress_raw(compressed)) == data


def _xerial(chunks):
    """snappy-java's SnappyOutputStream framing, built by hand."""
    out = XERIAL_SNAPPY_MAGIC + struct.pack(">ii", 1, 1)
    for chunk in chunks:
        block = bytes(cramjam.snappy.compress_raw(chunk))
        out += struct.pack(">i", len(block)) + block
    return out


def test_snappy_reads_xerial_framing_with_several_chunks():
    data = SAMPLES[3] + SAMPLES[2]
    framed = _xerial([data[:1000], data[1000:3000], data[3000:]])
    assert decompress(CompressionType.SNAPPY, framed) == data


def test_snappy_reads_empty_xerial_stream():
    assert decompress(CompressionType.SNAPPY, _xerial([])) == b""


@pytest.mark.parametrize(
    "damage",
    [
        lambda framed: framed[:12],  # header cut short
        lambda framed: framed[:18],  # chunk length cut short
        lambda framed: framed[:-1],  # chunk cut short
        lambda framed: framed[:16] + struct.pack(">i", -5) + framed[20:],  # negative length
    ],
)
def test_damaged_xerial_framing_is_a_decompression_error(damage):
    with pytest.raises(DecompressionError):
        decompress(CompressionType.SNAPPY, damage(_xerial([SAMPLES[2]])))


def test_zstd_reads_streamed_frame_without_content_size():
    data = SAMPLES[2] * 3
    buffer = io.BytesIO()
    with zstandard.ZstdCompressor().stream_writer(buffer, closefd=False) as writer:
        writer.write(data[:100])
        writer.write(data[100:])
    frame = buffer.getvalue()
    assert zstandard.get_frame_parameters(frame).content_size == zstandard.CONTENTSIZE_UNKNOWN
    assert decompress(CompressionType.ZSTD, frame) == data


def test_zstd_reads_concatenated_frames():
    frames = compress(CompressionType.ZSTD, b"first ") + compress(CompressionType.ZSTD, b"second")
    assert decompress(CompressionType.ZSTD, frames) == b"first second"


def test_lz4_frames_use_independent_blocks_and_no_content_size():
    # Kafka's KafkaLZ4BlockInputStream rejects dependent blocks.
    compressed = compress(CompressionType.LZ4, SAMPLES[4])
    assert compressed[:4] == b"\x04\x22\x4d\x18"
    flags = compressed[4]
    assert flags & 0x20, "block independence flag must be set"
    assert not flags & 0x08, "no content size"


def test_gzip_reads_concatenated_members_and_writes_standard_gzip():
    members = gzip.compress(b"one ") + gzip.compress(b"two")
    assert decompress(CompressionType.GZIP, members) == b"one two"
    assert gzip.decompress(compress(CompressionType.GZIP, b"payload")) == b"payload"
