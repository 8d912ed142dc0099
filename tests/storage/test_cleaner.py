"""One cleaning of one log (``tidelog.storage.cleaner.cleaner``): what is kept, what goes,
how batches are rebuilt, and what an abort or a crash at any point leaves behind."""

from __future__ import annotations

import os
import random
from pathlib import Path
from types import SimpleNamespace

import pytest

from tidelog.records import (
    CompressionType,
    ControlRecordType,
    NullKeyOnCompactedTopicError,
    build_batch,
    build_control_batch,
    iter_decoded_batches,
)
from tidelog.records.batch import BATCH_HEADER_SIZE
from tidelog.records.compression import compress, decompress
from tidelog.storage.cleaner import (
    Cleaner,
    CleanerError,
    LogCleaningAbortedError,
    LogToClean,
    OffsetMap,
    clean_log,
    cleanable_offsets,
    group_segments_by_size,
    record_passes,
)
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log

T0 = 1_700_000_000_000  # ms; the FakeClock's default start


# -- helpers -------------------------------------------------------------------------------


@pytest.fixture(autouse=True, params=["pure Python", "compiled"])
def passes(request, monkeypatch) -> record_passes.RecordPasses:
    """Every test runs with each implementation of the record passes as the default."""
    chosen = record_passes.PYTHON if request.param == "pure Python" else record_passes.NATIVE
    if chosen is None:
        pytest.fail("tidelog_native is not installed: `make setup` builds and installs it")
    monkeypatch.setattr(record_passes, "default", lambda: chosen)
    return chosen


def compacted(**overrides) -> LogConfig:
    settings = {"cleanup_policy": ("compact",), "segment_bytes": 4096}
    settings.update(overrides)
    return LogConfig(**settings)


def open_log(directory: Path, clock, **overrides) -> Log:
    return Log.open(directory / "topic-0", compacted(**overrides), clock=clock)


def produce(log: Log, entries, *, timestamp: int = T0, **fields) -> list[int]:
    """Append one batch of ``(key, value)`` entries; returns their offsets."""
    info = log.append_as_leader(build_batch(entries, timestamp=timestamp, **fields))
    return list(range(info.first_offset, info.last_offset + 1))


def decoded_batches(log: Log):
    found = []
    for segment in log.segments:
        found.extend(iter_decoded_batches(segment.log.read(0, segment.size)))
    return found


def records(log: Log):
    return [record for batch in decoded_batches(log) for record in batch.records]


def assert_consistent(log: Log, latest: dict[bytes, tuple[int, bytes | None]]) -> None:
    """Offsets increase strictly, and every key's latest record is there, unchanged."""
    found = records(log)
    offsets = [record.offset for record in found]
    assert offsets == sorted(set(offsets))
    by_offset = {record.offset: record for record in found}
    for key, (offset, value) in latest.items():
        assert offset in by_offset, f"latest record of {key!r} at {offset} is gone"
        assert (by_offset[offset].key, by_offset[offset].value) == (key, value)


def assert_compacted(log: Log, latest: dict[bytes, tuple[int, bytes | None]]) -> None:
    """Exactly one record per key, the latest, at its original offset."""
    found = records(log)
    assert [(r.key, r.offset, r.value) for r in found] == sorted(
        ((key, offset, value) for key, (offset, value) in latest.items()),
        key=lambda item: item[1],
    )


def cleaned_files(log: Log) -> list[str]:
    return sorted(p.name for p in log.directory.iterdir() if p.name.endswith((".cleaned", ".swap")))


def write_history(log: Log, *, keys: int, updates: int, seed: int = 7, per_batch: int = 4):
    """Random updates of ``keys`` keys; returns each key's latest (offset, value)."""
    rng = random.Random(seed)
    latest = {}
    written = 0
    while written < updates:
        entries = []
        for _ in range(min(per_batch, updates - written)):
            key = b"k%03d" % rng.randrange(keys)
            entries.append((key, b"v%05d-" % written + bytes(40)))
            written += 1
        for (key, value), offset in zip(entries, produce(log, entries), strict=True):
            latest[key] = (offset, value)
    return latest


# -- what is kept --------------------------------------------------------------------------


