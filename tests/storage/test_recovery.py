"""Loading after crashes: torn tails, lost or corrupt indexes, and every crash point of
the cleaner's ``.cleaned`` → ``.swap`` → ``.deleted`` replacement (seed 001)."""

import logging
import os
import random

import pytest

from storage.helpers import batch
from tidelog.records import build_batch, iter_batch_headers, iter_decoded_batches
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import StorageError
from tidelog.storage.log import Log

CONFIG = LogConfig(segment_bytes=1200, index_interval_bytes=150)


def contents(log: Log) -> list[tuple[int, bytes]]:
    records, offset = [], log.log_start_offset
    while (found := log.read(offset, 1 << 20)) is not None:
        for decoded in iter_decoded_batches(found.records.to_bytes()):
            records.extend((r.offset, r.value) for r in decoded.records if r.offset >= offset)
        offset = records[-1][0] + 1
    return records


def filled_log(directory, batches: int = 30) -> Log:
    log = Log.open(directory, CONFIG)
    for i in range(batches):
        log.append_as_leader(batch(3, start=3 * i, size=30))
    return log


def index_snapshot(log: Log):
    return [
        (
            s.base_offset,
            [s.offset_index.entry(i) for i in range(s.offset_index.entries)],
            [s.time_index.entry(i) for i in range(s.time_index.entries)],
        )
        for s in log.segments
    ]


@pytest.mark.parametrize("seed", range(8))
def test_torn_write_at_random_position_is_truncated(tmp_path, caplog, seed):
    directory = tmp_path / "t-0"
    log = filled_log(directory)
    expected = contents(log)
    active = log.active_segment
    headers = list(active.log.batch_headers())
    log.close()
    size = active.log_path.stat().st_size
    cut = random.Random(seed).randrange(1, size)
    with open(active.log_path, "r+b") as handle:
        handle.truncate(cut)
    with caplog.at_level(logging.WARNING):
        recovered = Log.open(directory, CONFIG, had_clean_shutdown=False)
    whole = [h for h in headers if h.position + h.size <= cut]
    end = whole[-1].next_offset if whole else active.base_offset
    assert recovered.log_end_offset == end
    assert contents(recovered) == [r for r in expected if r[0] < end]
    if cut != (whole[-1].position + whole[-1].size if whole else 0):
        assert any(active.log_path.name in m and "truncating" in m for m in caplog.messages)
    # the log keeps working where it was cut
    assert recovered.append_as_leader(batch(1)).first_offset == end


def test_corrupt_byte_truncates_and_drops_later_segments(tmp_path, caplog):
    directory = tmp_path / "t-0"
    log = filled_log(directory)
    expected = contents(log)
    victim = log.segments[1]
    headers = list(victim.log.batch_headers())
    log.close()
    with open(victim.log_path, "r+b") as handle:
        handle.seek(headers[2].position + 70)  # inside the third batch's records
        byte = handle.read(1)
        handle.seek(-1, os.SEEK_CUR)
        handle.write(bytes([byte[0] ^ 0x55]))
    with caplog.at_level(logging.WARNING):
        recovered = Log.open(directory, CONFIG, recovery_point=0, had_clean_shutdown=False)
    assert recovered.log_end_offset == headers[2].base_offset
    assert contents(recovered) == [r for r in expected if r[0] < headers[2].base_offset]
    assert len(recovered.segments) == 2
    assert any("CRC mismatch" in m and victim.log_path.name in m for m in caplog.messages)


def test_clean_shutdown_skips_recovery_below_recovery_point(tmp_path):
    directory = tmp_path / "t-0"
    log = filled_log(directory)
    log.flush()
    point = log.recovery_point
    assert point == log.log_end_offset
    log.close()
    reopened = Log.open(directory, CONFIG, recovery_point=point, had_clean_shutdown=False)
    assert reopened.recovery_point == point and reopened.log_end_offset == point


@pytest.mark.parametrize("suffixes", [(".index",), (".timeindex",), (".index", ".timeindex")])
def test_missing_indexes_are_rebuilt(tmp_path, caplog, suffixes):
    directory = tmp_path / "t-0"
    log = filled_log(directory)
    before = index_snapshot(log)
    log.close()
    for segment in log.segments:
        for suffix in suffixes:
            segment.log_path.with_suffix(suffix).unlink()
    with caplog.at_level(logging.WARNING):
        reopened = Log.open(directory, CONFIG)
    assert index_snapshot(reopened)[:-1] == before[:-1]
    for segment in reopened.segments[:-1]:  # rebuilt indexes are trimmed like rolled ones
        assert segment.index_path.stat().st_size == segment.offset_index.entries * 8
        assert segment.time_index_path.stat().st_size == segment.time_index.entries * 12
    assert not reopened.active_segment.offset_index.is_full  # room to append again
    assert any("rebuilding" in m for m in caplog.messages)
    assert reopened.read(40, 10).first_offset == 40


