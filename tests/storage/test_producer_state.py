import struct

import pytest

from tidelog.records import build_batch, crc32c
from tidelog.storage.config import LogConfig
from tidelog.storage.errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
)
from tidelog.storage.log import Log


def produced(sequence: int, count: int = 2, *, producer_id: int = 7, epoch: int = 0) -> bytes:
    return build_batch(
        [(f"k{sequence + i}", f"v{sequence + i}") for i in range(count)],
        producer_id=producer_id,
        producer_epoch=epoch,
        base_sequence=sequence,
        timestamp=1000 + sequence,
    )


def test_retry_of_any_of_the_last_five_batches_is_acknowledged_not_appended(tmp_path):
    log = Log.open(tmp_path / "t-0")
    infos = [log.append_as_leader(produced(2 * i)) for i in range(6)]
    size = log.size
    for i in (1, 3, 5):  # within the last five
        retry = log.append_as_leader(produced(2 * i))
        assert retry.duplicate
        assert (retry.first_offset, retry.last_offset) == (
            infos[i].first_offset,
            infos[i].last_offset,
        )
    assert log.size == size and log.log_end_offset == 12
    with pytest.raises(OutOfOrderSequenceError) as caught:
        log.append_as_leader(produced(0))  # the sixth-newest: no longer remembered
    assert caught.value.error_code == 45


def test_sequence_and_epoch_errors(tmp_path):
    log = Log.open(tmp_path / "t-0")
    log.append_as_leader(produced(0, epoch=2))
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(produced(5, epoch=2))  # a gap
    with pytest.raises(InvalidProducerEpochError) as caught:
        log.append_as_leader(produced(2, epoch=1))
    assert caught.value.error_code == 47
    with pytest.raises(OutOfOrderSequenceError, match="new epoch"):
        log.append_as_leader(produced(2, epoch=3))
    assert log.append_as_leader(produced(0, epoch=3)).first_offset == 2  # bump: restart at 0
    assert log.log_end_offset == 4


def test_a_producer_without_state_here_is_taken_at_any_sequence_then_checked(tmp_path):
    """Kafka since KIP-360: a producer id the partition holds no state for (its records
    deleted, or a first write here mid-stream) is appended at its sequence, not refused
    with UNKNOWN_PRODUCER_ID; from then on its sequence is checked and deduplicated."""
    log = Log.open(tmp_path / "t-0")
    assert log.append_as_leader(produced(40, producer_id=99)).first_offset == 0
    assert log.append_as_leader(produced(40, producer_id=99)).duplicate
    assert log.append_as_leader(produced(42, producer_id=99)).first_offset == 2
    with pytest.raises(OutOfOrderSequenceError):
        log.append_as_leader(produced(50, producer_id=99))
    assert log.log_end_offset == 4


def test_sequence_wraps_at_int32_max(tmp_path):
    log = Log.open(tmp_path / "t-0")
    log.append_as_follower(  # state mid-stream, as a follower copies it
        build_batch([("a", "1")], producer_id=7, producer_epoch=0, base_sequence=2**31 - 1)
    )
    assert not log.append_as_leader(produced(0)).duplicate


def test_snapshot_on_roll_is_kafka_format(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(segment_bytes=300))
    for i in range(6):
        log.append_as_leader(produced(2 * i))
    assert len(log.segments) > 1
    snapshot = tmp_path / "t-0" / f"{log.segments[1].base_offset:020d}.snapshot"
    data = snapshot.read_bytes()
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 1) and crc == crc32c(data[6:])
    pid, epoch, last_seq, last_offset, delta, _, _, _ = struct.unpack_from(">qhiqiqiq", data, 10)
    assert (pid, epoch) == (7, 0)
    assert last_offset == log.segments[1].base_offset - 1 and delta == 1
    assert last_seq == last_offset  # one record per offset from sequence 0


@pytest.mark.parametrize("clean", [True, False])
def test_restart_keeps_deduplicating(tmp_path, clean):
    directory = tmp_path / "t-0"
    log = Log.open(directory, LogConfig(segment_bytes=300))
    for i in range(6):
        last = log.append_as_leader(produced(2 * i))
    if clean:
        log.close()
    reopened = Log.open(directory, LogConfig(segment_bytes=300), had_clean_shutdown=clean)
    retry = reopened.append_as_leader(produced(10))
    assert retry.duplicate and retry.first_offset == last.first_offset
    assert reopened.append_as_leader(produced(12)).first_offset == 12


def test_truncation_forgets_the_truncated_batches(tmp_path):
    log = Log.open(tmp_path / "t-0")
    for i in range(3):
        log.append_as_leader(produced(2 * i))
    log.truncate_to(4)
    again = log.append_as_leader(produced(4))  # no longer a duplicate: appended anew
    assert not again.duplicate and again.first_offset == 4


def test_damaged_snapshot_is_ignored_and_state_rebuilt_from_the_log(tmp_path, caplog):
    directory = tmp_path / "t-0"
    log = Log.open(directory)
    for i in range(3):
        last = log.append_as_leader(produced(2 * i))
    log.close()
    snapshot = next(directory.glob("*.snapshot"))
    snapshot.write_bytes(snapshot.read_bytes()[:-3])
    reopened = Log.open(directory)
    assert reopened.append_as_leader(produced(4)).first_offset == last.first_offset
    assert any("damaged producer snapshot" in m for m in caplog.messages)