def test_latest_value_of_every_key_is_kept_across_segments(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=1024)
    latest = write_history(log, keys=25, updates=400)
    log.roll()
    segments_before = len(log.segments)
    assert segments_before > 10
    before = log.size

    end, stats = clean_log(log, OffsetMap(24 * 1000), now_ms=T0)

    assert end == log.active_segment.base_offset == log.log_end_offset
    assert_compacted(log, latest)
    assert log.size < before / 5
    assert stats.messages_read == 400 and stats.messages_written == 25
    assert stats.map_messages_read == 400 and stats.map_size == 25
    assert stats.bytes_written == log.size
    assert cleaned_files(log) == []
    # Groups are formed from the sizes before cleaning: one full segment each.
    assert len(log.segments) == segments_before


def test_a_second_cleaning_recleans_the_clean_part_with_the_new_map(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=1024)
    latest = write_history(log, keys=10, updates=100)
    log.roll()
    first_end, _ = clean_log(log, OffsetMap(24 * 100), now_ms=T0)
    latest.update(write_history(log, keys=10, updates=60, seed=8))
    log.roll()

    segments_before = len(log.segments)

    end, stats = clean_log(log, OffsetMap(24 * 100), first_dirty_offset=first_end, now_ms=T0)

    assert end == log.log_end_offset
    assert stats.map_messages_read == 60  # only the dirty part is mapped
    assert_compacted(log, latest)
    # The small segments left by the first cleaning were merged into one group.
    assert len([s for s in log.segments if s.base_offset < first_end]) == 1
    assert len(log.segments) < segments_before
    assert all(segment.size <= 1024 for segment in log.segments)


def test_batches_larger_than_the_io_buffer_are_read_whole(tmp_path, clock):
    log = open_log(tmp_path, clock)
    latest = write_history(log, keys=4, updates=40, per_batch=8)
    log.roll()
    to_clean = LogToClean((log.topic, log.partition), log, 0, log.log_end_offset)
    end, _ = Cleaner(OffsetMap(24 * 100), io_buffer_size=100).clean(to_clean)
    assert end == log.log_end_offset
    assert_compacted(log, latest)


def test_retained_records_keep_offsets_and_batch_fields(tmp_path, clock):
    log = open_log(tmp_path, clock)
    headers = (("h", b"1"),)
    entries = [
        ("a", "a0", (), T0 + 9),
        ("b", "b0", headers, T0 + 5),
        ("a", "a1", (), T0 + 2),
        ("c", "c0", (), T0 + 7),
    ]
    # As a follower would copy it: a producer mid-stream (sequence 100), epoch 6.
    log.append_as_follower(
        build_batch(
            entries, producer_id=42, producer_epoch=3, base_sequence=100, partition_leader_epoch=6
        )
    )
    produce(log, [("c", "c1")], timestamp=T0 + 20)
    log.roll()

    clean_log(log, OffsetMap(24 * 100), now_ms=T0)

    first = decoded_batches(log)[0]
    header = first.header
    assert (header.base_offset, header.last_offset_delta, header.records_count) == (0, 3, 2)
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (42, 3, 100)
    assert header.partition_leader_epoch == 6
    assert header.base_timestamp == T0 + 9  # the original's, the deltas stay valid
    assert header.max_timestamp == T0 + 5  # of the records kept
    kept = [(r.offset, r.key, r.value, r.timestamp, r.headers) for r in first.records]
    assert kept == [(1, b"b", b"b0", T0 + 5, headers), (2, b"a", b"a1", T0 + 2, ())]
    assert log.log_end_offset == 5


def test_whole_batches_are_copied_and_empty_ones_dropped(tmp_path, clock):
    log = open_log(tmp_path, clock)
    produce(log, [("a", "1"), ("b", "1")])
    untouched = build_batch([("c", "1"), ("d", "1")], timestamp=T0)
    log.append_as_leader(untouched)
    produce(log, [("a", "2"), ("b", "2")])
    log.roll()

    clean_log(log, OffsetMap(24 * 100), now_ms=T0)

    batches = decoded_batches(log)
    assert [b.header.base_offset for b in batches] == [2, 4]
    stored = log.segments[0].log.read(0, batches[0].header.size)
    assert stored[8:12] == untouched[8:12] and stored[16:] == untouched[16:]