def test_corrupt_index_is_rebuilt(tmp_path, caplog):
    directory = tmp_path / "t-0"
    log = filled_log(directory)
    before = index_snapshot(log)
    log.close()
    target = log.segments[0].index_path
    target.write_bytes(os.urandom(target.stat().st_size - 8) + b"\x7f" * 8)
    with caplog.at_level(logging.WARNING):
        reopened = Log.open(directory, CONFIG)
    assert index_snapshot(reopened)[0] == before[0]
    assert any("corrupt index" in m and target.name in m for m in caplog.messages)


# -- the cleaner's replacement, crash by crash --------------------------------------------


def prepared_replacement(directory):
    """A log of three old segments and a cleaned replacement for the first two that
    keeps only the first record of every batch, left as ``.cleaned`` files (the state
    before step 1). Returns the log, the old segments, the cleaned one, the contents
    after a completed replacement and the original contents."""
    log = filled_log(directory, batches=24)
    old = list(log.segments[:2])
    end = old[1].read_next_offset()
    cleaned = log.new_cleaned_segment(old[0].base_offset)
    firsts = set()
    for segment in old:
        for _, data in segment.log.batches():
            first = next(iter_decoded_batches(data)).records[0]
            firsts.add(first.offset)
            rebuilt = build_batch(
                [(first.key, first.value, first.headers, first.timestamp)],
                base_offset=first.offset,
            )
            cleaned.append([rebuilt], list(iter_batch_headers(rebuilt)))
    cleaned.on_become_inactive()
    cleaned.flush()
    original = contents(log)
    expected = [r for r in original if r[0] >= end or r[0] in firsts]
    return log, old, cleaned, expected, original


def crash_and_reload(directory, log):
    for segment in log.segments:
        segment.close()
    return Log.open(directory, CONFIG, had_clean_shutdown=False)


def test_crash_before_step_1_deletes_cleaned_files(tmp_path):
    directory = tmp_path / "t-0"
    log, old, cleaned, _, original = prepared_replacement(directory)
    cleaned.close()
    reloaded = crash_and_reload(directory, log)
    assert contents(reloaded) == original
    assert not list(directory.glob("*.cleaned"))


@pytest.mark.parametrize("renamed", [1, 2])
def test_crash_during_step_1_aborts(tmp_path, renamed):
    """Only some files of the new segment became ``.swap``: the swap is abandoned."""
    directory = tmp_path / "t-0"
    log, old, cleaned, _, original = prepared_replacement(directory)
    for item in (cleaned.log, cleaned.offset_index)[:renamed]:
        item.rename(item.path.with_name(item.path.name.replace(".cleaned", ".swap")))
    cleaned.close()
    reloaded = crash_and_reload(directory, log)
    assert contents(reloaded) == original
    assert not list(directory.glob("*.cleaned")) and not list(directory.glob("*.swap"))


def test_crash_after_step_1_completes_the_swap(tmp_path):
    directory = tmp_path / "t-0"
    log, old, cleaned, expected, _ = prepared_replacement(directory)
    cleaned.change_file_suffixes(".cleaned", ".swap")
    cleaned.close()
    reloaded = crash_and_reload(directory, log)
    assert contents(reloaded) == expected
    assert reloaded.segments[0].base_offset == old[0].base_offset
    assert not list(directory.glob("*.swap")) and not list(directory.glob("*.deleted"))


def test_crash_during_step_2_completes_the_swap(tmp_path):
    directory = tmp_path / "t-0"
    log, old, cleaned, expected, _ = prepared_replacement(directory)
    cleaned.change_file_suffixes(".cleaned", ".swap")
    old[0].change_file_suffixes("", ".deleted")  # the first old segment was renamed
    cleaned.close()
    reloaded = crash_and_reload(directory, log)
    assert contents(reloaded) == expected
    assert not list(directory.glob("*.swap")) and not list(directory.glob("*.deleted"))


def test_crash_after_step_3_removes_leftover_deleted_files(tmp_path):
    directory = tmp_path / "t-0"
    log, old, cleaned, expected, _ = prepared_replacement(directory)
    cleaned.change_file_suffixes(".cleaned", ".swap")
    for segment in old:
        segment.change_file_suffixes("", ".deleted")
    cleaned.change_file_suffixes(".swap", "")
    cleaned.close()
    reloaded = crash_and_reload(directory, log)
    assert contents(reloaded) == expected
    assert not list(directory.glob("*.deleted"))


