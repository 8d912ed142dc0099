"""The leader epoch cache: Kafka's assignment rules, end offsets, truncations, and its
``leader-epoch-checkpoint`` file."""

from __future__ import annotations

import pytest

from tidelog.storage.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    UNDEFINED_EPOCH,
    EpochEntry,
    LeaderEpochCache,
    LeaderEpochCheckpointError,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)

UNDEFINED = (UNDEFINED_EPOCH, -1)


def cache_with(tmp_path, *entries: tuple[int, int]) -> LeaderEpochCache:
    cache = LeaderEpochCache(tmp_path)
    for epoch, start in entries:
        cache.assign(epoch, start)
    return cache


def file_text(tmp_path) -> str:
    return (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text()


# -- assign ----------------------------------------------------------------------------------


def test_a_new_higher_epoch_is_appended_and_checkpointed(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    assert cache.latest_epoch == UNDEFINED_EPOCH and cache.entries == ()
    assert not (tmp_path / LEADER_EPOCH_CHECKPOINT).exists()  # nothing written yet
    assert cache.assign(0, 0)
    assert cache.assign(2, 10)
    assert cache.entries == (EpochEntry(0, 0), EpochEntry(2, 10))
    assert cache.latest_epoch == 2
    assert file_text(tmp_path) == "0\n2\n0 0\n2 10\n"
    assert not (tmp_path / (LEADER_EPOCH_CHECKPOINT + ".tmp")).exists()


def test_the_latest_epoch_at_a_later_offset_changes_nothing(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 10))
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("sentinel")  # a rewrite would replace it
    assert not cache.assign(2, 10)
    assert not cache.assign(2, 55)
    assert cache.entries == ((0, 0), (2, 10))
    assert (tmp_path / LEADER_EPOCH_CHECKPOINT).read_text() == "sentinel"


def test_a_lower_start_for_the_latest_epoch_corrects_it(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 10))
    assert cache.assign(2, 7)
    assert cache.entries == ((0, 0), (2, 7))
    assert file_text(tmp_path) == "0\n2\n0 0\n2 7\n"


def test_entries_that_would_not_ascend_are_removed(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 10), (4, 20))
    # a higher epoch starting below existing entries removes them
    assert cache.assign(5, 10)
    assert cache.entries == ((0, 0), (5, 10))
    # a lower epoch than the latest replaces the ones at or above it, as in Kafka
    cache = cache_with(tmp_path, (0, 0), (2, 10), (4, 20))
    assert cache.assign(3, 30)
    assert cache.entries == ((0, 0), (2, 10), (3, 30))
    assert file_text(tmp_path) == "0\n3\n0 0\n2 10\n3 30\n"


def test_negative_entries_are_refused(tmp_path):
    cache = LeaderEpochCache(tmp_path)
    for epoch, start in [(-1, 0), (0, -1)]:
        with pytest.raises(ValueError, match="invalid leader epoch entry"):
            cache.assign(epoch, start)
    assert cache.entries == ()


# -- end_offset_for --------------------------------------------------------------------------


def test_end_offset_for_every_case(tmp_path):
    cache = cache_with(tmp_path, (1, 5), (3, 10), (6, 18))
    log_end = 25
    assert cache.end_offset_for(6, log_end) == (6, 25)  # the latest epoch: the log end
    assert cache.end_offset_for(3, log_end) == (3, 18)  # known: the next epoch's start
    assert cache.end_offset_for(1, log_end) == (1, 10)
    assert cache.end_offset_for(4, log_end) == (3, 18)  # unknown: the largest epoch below
    assert cache.end_offset_for(5, log_end) == (3, 18)
    assert cache.end_offset_for(2, log_end) == (1, 10)
    assert cache.end_offset_for(0, log_end) == (0, 5)  # below all: itself, first start
    assert cache.end_offset_for(7, log_end) == UNDEFINED  # above all
    assert cache.end_offset_for(UNDEFINED_EPOCH, log_end) == UNDEFINED
    assert LeaderEpochCache(tmp_path / "empty").end_offset_for(0, log_end) == UNDEFINED


def test_seed_004_walk_through_old_leader_truncates_by_epoch_not_by_high_watermark(tmp_path):
    """Seed 004, 副本同步: the leader has messages up to offset 6 (LEO 7), follower 1 up
    to 5, follower 2 up to 3, so the HW is 4. The leader dies; follower 1 leads epoch 1
    from its LEO 6 and writes two messages. Asked for epoch 0, it answers 6: the old
    leader cuts only its divergent offset 6 (by the HW it would cut back to 4 and fetch
    committed data again), follower 2 (LEO 4) keeps everything and fetches from 4."""
    new_leader = cache_with(tmp_path, (0, 0), (1, 6))
    epoch, end_offset = new_leader.end_offset_for(0, log_end_offset=8)
    assert (epoch, end_offset) == (0, 6)
    old_leader_leo, follower_2_leo, high_watermark = 7, 4, 4
    assert min(end_offset, old_leader_leo) == 6 > high_watermark
    assert min(end_offset, follower_2_leo) == 4