@pytest.mark.parametrize(
    ("codec", "setting", "level"),
    [
        (CompressionType.GZIP, "compression_gzip_level", 1),
        (CompressionType.LZ4, "compression_lz4_level", 12),
        (CompressionType.ZSTD, "compression_zstd_level", 19),
    ],
)
def test_a_rebuilt_batch_is_compressed_at_the_topics_level(tmp_path, clock, codec, setting, level):
    """compression.<codec>.level: where the cleaner compresses a batch again, it uses the
    log's level (the bytes are what that level makes of the kept records)."""
    log = open_log(tmp_path, clock, **{setting: level})
    produce(log, [(f"k{i % 4}", f"value-{i:04d}-" * 20) for i in range(40)], compression=codec)
    produce(log, [("k0", "last")])
    log.roll()

    clean_log(log, OffsetMap(24 * 100), now_ms=T0)

    rebuilt = decoded_batches(log)[0]
    stored = log.segments[0].log.read(0, rebuilt.header.size)
    section = decompress(codec, stored[BATCH_HEADER_SIZE:])
    assert stored[BATCH_HEADER_SIZE:] == compress(codec, section, level)
    assert stored[BATCH_HEADER_SIZE:] != compress(codec, section)  # not the default level


@pytest.mark.parametrize(
    "codec",
    [CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4, CompressionType.ZSTD],
)
def test_compression_codec_is_kept(tmp_path, clock, codec):
    log = open_log(tmp_path, clock)
    produce(log, [(f"k{i % 3}", f"value-{i}" * 5) for i in range(9)], compression=codec)
    produce(log, [("k0", "last")], compression=codec)
    log.roll()

    clean_log(log, OffsetMap(24 * 100), now_ms=T0)

    batches = decoded_batches(log)
    assert [b.compression for b in batches] == [codec, codec]
    assert [(r.offset, r.key, r.value) for b in batches for r in b.records] == [
        (7, b"k1", b"value-7" * 5),
        (8, b"k2", b"value-8" * 5),
        (9, b"k0", b"last"),
    ]


def test_log_append_time_batches_keep_their_append_time(tmp_path, clock):
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    produce(log, [("a", "1"), ("b", "1")])
    produce(log, [("a", "2")])
    log.roll()
    clean_log(log, OffsetMap(24 * 100), now_ms=T0)
    first = decoded_batches(log)[0]
    assert first.timestamp_type == 1
    assert first.header.max_timestamp == int(clock() * 1000)
    assert [(r.key, r.timestamp) for r in first.records] == [(b"b", int(clock() * 1000))]


def test_transactional_and_control_batches_are_kept_untouched_and_not_mapped(tmp_path, clock):
    log = open_log(tmp_path, clock)
    produce(log, [("k", "v0"), ("x", "v0")])
    transactional = build_batch(
        [("k", "t"), ("x", "t")],
        timestamp=T0,
        is_transactional=True,
        producer_id=9,
        producer_epoch=0,
        base_sequence=0,
    )
    log.append_as_leader(transactional)
    marker = build_control_batch(
        ControlRecordType.COMMIT, producer_id=9, producer_epoch=0, base_offset=4, timestamp=T0
    )
    log.append_as_follower(marker)
    produce(log, [("k", "v5")])
    log.roll()

    clean_log(log, OffsetMap(24 * 100), now_ms=T0)

    batches = decoded_batches(log)
    # x at 1 stays: only the (possibly aborted) transaction wrote x again.
    assert [(r.offset, r.key) for r in batches[0].records] == [(1, b"x")]
    assert batches[1].header.base_offset == 2 and batches[1].is_transactional
    stored = log.segments[0].log.read(0, log.segments[0].size)
    assert transactional[16:] in stored and marker[16:] in stored
    assert batches[2].is_control
    assert [(r.offset, r.value) for r in batches[3].records] == [(5, b"v5")]


# -- null keys -----------------------------------------------------------------------------


