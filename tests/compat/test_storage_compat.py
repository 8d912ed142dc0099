"""Byte compatibility of tidelog's segment files with Apache Kafka's, both ways.

(a) tidelog writes a partition -> Kafka's DumpLogSegments reads every file, and Kafka's
    own UnifiedLog, given the very same batches, writes byte-identical files.
(b) Kafka writes a partition -> tidelog opens it without rebuilding anything, reads every
    record, answers index lookups as Kafka's files say, and appends where Kafka stopped.

Never skipped: without Apache Kafka's jars these tests fail, telling to run
`make kafka-libs`.
"""

from __future__ import annotations

import logging
import shutil
from pathlib import Path

import pytest

from kafka_reference import (
    BatchSpec,
    RawBatch,
    RecordSpec,
    dump_log_segments,
    kafka_libs,
    kafka_write_partition,
    segment_files,
)
from kafka_reference.samples import (
    BASE_TIMESTAMP,
    mixed_batches,
    read_offset_index,
    read_time_index,
)
from tidelog.records import CompressionType, build_batch, iter_decoded_batches
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log
from tidelog.storage.segment import LogSegment

SEGMENT_BYTES = 2048
INDEX_INTERVAL_BYTES = 128


def _config() -> LogConfig:
    return LogConfig(segment_bytes=SEGMENT_BYTES, index_interval_bytes=INDEX_INTERVAL_BYTES)


def _tidelog_batch(spec) -> bytes:
    return build_batch(spec.records, compression=CompressionType.from_name(spec.compression))


def _text(data: bytes | None) -> str | None:
    return None if data is None else data.decode("utf-8")


def _read_all(log: Log) -> list:
    """Every batch of the log through Log.read, decoded, from the log start offset."""
    batches = []
    offset = log.log_start_offset
    while offset < log.log_end_offset:
        found = log.read(offset, 64 * 1024)
        assert found is not None, f"nothing read at offset {offset} < {log.log_end_offset}"
        data = found.to_bytes() if hasattr(found, "to_bytes") else found.records.to_bytes()
        decoded = list(iter_decoded_batches(data))
        assert decoded, f"no whole batch read at offset {offset}"
        batches += [b for b in decoded if b.header.last_offset >= offset]
        offset = decoded[-1].header.next_offset
    return batches


def _index_entries(index) -> list[tuple]:
    return [tuple(index.entry(i)) for i in range(index.entries)]


@pytest.fixture(scope="module")
def libs() -> Path:
    return kafka_libs()  # raises KafkaReferenceUnavailable, with instructions, if missing


# --------------------------------------------------------------------------------------
# (a) tidelog writes, Kafka reads


def _closing_tail() -> list[BatchSpec]:
    """A big batch, then two small ones with newer timestamps: the first small one gets
    index entries, the last one none, so only the final time index entry that closing the
    active segment writes (Kafka's LogSegment.close) records its maximum timestamp."""
    ts = BASE_TIMESTAMP + 100_000
    return [
        BatchSpec([RecordSpec(b"big", b"b" * 600, ts)]),
        BatchSpec([RecordSpec(b"x", b"x", ts + 1)]),
        BatchSpec([RecordSpec(b"y", b"y", ts + 2)]),
    ]