def test_replace_segments_without_crash(tmp_path):
    directory = tmp_path / "t-0"
    log, old, cleaned, expected, _ = prepared_replacement(directory)
    log.replace_segments([cleaned], old)
    assert contents(log) == expected
    segment_files = [p.suffix for p in directory.iterdir() if p.suffix not in ("", ".snapshot")]
    assert sorted(segment_files) == sorted([".log", ".index", ".timeindex"] * len(log.segments))
    log.close()
    assert contents(Log.open(directory, CONFIG)) == expected


def test_crash_leaves_preallocated_indexes_and_a_torn_tail(tmp_path):
    """The state a real crash leaves: the active segment's indexes still preallocated
    (zero-filled past their entries) and the log cut inside a batch."""
    directory = tmp_path / "t-0"
    log = filled_log(directory)
    expected = contents(log)
    active = log.active_segment
    assert active.index_path.stat().st_size == CONFIG.segment_index_bytes  # not trimmed
    last = list(active.log.batch_headers())[-1]
    os.truncate(active.log_path, last.position + 20)  # no close: the process died
    recovered = Log.open(directory, CONFIG, recovery_point=0, had_clean_shutdown=False)
    assert recovered.log_end_offset == last.base_offset
    assert contents(recovered) == [r for r in expected if r[0] < last.base_offset]
    recovered.append_as_leader(batch(2, start=1000))
    assert contents(recovered)[-2:] == [
        (last.base_offset, b"value-1000"),
        (last.base_offset + 1, b"value-1001"),
    ]


def test_corrupt_base_offset_is_truncated_not_fatal(tmp_path, caplog):
    """baseOffset lies outside the CRC: a flipped bit that throws it far away must be
    caught as corruption (with a log line), not crash the load."""
    directory = tmp_path / "t-0"
    log = filled_log(directory)
    victim = log.active_segment
    third = list(victim.log.batch_headers())[2]
    log.close()
    with open(victim.log_path, "r+b") as handle:
        handle.seek(third.position)
        handle.write((2**40).to_bytes(8, "big"))
    with caplog.at_level(logging.WARNING):
        recovered = Log.open(directory, CONFIG, recovery_point=0, had_clean_shutdown=False)
    assert recovered.log_end_offset == third.base_offset
    assert any("beyond this segment" in m for m in caplog.messages)


def test_log_start_offset_above_recovered_end_starts_empty_there(tmp_path):
    directory = tmp_path / "t-0"
    log = filled_log(directory, batches=5)
    log.close()
    reopened = Log.open(directory, CONFIG, log_start_offset=40)  # checkpoint ahead of data
    assert (reopened.log_start_offset, reopened.log_end_offset) == (40, 40)
    assert reopened.append_as_leader(batch(1)).first_offset == 40


def test_replace_refuses_segments_no_longer_in_the_log(tmp_path):
    directory = tmp_path / "t-0"
    log, old, cleaned, _, original = prepared_replacement(directory)
    end = old[1].base_offset + 3  # keep one 3-record batch: the old segment is active now
    log.truncate_to(end)
    with pytest.raises(StorageError, match="changed under the cleaning"):
        log.replace_segments([cleaned], old)
    assert contents(log) == original[:end]


@pytest.mark.parametrize("crash_at", range(12))
def test_crash_at_every_rename_of_a_replacement_recovers_consistently(
    tmp_path, monkeypatch, crash_at
):
    """Kill the replacement at its k-th file rename (each of the three files of the new
    segment to .swap, of each old one to .deleted, of the new one back): whatever the
    loader then finds, it yields either the old contents or the cleaned ones, whole."""
    directory = tmp_path / "t-0"
    log, old, cleaned, expected, original = prepared_replacement(directory)
    renames = 0
    real_replace = os.replace

    def crashing_replace(source, target):
        nonlocal renames
        if renames == crash_at:
            raise SystemExit("crash")
        renames += 1
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", crashing_replace)
    with pytest.raises(SystemExit):
        log.replace_segments([cleaned], old)
    monkeypatch.setattr(os, "replace", real_replace)
    cleaned.close()
    reloaded = crash_and_reload(directory, log)
    assert contents(reloaded) in (original, expected)
    if crash_at >= 3:  # every file of the new segment was .swap: the swap completes
        assert contents(reloaded) == expected
    leftovers = [p for p in directory.iterdir() if p.suffix in (".swap", ".cleaned", ".deleted")]
    assert not leftovers