def test_compacted_log_rejects_a_batch_with_a_null_key_and_writes_nothing(tmp_path, clock):
    log = open_log(tmp_path, clock)
    produce(log, [("k", "v")])
    size = log.active_segment.log_path.stat().st_size
    bad = build_batch(
        [("a", "1"), (None, "2"), ("c", "3")], timestamp=T0, compression=CompressionType.LZ4
    )
    with pytest.raises(NullKeyOnCompactedTopicError) as caught:
        log.append_as_leader(bad)
    assert caught.value.error_code == 87  # INVALID_RECORD
    assert log.log_end_offset == 1
    assert log.active_segment.log_path.stat().st_size == size


def test_records_without_a_key_from_old_data_are_dropped(tmp_path, clock):
    log = open_log(tmp_path, clock)
    produce(log, [("a", "1")])
    # Written before the topic was compacted: replicated as is, never validated.
    log.append_as_follower(build_batch([(None, "x"), ("b", "1")], base_offset=1, timestamp=T0))
    log.roll()
    _, stats = clean_log(log, OffsetMap(24 * 100), now_ms=T0)
    assert [(r.offset, r.key) for r in records(log)] == [(0, b"a"), (2, b"b")]
    assert stats.invalid_messages == 1


# -- what may be cleaned -------------------------------------------------------------------


def test_the_active_segment_is_never_cleaned(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=1024)
    write_history(log, keys=5, updates=60)
    active = log.active_segment
    active_bytes = active.log.read(0, active.size)
    assert active.size > 0

    end, _ = clean_log(log, OffsetMap(24 * 100), now_ms=T0)

    assert end == active.base_offset
    assert log.active_segment is active
    assert active.log.read(0, active.size) == active_bytes
    cleaned = [r.key for r in records(log) if r.offset < active.base_offset]
    assert len(cleaned) == len(set(cleaned))


def test_min_compaction_lag_keeps_recent_segments_dirty(tmp_path, clock):
    log = open_log(tmp_path, clock, segment_bytes=1024, min_compaction_lag_ms=60_000)
    now = int(clock() * 1000)
    produce(log, [("a", "old"), ("b", "old")], timestamp=now - 120_000)
    log.roll()
    produce(log, [("a", "new"), ("b", "new")], timestamp=now - 1_000)
    log.roll()
    recent_base = log.segments[1].base_offset
    produce(log, [("a", "active")], timestamp=now)

    offsets = cleanable_offsets(log, None, now)
    assert offsets.first_uncleanable_offset == recent_base
    end, _ = clean_log(log, OffsetMap(24 * 100), now_ms=now)
    assert end == recent_base
    assert [r.value for r in records(log)] == [b"old", b"old", b"new", b"new", b"active"]

    later = now + 60_000
    end, _ = clean_log(log, OffsetMap(24 * 100), first_dirty_offset=end, now_ms=later)
    assert end == log.active_segment.base_offset
    assert [r.value for r in records(log)] == [b"new", b"new", b"active"]


# -- tombstones ----------------------------------------------------------------------------


def set_mtime(segment, seconds: float) -> None:
    os.utime(segment.log_path, (seconds, seconds))


def segment_of(log: Log, offset: int):
    return [s for s in log.segments if s.base_offset <= offset][-1]


def test_tombstones_stay_for_delete_retention_then_go(tmp_path, clock):
    # Every segment is one batch of ~800 bytes: no two ever fit one 1024-byte group, so
    # the tombstone's segment keeps its own modification time.
    log = open_log(tmp_path, clock, segment_bytes=1024, delete_retention_ms=10_000)
    filler = bytes(150)

    def segment_with(entries, tag):
        offsets = produce(log, entries + [(f"{tag}{i}", filler) for i in range(5)])
        log.roll()
        return offsets

    segment_with([("gone", "value")], "a")
    tombstone = segment_with([("gone", None)], "b")[0]
    segment_with([], "c")

    end, stats = clean_log(log, OffsetMap(24 * 100), now_ms=T0)
    # First cleaning: nothing is clean yet, so the tombstone is kept, the value it
    # deletes is not.
    assert [(r.offset, r.value) for r in records(log) if r.key == b"gone"] == [(tombstone, None)]

    base = 1_600_000_000.0
    segment_with([], "d")
    set_mtime(segment_of(log, tombstone), base)
    set_mtime(segment_of(log, end - 1), base + 5)  # newest clean segment: 5 s later
    end, stats = clean_log(log, OffsetMap(24 * 100), first_dirty_offset=end, now_ms=T0)
    assert [r.offset for r in records(log) if r.key == b"gone"] == [tombstone]
    assert stats.tombstones_removed == 0

    segment_with([], "e")
    set_mtime(segment_of(log, tombstone), base)
    set_mtime(segment_of(log, end - 1), base + 11)  # now older than delete.retention.ms
    end, stats = clean_log(log, OffsetMap(24 * 100), first_dirty_offset=end, now_ms=T0)
    assert [r for r in records(log) if r.key == b"gone"] == []
    assert stats.tombstones_removed == 1
    assert len(records(log)) == 5 * 5


