"""The cleaner's two record passes, compiled (``tidelog_native``) against pure Python
(``tidelog.storage.cleaner.record_passes``): the same offset map bytes, the same kept
records and counts, the same errors for damaged sections, and a whole cleaning of a
varied log written byte for byte the same."""

from __future__ import annotations

import filecmp
import os
import random
import shutil

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tidelog.records import CompressionType, CorruptRecordError, build_batch
from tidelog.records.batch import read_batch_header
from tidelog.storage.cleaner import OffsetMap, OffsetMapFullError, clean_log, record_passes
from tidelog.storage.cleaner.batch_filter import records_section
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log

T0 = 1_700_000_000_000
PYTHON = record_passes.PYTHON


@pytest.fixture(scope="module")
def native() -> record_passes.RecordPasses:
    if record_passes.NATIVE is None:
        pytest.fail("tidelog_native is not installed: `make setup` builds and installs it")
    return record_passes.NATIVE


def section_of(batch: bytes) -> tuple[bytes, int, int]:
    """A built batch's records section, record count and base offset."""
    header = read_batch_header(batch)
    return records_section(batch, header), header.records_count, header.base_offset


entries = st.lists(
    st.tuples(
        st.one_of(st.none(), st.binary(max_size=40)),
        st.one_of(st.none(), st.binary(max_size=300)),
        st.lists(st.tuples(st.text(max_size=8), st.binary(max_size=8)), max_size=2),
        st.integers(min_value=T0 - 10**6, max_value=T0 + 10**9),
    ),
    min_size=1,
    max_size=60,
)


@settings(max_examples=300, deadline=None)
@given(
    batches=st.lists(entries, min_size=1, max_size=6),
    keys_before=st.lists(st.binary(max_size=40), max_size=30),
    memory_slots=st.integers(min_value=3, max_value=400),
    bounds=st.tuples(st.integers(0, 200), st.integers(0, 400)),
    retain_deletes=st.booleans(),
)
def test_both_passes_agree_on_any_batches(
    native, batches, keys_before, memory_slots, bounds, retain_deletes
):
    """Map several batches into maps of any size (full ones included), then decide what
    each batch keeps: every outcome, and the maps' bytes, are the same."""
    start, upper = min(bounds), max(bounds)
    maps = {}
    for passes in (PYTHON, native):
        offset_map = OffsetMap(24 * memory_slots)
        for offset, key in enumerate(keys_before):
            if offset_map.size < offset_map.capacity:
                offset_map.put(key, offset)
        outcomes = []
        base = len(keys_before)
        for batch_entries in batches:
            section, count, _ = section_of(build_batch(batch_entries, timestamp=T0))
            try:
                outcomes.append(passes.map_keys(offset_map, section, count, base, start, upper))
            except OffsetMapFullError:
                outcomes.append("full")
            offset_map.update_latest_offset(min(base + count - 1, upper - 1))
            base += count
        base = len(keys_before)
        for batch_entries in batches:
            section, count, _ = section_of(build_batch(batch_entries, timestamp=T0))
            outcomes.append(passes.retain(offset_map, section, count, base, retain_deletes))
            base += count
        maps[passes.name] = (bytes(offset_map.buffer), offset_map.size, outcomes)
    assert maps[PYTHON.name] == maps[native.name]


@settings(max_examples=400, deadline=None)
@given(
    batch_entries=entries,
    cut=st.integers(min_value=0),
    flips=st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), max_size=3),
    count_change=st.sampled_from([0, 0, -1, 1]),
)
def test_both_passes_refuse_the_same_damaged_sections(
    native, batch_entries, cut, flips, count_change
):
    section, count, base = section_of(build_batch(batch_entries, timestamp=T0))
    damaged = bytearray(section[: len(section) - cut % (len(section) + 1)])
    for position, value in flips:
        if damaged:
            damaged[position % len(damaged)] = value
    damaged, count = bytes(damaged), max(count + count_change, 0)

    def outcome(passes, which):
        offset_map = OffsetMap(24 * 101)
        try:
            if which == "map":
                return passes.map_keys(offset_map, damaged, count, base, 0, 10**6)
            return passes.retain(offset_map, damaged, count, base, False)
        except CorruptRecordError:
            return "corrupt"
        except OffsetMapFullError:
            return "full"

    for which in ("map", "retain"):
        assert outcome(PYTHON, which) == outcome(native, which)


def write_varied_log(log: Log, rng: random.Random) -> None:
    """Updates of 300 keys in batches of every codec, with headers, tombstones, records
    of old data without a key (appended as a follower writes them), and batches
    whose records are all superseded, some or none."""
    codecs = list(CompressionType)
    for number in range(120):
        batch = []
        for _ in range(rng.randrange(1, 25)):
            key = b"key-%03d" % rng.randrange(300)
            value = None if rng.random() < 0.1 else rng.randbytes(rng.randrange(0, 200))
            headers = [("h", rng.randbytes(4))] if rng.random() < 0.3 else []
            batch.append((key, value, headers))
        built = build_batch(batch, timestamp=T0 + number, compression=codecs[number % len(codecs)])
        if number % 17 == 5:
            keyless = build_batch(
                [(None, b"old"), (b"key-000", b"x")], base_offset=log.log_end_offset, timestamp=T0
            )
            log.append_as_follower(keyless)
        log.append_as_leader(built)
    log.roll()


def test_a_whole_cleaning_writes_the_same_bytes_with_either_pass(native, tmp_path):
    """A varied log cleaned twice (the second cleaning re-cleans the clean part and drops
    old tombstones), once per implementation, in copies of the same directory: every
    file the same."""
    config = LogConfig(cleanup_policy=("compact",), segment_bytes=16 * 1024, delete_retention_ms=0)
    source = tmp_path / "source" / "topic-0"
    log = Log.open(source, config)
    write_varied_log(log, random.Random(11))
    for age, segment in enumerate(reversed(log.segments)):  # a minute apart, oldest first
        os.utime(segment.log_path, (T0 / 1000 - 60 * age, T0 / 1000 - 60 * age))
    log.close()
    stats = {}
    for passes in (PYTHON, native):
        copy = tmp_path / passes.name.split()[0] / "topic-0"
        shutil.copytree(source, copy)
        cleaned = Log.open(copy, config)
        first = record_passes_clean(cleaned, passes, first_dirty_offset=None)
        second = record_passes_clean(cleaned, passes, first_dirty_offset=first[0] // 2)
        cleaned.close()
        stats[passes.name] = [
            (end, s.messages_written, s.tombstones_removed) for end, s in (first, second)
        ]
    python_dir = tmp_path / PYTHON.name.split()[0] / "topic-0"
    native_dir = tmp_path / native.name.split()[0] / "topic-0"
    names = sorted(path.name for path in python_dir.iterdir())
    assert names == sorted(path.name for path in native_dir.iterdir())
    assert len([n for n in names if n.endswith(".log")]) > 1
    _, mismatch, errors = filecmp.cmpfiles(python_dir, native_dir, names, shallow=False)
    assert mismatch == [] and errors == []
    assert stats[PYTHON.name] == stats[native.name]
    assert stats[PYTHON.name][1][2] > 0  # the second cleaning removed tombstones


def record_passes_clean(log: Log, passes, *, first_dirty_offset):
    return clean_log(
        log,
        OffsetMap(24 * 1000),
        first_dirty_offset=first_dirty_offset,
        now_ms=T0 + 10**9,
        passes=passes,
    )