def test_seed_003_epoch_entries_are_leader_versions_with_start_offsets(tmp_path):
    """Seed 003, 四.5: an entry is (epoch, offset of the first message of that epoch);
    leaders that wrote nothing leave no entry, and asking for them gives the leader
    before them, ending where the next writing leader began."""
    cache = cache_with(tmp_path, (0, 0), (2, 120), (5, 300))
    assert cache.end_offset_for(1, 400) == (0, 120)
    assert cache.end_offset_for(3, 400) == (2, 300)
    assert cache.end_offset_for(4, 400) == (2, 300)
    assert cache.end_offset_for(5, 400) == (5, 400)


# -- truncation ------------------------------------------------------------------------------


def test_truncate_from_end(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 10), (4, 20))
    assert not cache.truncate_from_end(21)
    assert not cache.truncate_from_end(-1)
    assert cache.entries == ((0, 0), (2, 10), (4, 20))
    assert cache.truncate_from_end(20)  # an epoch starting at the new end goes
    assert cache.entries == ((0, 0), (2, 10))
    assert cache.truncate_from_end(5)
    assert cache.entries == ((0, 0),)
    assert file_text(tmp_path) == "0\n1\n0 0\n"
    assert cache.truncate_from_end(0)
    assert cache.entries == ()
    assert file_text(tmp_path) == "0\n0\n"


def test_truncate_from_start_moves_the_first_remaining_entry_up(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 10), (4, 20))
    assert not cache.truncate_from_start(0)
    assert cache.truncate_from_start(5)
    assert cache.entries == ((0, 5), (2, 10), (4, 20))
    assert cache.truncate_from_start(10)
    assert cache.entries == ((2, 10), (4, 20))
    assert not cache.truncate_from_start(10)
    assert cache.truncate_from_start(35)
    assert cache.entries == ((4, 35),)
    assert file_text(tmp_path) == "0\n1\n4 35\n"
    assert cache.end_offset_for(2, 40) == (2, 35)  # below the first entry now


def test_clear(tmp_path):
    cache = cache_with(tmp_path, (0, 0), (2, 10))
    cache.clear()
    assert cache.entries == () and cache.latest_epoch == UNDEFINED_EPOCH
    assert file_text(tmp_path) == "0\n0\n"


# -- the checkpoint file ---------------------------------------------------------------------


def test_checkpoint_round_trip(tmp_path):
    cache_with(tmp_path, (0, 0), (3, 1200), (7, 2**40))
    assert LeaderEpochCache(tmp_path).entries == ((0, 0), (3, 1200), (7, 2**40))
    path = tmp_path / "other"
    write_leader_epoch_checkpoint(path, (EpochEntry(1, 2),))
    assert path.read_text() == "0\n1\n1 2\n"
    assert read_leader_epoch_checkpoint(path) == [(1, 2)]


def test_absent_or_empty_file_is_an_empty_cache(tmp_path):
    assert LeaderEpochCache(tmp_path).entries == ()
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("")  # Kafka creates it empty first
    assert LeaderEpochCache(tmp_path).entries == ()


def test_non_ascending_file_loads_through_the_assignment_rules(tmp_path):
    (tmp_path / LEADER_EPOCH_CHECKPOINT).write_text("0\n3\n0 0\n4 20\n2 10\n")
    assert LeaderEpochCache(tmp_path).entries == ((0, 0), (2, 10))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("1\n0\n", "version"),
        ("0\n", "version"),
        ("0\nx\n", "entry count"),
        ("0\n2\n0 0\n", "expected 2 entries, found 1"),
        ("0\n1\n0 0\n1 5\n", "expected 1 entries, found 2"),
        ("0\n1\n0 0 0\n", "line 3 does not have 2 fields"),
        ("0\n1\n5\n", "line 3 does not have 2 fields"),
        ("0\n1\n0 x\n", "line 3 is not 'epoch startOffset'"),
        ("0\n2\n0 0\n1.5 7\n", "line 4 is not 'epoch startOffset'"),
        ("0\n1\n-1 0\n", "line 3 is negative"),
    ],
)
def test_malformed_file_fails_with_the_file_and_line(tmp_path, text, message):
    path = tmp_path / LEADER_EPOCH_CHECKPOINT
    path.write_text(text)
    with pytest.raises(LeaderEpochCheckpointError, match=message) as raised:
        LeaderEpochCache(tmp_path)
    assert str(path) in str(raised.value)
    assert raised.value.error_code == 56  # KAFKA_STORAGE_ERROR: the directory goes offline
