"""``tidelog-dump-log`` prints what Kafka's DumpLogSegments prints for the same files,
and fails loudly on damaged ones."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kafka_reference import dump_log_segments, kafka_write_partition, segment_files
from kafka_reference.samples import mixed_batches
from tidelog.records import build_batch, build_control_batch
from tidelog.records.control import ControlRecordType
from tidelog.storage.config import LogConfig
from tidelog.storage.log import Log

DUMP_LOG = Path(sys.executable).with_name("tidelog-dump-log")


def run_dump(*args) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(DUMP_LOG), *map(str, args)], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def kafka_partition(tmp_path_factory) -> list[Path]:
    written = kafka_write_partition(
        tmp_path_factory.mktemp("kafka"),
        mixed_batches(40),
        segment_bytes=4096,
        index_interval_bytes=256,
    )
    return segment_files(written.path)


@pytest.mark.parametrize(
    "flags",
    [
        ["--print-data-log"],
        ["--deep-iteration"],
        [],
        ["--index-sanity-check"],
        ["--verify-index-only"],
    ],
)
def test_output_matches_kafka_dump_log_segments(kafka_partition, flags):
    files = [str(p.resolve()) for p in kafka_partition]
    kafka = dump_log_segments(
        files,
        print_data_log="--print-data-log" in flags,
        deep_iteration="--deep-iteration" in flags,
        index_sanity_check="--index-sanity-check" in flags,
        verify_index_only="--verify-index-only" in flags,
    )
    ours = run_dump("--files", ",".join(files), *flags)
    assert ours.returncode == 0, ours.stderr
    assert ours.stdout == kafka.stdout
    assert len(kafka_partition) > 6  # several segments, each with both indexes


def test_control_batches_print_their_marker(tmp_path):
    log = Log.open(tmp_path / "t-0")
    log.append_as_follower(
        build_batch(
            [("k", "v")], producer_id=5, producer_epoch=0, base_sequence=0, is_transactional=True
        )
    )
    log.append_as_follower(
        build_control_batch(
            ControlRecordType.COMMIT, producer_id=5, producer_epoch=0, base_offset=1
        )
    )
    log.close()
    ours = run_dump("--print-data-log", log.segments[0].log_path)
    kafka = dump_log_segments([log.segments[0].log_path], print_data_log=True)
    assert "endTxnMarker: COMMIT coordinatorEpoch: 0" in ours.stdout
    assert ours.stdout.splitlines()[1:] == kafka.stdout.splitlines()[1:]


def write_log(directory: Path) -> Log:
    log = Log.open(directory, LogConfig(index_interval_bytes=100))
    for i in range(10):
        log.append_as_leader(build_batch([(f"k{i}", "v" * 50)] * 3, timestamp=1000 + i))
    log.close()
    return log


def test_torn_tail_is_reported(tmp_path):
    log = write_log(tmp_path / "t-0")
    path = log.segments[0].log_path
    with open(path, "r+b") as handle:
        handle.truncate(path.stat().st_size - 10)
    result = run_dump(path)
    assert result.returncode == 1
    assert f"invalid bytes at the end of {path.name}" in result.stdout


def test_bad_crc_is_reported(tmp_path):
    log = write_log(tmp_path / "t-0")
    path = log.segments[0].log_path
    data = bytearray(path.read_bytes())
    data[100] ^= 0x01
    path.write_bytes(bytes(data))
    result = run_dump(path)
    assert result.returncode == 1
    assert "isvalid: false" in result.stdout


def test_index_disagreeing_with_log_is_reported(tmp_path):
    log = write_log(tmp_path / "t-0")
    index = log.segments[0].index_path
    data = bytearray(index.read_bytes())
    data[3] += 1  # first entry's relative offset now names a different batch
    index.write_bytes(bytes(data))
    result = run_dump(index)
    assert result.returncode == 1
    assert f"Mismatches in :{index}" in result.stderr


def test_corrupt_index_fails_sanity_check(tmp_path):
    log = write_log(tmp_path / "t-0")
    index = log.segments[0].index_path
    index.write_bytes(index.read_bytes() + b"\x01\x02\x03")
    result = run_dump("--index-sanity-check", index)
    assert result.returncode == 1
    assert "not a multiple of 8" in result.stderr and str(index) in result.stderr


def test_missing_file_and_unknown_file(tmp_path):
    result = run_dump(tmp_path / "00000000000000000000.log", tmp_path / "notes.txt")
    assert result.returncode == 1
    assert "No such file" in result.stderr and "Ignoring unknown file" in result.stderr
