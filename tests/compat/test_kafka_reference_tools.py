"""Self-test of the Kafka reference harness (tests/kafka_reference).

Apache Kafka's own code writes a partition (UnifiedLog, several segments, every codec),
and Kafka's DumpLogSegments must report exactly what we asked it to write. This also pins
down, against Kafka itself, the rules tidelog's storage must follow: when a segment rolls,
where offset and time index entries go, how indexes are trimmed.

Never skipped: without Apache Kafka's jars these tests fail, telling to run
`make kafka-libs`.
"""

from __future__ import annotations

import itertools
import shutil
import struct
from pathlib import Path

import crc32c
import pytest

from kafka_reference import (
    DumpLogSegmentsError,
    KafkaReferenceUnavailable,
    RawBatch,
    dump_log_segments,
    kafka_libs,
    kafka_write_partition,
    segment_files,
)
from kafka_reference.samples import mixed_batches, read_offset_index, read_time_index

SEGMENT_BYTES = 2048
INDEX_INTERVAL_BYTES = 128


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8")


@pytest.fixture(scope="module")
def libs() -> Path:
    return kafka_libs()  # raises KafkaReferenceUnavailable, with instructions, if missing


@pytest.fixture(scope="module")
def written(libs, tmp_path_factory):
    batches = mixed_batches(60)
    result = kafka_write_partition(
        tmp_path_factory.mktemp("kafka-written"),
        batches,
        segment_bytes=SEGMENT_BYTES,
        index_interval_bytes=INDEX_INTERVAL_BYTES,
    )
    dump = dump_log_segments(segment_files(result.path), print_data_log=True)
    return batches, result, dump


def test_kafka_libs_missing_is_an_error_not_a_skip(monkeypatch, tmp_path):
    kafka_libs.cache_clear()
    try:
        monkeypatch.setenv("TIDELOG_KAFKA_LIBS", str(tmp_path / "nowhere"))
        with pytest.raises(KafkaReferenceUnavailable, match="make kafka-libs"):
            kafka_libs()
    finally:
        monkeypatch.undo()
        kafka_libs.cache_clear()


def test_kafka_assigns_offsets_and_rolls_segments(written):
    batches, result, dump = written
    next_offset = 0
    for spec, append in zip(batches, result.appends, strict=True):
        assert append.first_offset == next_offset
        assert append.last_offset == next_offset + len(spec.records) - 1
        next_offset = append.last_offset + 1
    assert result.log_start_offset == 0
    assert result.log_end_offset == next_offset
    assert len(result.segments) >= 4, "small segment.bytes must give several segments"

    logs = dump.of_kind("log")
    assert [int(Path(f.path).stem) for f in logs] == result.segments
    assert [f.log_starting_offset for f in logs] == result.segments
    # Kafka rolls before an append that would take the segment past segment.bytes.
    for f in logs:
        assert sum(b.size for b in f.batches) <= SEGMENT_BYTES
    for f, nxt in itertools.pairwise(logs):
        used = sum(b.size for b in f.batches)
        assert used + nxt.batches[0].size > SEGMENT_BYTES


def test_dump_reports_what_we_wrote(written):
    batches, result, dump = written
    assert dump.problems == []
    dumped_batches = [b for f in dump.of_kind("log") for b in f.batches]
    assert len(dumped_batches) == len(batches)
    for spec, append, got in zip(batches, result.appends, dumped_batches, strict=True):
        assert (got.base_offset, got.last_offset) == (append.first_offset, append.last_offset)
        assert got.count == len(spec.records)
        assert got.compresscodec == spec.compression
        assert got.magic == 2
        assert got.is_valid
        assert got.timestamp_type == "CreateTime"
        assert got.max_timestamp == max(r.timestamp for r in spec.records)
        assert got.partition_leader_epoch == 0
        assert (got.producer_id, got.producer_epoch, got.base_sequence) == (-1, -1, -1)
        assert not got.is_transactional and not got.is_control
        assert len(got.records) == len(spec.records)
        for offset, (want, rec) in enumerate(
            zip(spec.records, got.records, strict=True), start=append.first_offset
        ):
            assert rec.offset == offset
            assert rec.timestamp == want.timestamp
            assert rec.key_size == (-1 if want.key is None else len(want.key))
            assert rec.value_size == (-1 if want.value is None else len(want.value))
            assert rec.key == _text(want.key)
            assert rec.payload == _text(want.value)
            assert rec.header_keys == [k for k, _ in want.headers]


def test_batch_positions_and_crcs_match_the_file_bytes(written):
    _, _, dump = written
    for f in dump.of_kind("log"):
        data = Path(f.path).read_bytes()
        position = 0
        for b in f.batches:
            assert b.position == position
            base_offset, length = struct.unpack_from(">qi", data, position)
            assert base_offset == b.base_offset
            assert length + 12 == b.size
            stored_crc = struct.unpack_from(">I", data, position + 17)[0]
            assert stored_crc == b.crc == crc32c.crc32c(data[position + 21 : position + b.size])
            position += b.size
        assert position == len(data)


