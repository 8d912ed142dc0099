"""The cleaner's offset map: a fixed 24-bytes-a-slot hash table of key hash → offset."""

from __future__ import annotations

import hashlib
import math
import tracemalloc

import pytest

from tidelog.storage.cleaner import OffsetMap, OffsetMapFullError
from tidelog.storage.cleaner.offset_map import BYTES_PER_ENTRY, _is_prime


def keys(count: int, prefix: str = "key") -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(count)]


def test_sized_from_the_memory_budget_with_prime_slots():
    offset_map = OffsetMap(24 * 1000, load_factor=0.9)
    assert offset_map.slots == 997  # the largest prime <= 1000
    assert offset_map.memory == 997 * BYTES_PER_ENTRY
    assert offset_map.capacity == int(997 * 0.9)
    assert offset_map.size == 0
    assert offset_map.latest_offset == -1
    assert _is_prime(OffsetMap(128 * 1024 * 1024 // 64).slots)


def test_every_key_put_is_found_no_false_misses():
    offset_map = OffsetMap(24 * 20_000, load_factor=0.9)
    wanted = keys(offset_map.capacity)
    for offset, key in enumerate(wanted):
        offset_map.put(key, offset * 3)
    assert offset_map.size == len(wanted)
    assert all(offset_map.get(key) == offset * 3 for offset, key in enumerate(wanted))
    # Keys never put are misses (at a load of 0.9 the probing must still end).
    assert all(offset_map.get(key) == -1 for key in keys(5_000, "absent"))
    assert offset_map.utilization == pytest.approx(0.9, abs=0.001)


def test_put_overwrites_the_offset_of_a_known_key():
    offset_map = OffsetMap(24 * 100)
    offset_map.put(b"k", 5)
    offset_map.put(b"k", 42)
    offset_map.put(b"other", 7)
    assert offset_map.get(b"k") == 42
    assert offset_map.size == 2
    assert offset_map.latest_offset == 7
    offset_map.update_latest_offset(99)
    assert offset_map.latest_offset == 99


def test_empty_key_and_offset_zero_are_ordinary():
    offset_map = OffsetMap(24 * 100)
    offset_map.put(b"", 0)
    assert offset_map.get(b"") == 0
    assert b"" in offset_map
    assert b"x" not in offset_map


def test_full_map_refuses_new_keys_but_accepts_overwrites():
    offset_map = OffsetMap(24 * 101, load_factor=0.5)  # 101 slots, 50 keys
    assert offset_map.capacity == 50
    for offset, key in enumerate(keys(50)):
        offset_map.put(key, offset)
    assert offset_map.is_full
    with pytest.raises(OffsetMapFullError):
        offset_map.put(b"one-too-many", 1000)
    assert offset_map.size == 50
    assert offset_map.get(b"one-too-many") == -1
    offset_map.put(b"key-3", 1000)  # an existing key still moves
    assert offset_map.get(b"key-3") == 1000


def test_load_factor_one_still_leaves_an_empty_slot():
    offset_map = OffsetMap(24 * 11, load_factor=1.0)
    assert offset_map.capacity == offset_map.slots - 1
    for offset, key in enumerate(keys(offset_map.capacity)):
        offset_map.put(key, offset)
    assert offset_map.get(b"missing") == -1  # terminates on the one empty slot


def test_clear_empties_every_slot():
    offset_map = OffsetMap(24 * 5000)
    for offset, key in enumerate(keys(4000)):
        offset_map.put(key, offset)
    offset_map.clear()
    assert offset_map.size == 0
    assert offset_map.latest_offset == -1
    assert all(offset_map.get(key) == -1 for key in keys(4000))
    assert not any(offset_map._buffer)
    offset_map.put(b"key-1", 8)
    assert offset_map.get(b"key-1") == 8


def test_colliding_start_slots_are_resolved_by_probing():
    offset_map = OffsetMap(24 * 97, load_factor=0.9)
    slots = offset_map.slots

    def start_slot(key: bytes) -> int:
        return int.from_bytes(hashlib.md5(key).digest(), "little") % slots

    same = [key for key in keys(5000) if start_slot(key) == 0][:5]
    assert len(same) == 5
    for offset, key in enumerate(same):
        offset_map.put(key, offset)
    assert [offset_map.get(key) for key in same] == list(range(5))
    # Double hashing: each key after the first leaves slot 0 with a step of its own.
    assert offset_map.extra_probes >= 4


def test_at_most_32_bytes_per_key_at_a_load_of_075():
    memory = 24 * 40_000
    offset_map = OffsetMap(memory, load_factor=0.9)
    wanted = keys(math.ceil(offset_map.slots * 0.75))
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    for offset, key in enumerate(wanted):
        offset_map.put(key, offset)
    grown = tracemalloc.get_traced_memory()[0] - before
    tracemalloc.stop()
    assert offset_map.utilization >= 0.75
    assert offset_map.bytes_per_key <= 32.0
    assert offset_map.memory <= memory
    # Nothing is kept per key outside the preallocated buffer.
    assert grown < 4096


@pytest.mark.parametrize("memory", [0, 24, 47])
def test_too_little_memory_is_an_error(memory):
    with pytest.raises(ValueError):
        OffsetMap(memory)


def test_only_md5_is_supported():
    with pytest.raises(ValueError):
        OffsetMap(24 * 100, hash_algorithm="SHA-1")
