"""The leader epoch cache and ``leader-epoch-checkpoint`` against Apache Kafka's own
classes (LeaderEpochCheckpointFile, LeaderEpochFileCache, UnifiedLog), both ways.

Never skipped: without Apache Kafka's jars these tests fail, telling to run
`make kafka-libs`.
"""

from __future__ import annotations

import random
import shutil

import pytest

from kafka_reference import BatchSpec, RecordSpec, kafka_libs, kafka_write_partition, run_java_jobs
from tidelog.storage.config import LogConfig
from tidelog.storage.leader_epoch import (
    LEADER_EPOCH_CHECKPOINT,
    EpochEntry,
    LeaderEpochCache,
    LeaderEpochCheckpointError,
    read_leader_epoch_checkpoint,
    write_leader_epoch_checkpoint,
)
from tidelog.storage.log import Log

ENTRIES = [(0, 0), (3, 1200), (4, 1201), (9, 2**40), (2**31 - 1, 2**63 - 1)]


@pytest.fixture(scope="module")
def libs():
    return kafka_libs()  # raises KafkaReferenceUnavailable, with instructions, if missing


def test_checkpoint_files_are_byte_identical_and_read_both_ways(libs, tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    write_leader_epoch_checkpoint(ours, tuple(EpochEntry(*e) for e in ENTRIES))
    kafka_read, _ = run_java_jobs(
        "KafkaLeaderEpochTool",
        [
            {"op": "read", "file": str(ours)},
            {"op": "write", "file": str(theirs), "entries": ENTRIES},
        ],
    )
    assert [tuple(e) for e in kafka_read["entries"]] == ENTRIES
    assert theirs.read_bytes() == ours.read_bytes()
    assert read_leader_epoch_checkpoint(theirs) == ENTRIES


MALFORMED = [
    "1\n0\n",
    "0\nx\n",
    "0\n2\n0 0\n",
    "0\n1\n0 0\n1 5\n",
    "0\n1\n0 0 0\n",
    "0\n1\n5\n",
    "0\n1\n0 x\n",
    "0\n1\n0.5 1\n",
]


def test_the_same_files_are_malformed_for_kafka_and_for_tidelog(libs, tmp_path):
    paths = []
    for number, text in enumerate(["", "0\n0\n", *MALFORMED]):
        path = tmp_path / f"file-{number}"
        path.write_text(text)
        paths.append(path)
    answers = run_java_jobs("KafkaLeaderEpochTool", [{"op": "read", "file": str(p)} for p in paths])
    for path, answer in zip(paths[:2], answers[:2], strict=True):
        assert answer == {"entries": []}, path.read_text()
        assert read_leader_epoch_checkpoint(path) == []
    for path, answer in zip(paths[2:], answers[2:], strict=True):
        # KafkaStorageException (bad framing) or NumberFormatException (a bad number):
        # either way Kafka fails the load of the log.
        assert "error" in answer, path.read_text()
        with pytest.raises(LeaderEpochCheckpointError):
            read_leader_epoch_checkpoint(path)


def _random_steps(rng: random.Random, count: int) -> list[list]:
    steps = []
    for _ in range(count):
        kind = rng.choices(
            ["assign", "truncate_from_end", "truncate_from_start", "end_offset_for", "clear"],
            weights=[10, 2, 2, 6, 1],
        )[0]
        if kind == "assign":
            steps.append(["assign", rng.randrange(12), rng.randrange(60)])
        elif kind == "end_offset_for":
            steps.append(["end_offset_for", rng.randrange(-1, 13), 60 + rng.randrange(10)])
        elif kind == "clear":
            steps.append(["clear"])
        else:
            steps.append([kind, rng.randrange(-1, 62)])
    return steps


def _run_ours(directory, steps) -> dict:
    cache = LeaderEpochCache(directory)
    results = []
    for step in steps:
        match step:
            case ["assign", epoch, start]:
                cache.assign(epoch, start)
                results.append(None)
            case ["truncate_from_end", offset]:
                cache.truncate_from_end(offset)
                results.append(None)
            case ["truncate_from_start", offset]:
                cache.truncate_from_start(offset)
                results.append(None)
            case ["clear"]:
                cache.clear()
                results.append(None)
            case ["end_offset_for", epoch, log_end]:
                results.append(list(cache.end_offset_for(epoch, log_end)))
    return {"results": results, "entries": [list(e) for e in cache.entries]}


def test_the_cache_behaves_as_kafkas_under_random_operations(libs, tmp_path):
    """Assignments (new, repeated, lower, non-ascending), truncations from both ends,
    clears and end offset lookups, step by step against LeaderEpochFileCache."""
    scenarios = [_random_steps(random.Random(seed), 60) for seed in range(40)]
    jobs = []
    for number, steps in enumerate(scenarios):
        directory = tmp_path / f"kafka-{number}"
        directory.mkdir()
        jobs.append({"op": "cache", "dir": str(directory), "steps": steps})
    answers = run_java_jobs("KafkaLeaderEpochTool", jobs)
    for number, (steps, kafka) in enumerate(zip(scenarios, answers, strict=True)):
        directory = tmp_path / f"ours-{number}"
        directory.mkdir()
        assert _run_ours(directory, steps) == kafka, f"scenario {number}: {steps}"


def _epoch_batches() -> list[BatchSpec]:
    """Batches a leader appended through epochs 0, 2 and 5 (epochs 1, 3, 4 wrote nothing),
    across several segments."""
    batches = []
    for number, epoch in enumerate([0, 0, 0, 2, 2, 2, 2, 5, 5, 5]):
        records = [RecordSpec(b"k%d" % i, b"v" * 120, 1_700_000_000_000 + i) for i in range(3)]
        batches.append(BatchSpec(records, leader_epoch=epoch, roll_before=number in (2, 5, 8)))
    return batches


def test_a_kafka_written_log_loads_with_kafkas_epoch_entries(libs, tmp_path):
    kafka = kafka_write_partition(
        tmp_path / "kafka",
        _epoch_batches(),
        segment_bytes=1 << 20,
        index_interval_bytes=4096,
        topic="epochs",
    )
    kafka_entries = read_leader_epoch_checkpoint(kafka.path / LEADER_EPOCH_CHECKPOINT)
    assert kafka_entries == [(0, 0), (2, 9), (5, 21)]
    assert len(kafka.segments) == 4

    log = Log.open(kafka.path, LogConfig())
    assert log.leader_epochs.entries == tuple(kafka_entries)
    assert log.latest_epoch == 5
    epochs = list(range(-1, 8))
    kafka_copy = tmp_path / "kafka-cache"
    shutil.copytree(kafka.path, kafka_copy)
    (kafka_answers,) = run_java_jobs(
        "KafkaLeaderEpochTool",
        [
            {
                "op": "cache",
                "dir": str(kafka_copy),
                "steps": [["end_offset_for", e, log.log_end_offset] for e in epochs],
            }
        ],
    )
    assert [list(log.end_offset_for_epoch(e)) for e in epochs] == kafka_answers["results"]
    log.close()

    # Without the file, recovering every segment rebuilds the same entries from the
    # batches' partition leader epochs, as Kafka's LogSegment.recover does.
    (kafka.path / LEADER_EPOCH_CHECKPOINT).unlink()
    recovered = Log.open(kafka.path, LogConfig(), had_clean_shutdown=False, recovery_point=0)
    assert recovered.leader_epochs.entries == tuple(kafka_entries)
    assert read_leader_epoch_checkpoint(kafka.path / LEADER_EPOCH_CHECKPOINT) == kafka_entries
    recovered.close()
