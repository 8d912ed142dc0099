import struct

import pytest

from tidelog.storage.errors import CorruptIndexError, InvalidOffsetError
from tidelog.storage.index import WARM_SECTION_BYTES
from tidelog.storage.offset_index import OffsetIndex, OffsetPosition
from tidelog.storage.time_index import TimeIndex, TimestampOffset


def test_offset_index_entries_are_kafka_layout(tmp_path):
    index = OffsetIndex(tmp_path / "00000000000000000100.index", 100, 1024)
    index.append(105, 0)
    index.append(110, 4096)
    index.close()
    data = (tmp_path / "00000000000000000100.index").read_bytes()
    assert data == struct.pack(">iiii", 5, 0, 10, 4096)  # trimmed, relative offsets


def test_preallocated_then_trimmed(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 1000)
    assert path.stat().st_size == 1000 - 1000 % 8
    assert index.max_entries == 125
    index.append(3, 77)
    index.trim_to_valid_size()
    assert path.stat().st_size == 8
    index.resize(1000)
    assert index.entries == 1 and index.max_entries == 125


def test_lookup_across_warm_and_cold_sections(tmp_path):
    entries = 3 * WARM_SECTION_BYTES // 8  # well beyond the warm section
    index = OffsetIndex(tmp_path / "00000000000000001000.index", 1000, entries * 8)
    for i in range(entries):
        index.append(1000 + 10 * i + 5, 100 * i)
    assert index.is_full
    assert index.lookup(999) == OffsetPosition(1000, 0)  # below every entry
    for i in (0, 1, entries // 3, entries - 1025, entries - 1024, entries - 2, entries - 1):
        offset = 1000 + 10 * i + 5
        assert index.lookup(offset) == OffsetPosition(offset, 100 * i)
        assert index.lookup(offset + 3) == OffsetPosition(offset, 100 * i)
        assert index.lookup(offset - 1) == (
            OffsetPosition(offset - 10, 100 * (i - 1)) if i else OffsetPosition(1000, 0)
        )
    assert index.lookup(10**9).position == 100 * (entries - 1)
    assert index.fetch_upper_bound(1006) == OffsetPosition(1015, 100)
    assert index.fetch_upper_bound(10**9) is None


def test_append_must_increase_and_full_index_refuses(tmp_path):
    index = OffsetIndex(tmp_path / "00000000000000000000.index", 0, 16)
    index.append(1, 0)
    with pytest.raises(InvalidOffsetError):
        index.append(1, 10)
    index.append(2, 10)
    with pytest.raises(CorruptIndexError, match="full"):
        index.append(3, 20)


def test_truncate_and_reopen(tmp_path):
    path = tmp_path / "00000000000000000000.index"
    index = OffsetIndex(path, 0, 800)
    for i in range(10):
        index.append(i * 10, i * 100)
    index.truncate_to(45)
    assert index.entries == 5 and index.last_offset == 40
    index.truncate_to(40)
    assert index.entries == 4
    index.close()
    reopened = OffsetIndex(path, 0, 800)
    assert reopened.entries == 4 and reopened.lookup(35) == OffsetPosition(30, 300)


def test_sanity_check_detects_garbage(tmp_path):
    path = tmp_path / "00000000000000000500.index"
    path.write_bytes(struct.pack(">iiii", 10, 100, 5, 50))  # decreasing
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 500, 1024).sanity_check()
    path.write_bytes(struct.pack(">ii", -3, 0))  # below the base offset
    with pytest.raises(CorruptIndexError):
        OffsetIndex(path, 500, 1024).sanity_check()
    path.write_bytes(struct.pack(">ii", 3, 9999))
    with pytest.raises(CorruptIndexError, match="past the log"):
        OffsetIndex(path, 500, 1024).sanity_check(log_size=100)
    path.write_bytes(b"\x00" * 7)
    with pytest.raises(CorruptIndexError, match="multiple"):
        OffsetIndex(path, 500, 1024).sanity_check()


def test_time_index_only_grows_and_keeps_a_slot_for_the_roll(tmp_path):
    path = tmp_path / "00000000000000000010.timeindex"
    index = TimeIndex(path, 10, 36)  # three slots, the last one reserved
    index.maybe_append(100, 12)
    index.maybe_append(90, 13)  # out-of-order timestamp: no entry
    index.maybe_append(100, 14)  # not above the last: no entry
    index.maybe_append(150, 15)
    assert index.entries == 2 and index.is_full
    with pytest.raises(CorruptIndexError):
        index.maybe_append(200, 16)
    index.maybe_append(200, 16, skip_full_check=True)
    assert index.entries == 3
    assert index.lookup(99) == TimestampOffset(-1, 10)
    assert index.lookup(100) == TimestampOffset(100, 12)
    assert index.lookup(149) == TimestampOffset(100, 12)
    assert index.lookup(10**12) == TimestampOffset(200, 16)
    index.close()
    assert path.read_bytes() == struct.pack(">qiqiqi", 100, 2, 150, 5, 200, 6)


def test_time_index_truncate(tmp_path):
    index = TimeIndex(tmp_path / "00000000000000000000.timeindex", 0, 1200)
    for i in range(50):
        index.maybe_append(1000 + i, i * 2)
    index.truncate_to(21)
    assert index.entries == 11 and index.last_entry == TimestampOffset(1010, 20)
    index.truncate_to(0)
    assert index.entries == 0 and index.last_entry == TimestampOffset(-1, 0)