def test_cleaned_segment_keeps_the_modification_time_of_its_newest_source(tmp_path, clock):
    log = open_log(tmp_path, clock)
    produce(log, [("a", "1")])
    log.roll()
    produce(log, [("a", "2")])
    log.roll()
    set_mtime(log.segments[0], 1_600_000_000)
    set_mtime(log.segments[1], 1_600_000_100)
    clean_log(log, OffsetMap(24 * 100), now_ms=T0)
    assert len(log.segments) == 2
    assert log.segments[0].last_modified_ms == 1_600_000_100_000


# -- the offset map bounds one cleaning ----------------------------------------------------


def test_a_full_offset_map_stops_at_a_segment_boundary_and_the_next_cleaning_goes_on(
    tmp_path, clock
):
    log = open_log(tmp_path, clock)
    latest = {}
    for round_ in range(4):  # four segments of 20 distinct keys each
        entries = [(b"k%02d" % (round_ * 10 + i), b"r%d" % round_) for i in range(20)]
        for (key, value), offset in zip(entries, produce(log, entries), strict=True):
            latest[key] = (offset, value)
        log.roll()
    offset_map = OffsetMap(24 * 53, load_factor=0.9)  # 47 keys: two segments fit
    assert offset_map.capacity == 47

    end, stats = clean_log(log, offset_map, now_ms=T0)
    assert end == 40  # the base offset of the third segment
    assert stats.segments_mapped == 2
    assert_consistent(log, latest)

    end, stats = clean_log(log, offset_map, first_dirty_offset=end, now_ms=T0)
    assert end == log.log_end_offset == 80
    assert_compacted(log, latest)


def test_a_segment_larger_than_the_offset_map_is_a_clear_error(tmp_path, clock):
    log = open_log(tmp_path, clock)
    produce(log, [(f"k{i}", "v") for i in range(30)])
    log.roll()
    before = records(log)
    with pytest.raises(CleanerError, match="log.cleaner.dedupe.buffer.size"):
        clean_log(log, OffsetMap(24 * 23), now_ms=T0)
    assert records(log) == before
    assert cleaned_files(log) == []


def test_a_segment_of_duplicates_fits_a_small_map(tmp_path, clock):
    log = open_log(tmp_path, clock)
    latest = {}
    for i in range(30):
        key, value = f"k{i % 3}".encode(), f"{i}".encode()
        latest[key] = (produce(log, [(key, value)])[0], value)
    log.roll()
    clean_log(log, OffsetMap(24 * 7), now_ms=T0)
    assert_compacted(log, latest)


# -- grouping ------------------------------------------------------------------------------


def fake_segment(base_offset: int, size: int, index_bytes: int = 0):
    index = SimpleNamespace(size_in_bytes=index_bytes)
    return SimpleNamespace(base_offset=base_offset, size=size, offset_index=index, time_index=index)


def test_groups_fit_segment_bytes_index_bytes_and_int32_offsets():
    segments = [fake_segment(i * 10, 400) for i in range(5)]
    groups = group_segments_by_size(segments, 1000, 1 << 20, 50)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20, 30], [40]]

    indexed = [fake_segment(i * 10, 10, index_bytes=48) for i in range(4)]
    groups = group_segments_by_size(indexed, 1 << 20, 100, 40)
    assert [len(g) for g in groups] == [2, 2]

    # The second segment ends at 2**31 - 11, the third at 2**31 + 19: past an int32
    # relative offset from 0.
    wide = [fake_segment(0, 10), fake_segment(2**31 - 30, 10), fake_segment(2**31 - 10, 10)]
    groups = group_segments_by_size(wide, 1 << 20, 1 << 20, 2**31 + 20)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 2**31 - 30], [2**31 - 10]]