def test_kafka_reads_what_tidelog_writes(libs, tmp_path):
    specs = mixed_batches(60, seed=7) + _closing_tail()
    produced = [_tidelog_batch(spec) for spec in specs]

    log = Log.open(tmp_path / "tidelog" / "compat-0", _config())
    appends = [log.append_as_leader(batch, leader_epoch=0) for batch in produced]
    tidelog_indexes = {
        s.base_offset: (_index_entries(s.offset_index), _index_entries(s.time_index))
        for s in log.segments
    }
    base_offsets = [s.base_offset for s in log.segments]
    log.close()
    partition = tmp_path / "tidelog" / "compat-0"
    assert len(base_offsets) >= 4, "small segment.bytes must give several segments"

    # Kafka's own UnifiedLog appending the very same producer batches, same topic config.
    kafka = kafka_write_partition(
        tmp_path / "kafka",
        [RawBatch(batch) for batch in produced],
        segment_bytes=SEGMENT_BYTES,
        index_interval_bytes=INDEX_INTERVAL_BYTES,
        topic="compat",
    )

    dump = dump_log_segments(segment_files(partition), print_data_log=True)
    assert dump.problems == []

    # Offsets, keys, values, timestamps, headers, codecs and CRCs as Kafka reads them.
    dumped = [b for f in dump.of_kind("log") for b in f.batches]
    assert len(dumped) == len(specs)
    for spec, info, got in zip(specs, appends, dumped, strict=True):
        assert (got.base_offset, got.last_offset) == (info.first_offset, info.last_offset)
        assert got.is_valid and got.magic == 2
        assert got.compresscodec == spec.compression
        assert got.partition_leader_epoch == 0
        assert got.max_timestamp == max(r.timestamp for r in spec.records)
        for offset, (want, rec) in enumerate(
            zip(spec.records, got.records, strict=True), start=info.first_offset
        ):
            assert rec.offset == offset
            assert rec.timestamp == want.timestamp
            assert rec.key == _text(want.key)
            assert rec.payload == _text(want.value)
            assert rec.header_keys == [k for k, _ in want.headers]
    assert [f.log_starting_offset for f in dump.of_kind("log")] == base_offsets

    # Index entries as Kafka reads them == tidelog's own, no mismatches reported.
    for base in base_offsets:
        index = dump.file(partition / f"{base:020d}.index")
        time_index = dump.file(partition / f"{base:020d}.timeindex")
        want_index, want_time_index = tidelog_indexes[base]
        assert index.index_entries == want_index
        assert time_index.time_index_entries[: len(want_time_index)] == want_time_index
    assert sum(len(f.index_entries) for f in dump.of_kind("index")) >= 10

    # What a broker checks on startup before deciding to rebuild an index.
    sanity = dump_log_segments(
        segment_files(partition, (".index", ".timeindex")), index_sanity_check=True
    )
    assert sanity.problems == []
    assert all(f.passed_sanity_check or f.empty for f in sanity.files.values())

    # Byte for byte what Kafka writes for the same batches: segments, rolls, indexes.
    assert kafka.segments == base_offsets
    last_time_index = kafka.path / f"{base_offsets[-1]:020d}.timeindex"
    assert read_time_index(last_time_index)[-1] == (
        specs[-1].records[0].timestamp,
        appends[-1].last_offset,
    ), "the closing tail no longer exercises the final time index entry"
    assert [a.first_offset for a in kafka.appends] == [a.first_offset for a in appends]
    names = [p.name for p in segment_files(kafka.path)]
    assert [p.name for p in segment_files(partition)] == names
    differing = [n for n in names if (partition / n).read_bytes() != (kafka.path / n).read_bytes()]
    details = []
    for name in differing:
        ours, theirs = partition / name, kafka.path / name
        details.append(f"{name}: tidelog {ours.stat().st_size} B, Kafka {theirs.stat().st_size} B")
        if name.endswith((".index", ".timeindex")):
            kafka_file = dump_log_segments([theirs], check=False).file(theirs)
            ours_file = dump.file(ours)
            field = "index_entries" if name.endswith(".index") else "time_index_entries"
            details.append(f"  tidelog: {getattr(ours_file, field)}")
            details.append(f"  Kafka:   {getattr(kafka_file, field)}")
    assert not differing, "files differ from Kafka's:\n" + "\n".join(details)


# --------------------------------------------------------------------------------------
# (b) Kafka writes, tidelog reads