def _kafka_index_model(batches, interval):
    """Kafka's LogSegment.append, batch by batch, then the final time index entry that
    LogSegment adds when the segment is rolled or closed."""
    index, time_index = [], []
    since_last_entry = 0
    max_ts, offset_of_max_ts = -1, None

    def maybe_append_time(ts, offset):
        if not time_index or ts > time_index[-1][0]:
            time_index.append((ts, offset))

    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, offset_of_max_ts = b.max_timestamp, b.last_offset
        if since_last_entry > interval:
            index.append((b.last_offset, b.position))
            maybe_append_time(max_ts, offset_of_max_ts)
            since_last_entry = 0
        since_last_entry += b.size
    maybe_append_time(max_ts, offset_of_max_ts)
    return index, time_index


def test_index_entries_follow_kafkas_rules(written):
    _, result, dump = written
    for base in result.segments:
        log = dump.file(result.path / f"{base:020d}.log")
        index_path = result.path / f"{base:020d}.index"
        time_index_path = result.path / f"{base:020d}.timeindex"
        index, time_index = dump.file(index_path), dump.file(time_index_path)
        want_index, want_time_index = _kafka_index_model(log.batches, INDEX_INTERVAL_BYTES)

        # What DumpLogSegments prints == the file's bytes == Kafka's rule.
        assert index.index_entries == read_offset_index(index_path) == want_index
        assert time_index.time_index_entries == read_time_index(time_index_path)
        assert time_index.time_index_entries == want_time_index
        assert index.empty == (not want_index)
        # Closed cleanly: indexes trimmed to their entries, no preallocated tail.
        assert index_path.stat().st_size == 8 * len(want_index)
        assert time_index_path.stat().st_size == 12 * len(want_time_index)
        # Every entry points at the start of a batch whose last offset it names.
        by_position = {b.position: b for b in log.batches}
        for offset, position in index.index_entries:
            assert by_position[position].last_offset == offset
    assert sum(len(f.index_entries) for f in dump.of_kind("index")) >= 10


def test_index_sanity_check_passes(written):
    _, result, _ = written
    files = segment_files(result.path, (".index", ".timeindex"))
    out = dump_log_segments(files, index_sanity_check=True)
    assert out.problems == []
    for f in out.files.values():
        assert f.passed_sanity_check or f.empty, f.raw


def test_raw_batches_are_appended_unchanged(written, tmp_path):
    """Kafka appends ready-made batch bytes (RawBatch) as a leader would, changing only
    baseOffset and partitionLeaderEpoch: the files come out identical. This is what lets the
    storage compatibility tests feed tidelog's own batches to Kafka."""
    _, result, dump = written
    raw = []
    for f in dump.of_kind("log"):
        data = Path(f.path).read_bytes()
        for b in f.batches:
            batch = bytearray(data[b.position : b.position + b.size])
            # As a producer sends it: baseOffset 0, partitionLeaderEpoch -1.
            struct.pack_into(">q", batch, 0, 0)
            struct.pack_into(">i", batch, 12, -1)
            raw.append(RawBatch(bytes(batch)))
    again = kafka_write_partition(
        tmp_path, raw, segment_bytes=SEGMENT_BYTES, index_interval_bytes=INDEX_INTERVAL_BYTES
    )
    assert again.segments == result.segments
    names = [p.name for p in segment_files(result.path)]
    assert [p.name for p in segment_files(again.path)] == names
    for name in names:
        assert (again.path / name).read_bytes() == (result.path / name).read_bytes(), name


def test_dump_reports_corruption(written, tmp_path):
    """The harness must not be blind: damaged files show up as problems."""
    _, result, dump = written
    damaged = tmp_path / result.path.name
    shutil.copytree(result.path, damaged)
    first = dump.of_kind("log")[0]
    base = int(Path(first.path).stem)

    # A flipped byte inside the first batch's records: CRC no longer matches.
    log_path = damaged / f"{base:020d}.log"
    data = bytearray(log_path.read_bytes())
    data[first.batches[0].size - 3] ^= 0xFF
    log_path.write_bytes(bytes(data))
    # The second offset index entry pointing at the first entry's batch.
    index_path = damaged / f"{base:020d}.index"
    index = bytearray(index_path.read_bytes())
    index[12:16] = index[4:8]
    index_path.write_bytes(bytes(index))
    # A time index timestamp that no batch has.
    time_index_path = damaged / f"{base:020d}.timeindex"
    time_index = bytearray(time_index_path.read_bytes())
    struct.pack_into(">q", time_index, 0, 42)
    time_index_path.write_bytes(bytes(time_index))

    out = dump_log_segments([log_path, index_path, time_index_path], check=False)
    assert out.returncode == 0
    assert not out.file(log_path).batches[0].is_valid
    assert out.index_mismatches[str(index_path)], out.stderr
    assert out.time_index_mismatches[str(time_index_path)], out.stderr
    assert len(out.problems) >= 3

    # A truncated index is what a broker would rebuild: the sanity check fails loudly.
    index_path.write_bytes(bytes(index[:-3]))
    with pytest.raises(DumpLogSegmentsError, match="Corrupt"):
        dump_log_segments([index_path], index_sanity_check=True)