# -- abort and crash -----------------------------------------------------------------------


def history_in_small_segments(tmp_path, clock, segments: int = 3):
    """``segments`` small segments that one cleaning merges into one group."""
    log = open_log(tmp_path, clock, segment_bytes=8192)
    latest = {}
    for round_ in range(segments):
        for batch in range(3):
            entries = [
                (b"k%d" % ((round_ + batch + i) % 5), b"%d-%d-%d" % (round_, batch, i))
                for i in range(3)
            ]
            for (key, value), offset in zip(entries, produce(log, entries), strict=True):
                latest[key] = (offset, value)
        log.roll()
    return log, latest


def to_clean(log: Log, first_dirty: int = 0) -> LogToClean:
    return LogToClean((log.topic, log.partition), log, first_dirty, log.active_segment.base_offset)


@pytest.mark.parametrize("abort_at", [1, 2, 4, 9, 13, 20])
def test_an_aborted_cleaning_leaves_a_consistent_log_and_the_next_one_completes(
    tmp_path, clock, abort_at
):
    log = open_log(tmp_path, clock, segment_bytes=400)
    latest = write_history(log, keys=6, updates=60, per_batch=3)
    log.roll()
    calls = 0

    def check_done(topic_partition):
        nonlocal calls
        calls += 1
        if calls == abort_at:
            raise LogCleaningAbortedError("aborted by the test")

    cleaner = Cleaner(OffsetMap(24 * 100), check_done=check_done)
    with pytest.raises(LogCleaningAbortedError):
        cleaner.clean(to_clean(log))
    assert cleaned_files(log) == []
    assert_consistent(log, latest)

    end, _ = Cleaner(OffsetMap(24 * 100)).clean(to_clean(log))
    assert end == log.log_end_offset
    assert_compacted(log, latest)


class SimulatedCrash(BaseException):
    """The process dies: nothing after this point runs, no clean-up."""


def renames_in_one_cleaning(tmp_path, clock, monkeypatch) -> int:
    log, _ = history_in_small_segments(tmp_path / "count", clock)
    renames = 0
    real_replace = os.replace

    def counting(src, dst):
        nonlocal renames
        renames += 1
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", counting)
    clean_log(log, OffsetMap(24 * 100), now_ms=T0)
    monkeypatch.setattr(os, "replace", real_replace)
    return renames


# 3 .cleaned → .swap, then 3 x 3 old files → .deleted, then 3 .swap → "": 15 renames.
@pytest.mark.parametrize("crash_at", range(16))
def test_a_crash_at_any_point_of_the_swap_recovers_to_a_consistent_log(
    tmp_path, clock, monkeypatch, crash_at
):
    log, latest = history_in_small_segments(tmp_path, clock)
    directory = log.directory
    real_replace = os.replace
    renames = 0

    def crashing(src, dst):
        nonlocal renames
        if renames == crash_at:
            raise SimulatedCrash
        renames += 1
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", crashing)
    crashed = True
    try:
        clean_log(log, OffsetMap(24 * 100), now_ms=T0)
        crashed = False
    except SimulatedCrash:
        pass
    finally:
        monkeypatch.setattr(os, "replace", real_replace)
    assert crashed == (crash_at < 15)
    if crash_at == 0:
        assert len([p for p in directory.iterdir() if p.name.endswith(".cleaned")]) == 3

    reopened = Log.open(
        directory, compacted(segment_bytes=8192), had_clean_shutdown=False, clock=clock
    )
    assert not [p for p in directory.iterdir() if p.suffix in (".cleaned", ".swap", ".deleted")]
    assert reopened.log_end_offset == log.log_end_offset
    assert_consistent(reopened, latest)

    end, _ = clean_log(reopened, OffsetMap(24 * 100), now_ms=T0)
    assert end == reopened.log_end_offset
    assert_compacted(reopened, latest)


def test_the_crash_test_covers_every_rename(tmp_path, clock, monkeypatch):
    assert renames_in_one_cleaning(tmp_path, clock, monkeypatch) == 15