def test_tidelog_reads_what_kafka_writes(libs, tmp_path, monkeypatch, caplog):
    specs = mixed_batches(60, seed=11)
    kafka = kafka_write_partition(
        tmp_path / "kafka",
        specs,
        segment_bytes=SEGMENT_BYTES,
        index_interval_bytes=INDEX_INTERVAL_BYTES,
        topic="from-kafka",
    )
    assert len(kafka.segments) >= 4
    original = {p.name: p.read_bytes() for p in segment_files(kafka.path)}
    partition = tmp_path / "tidelog" / kafka.path.name
    shutil.copytree(kafka.path, partition)  # Kafka also leaves .snapshot files, epochs

    # Loading must trust Kafka's indexes: no rebuild, no warning.
    def no_rebuild(segment, *args, **kwargs):
        raise AssertionError(f"tidelog rebuilt the indexes of {segment.log_path}")

    monkeypatch.setattr(LogSegment, "recover", no_rebuild)
    caplog.set_level(logging.WARNING, logger="tidelog")

    log = Log.open(partition, _config())
    assert [s.base_offset for s in log.segments] == kafka.segments
    assert log.log_start_offset == kafka.log_start_offset == 0
    assert log.log_end_offset == kafka.log_end_offset

    # Every record back, at the offsets Kafka assigned.
    batches = _read_all(log)
    assert len(batches) == len(specs)
    for spec, append, batch in zip(specs, kafka.appends, batches, strict=True):
        assert batch.header.base_offset == append.first_offset
        assert batch.header.last_offset == append.last_offset
        assert batch.header.partition_leader_epoch == 0
        assert batch.compression == CompressionType.from_name(spec.compression)
        assert len(batch.records) == len(spec.records)
        for offset, (want, rec) in enumerate(
            zip(spec.records, batch.records, strict=True), start=append.first_offset
        ):
            assert rec.offset == offset
            assert rec.timestamp == want.timestamp
            assert rec.key == want.key
            assert rec.value == want.value
            assert tuple(rec.headers) == tuple(want.headers)

    # Lookups on Kafka's index files, as tidelog answers them (checked against
    # DumpLogSegments below).
    offset_lookups, time_lookups = {}, {}
    for segment in log.segments:
        index = _index_entries(segment.offset_index)
        time_index = _index_entries(segment.time_index)
        offset_lookups[segment.base_offset] = (
            index,
            [tuple(segment.offset_index.lookup(o)) for o, _ in index],
            [tuple(segment.offset_index.lookup(o + 1)) for o, _ in index],
        )
        time_lookups[segment.base_offset] = (
            time_index,
            [tuple(segment.time_index.lookup(t)) for t, _ in time_index],
            [tuple(segment.time_index.lookup(t - 1)) for t, _ in time_index],
        )
        assert segment.offset_index.lookup(segment.base_offset) == (segment.base_offset, 0)

    # ListOffsets by time: the first offset whose timestamp is >= the target.
    records = [(r.offset, r.timestamp) for b in batches for r in b.records]
    for target in range(BASE_TIMESTAMP - 10_000, BASE_TIMESTAMP + 70_000, 997):
        expected = next(((o, t) for o, t in records if t >= target), None)
        found = log.offset_for_timestamp(target)
        got = None if found is None else (found.offset, found.timestamp)
        assert got == expected, f"offset_for_timestamp({target})"

    log.close()
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING], caplog.text
    # Opening and closing left Kafka's files exactly as they were.
    for name, data in original.items():
        assert (partition / name).read_bytes() == data, f"tidelog changed {name}"

    # Appending continues at Kafka's log end offset.
    more = mixed_batches(12, seed=12)
    log = Log.open(partition, _config())
    first = log.append_as_leader(_tidelog_batch(more[0]), leader_epoch=0)
    assert first.first_offset == kafka.log_end_offset
    for spec in more[1:]:
        log.append_as_leader(_tidelog_batch(spec), leader_epoch=0)
    end_offset = log.log_end_offset
    assert end_offset == kafka.log_end_offset + sum(len(s.records) for s in more)
    log.close()

    # One DumpLogSegments run over Kafka's original files and tidelog's continued copy.
    dump = dump_log_segments(
        [*segment_files(kafka.path), *segment_files(partition)], print_data_log=True
    )
    assert dump.problems == []
    for base, (index, at_entry, after_entry) in offset_lookups.items():
        listed = dump.file(kafka.path / f"{base:020d}.index").index_entries
        assert index == listed == read_offset_index(kafka.path / f"{base:020d}.index")
        assert at_entry == listed
        # lookup(o + 1): the greatest listed entry at or below o + 1.
        assert after_entry == [max(e for e in listed if e[0] <= o + 1) for o, _ in listed]
    for base, (time_index, at_entry, before_entry) in time_lookups.items():
        listed = dump.file(kafka.path / f"{base:020d}.timeindex").time_index_entries
        assert time_index == listed
        assert at_entry == listed
        assert before_entry == [(-1, base), *listed[:-1]]
    continued = [
        r for f in dump.files.values() if Path(f.path).parent == partition for r in f.records
    ]
    assert [r.offset for r in continued] == list(range(end_offset))
    appended = [r for s in more for r in s.records]
    for want, rec in zip(appended, continued[kafka.log_end_offset :], strict=True):
        assert (rec.key, rec.payload, rec.timestamp) == (
            _text(want.key),
            _text(want.value),
            want.timestamp,
        )
