"""Apache Kafka's own code as a reference for tidelog's byte-compatibility tests.

Two tools, each one JVM launch:

* :func:`write_partition_with_kafka` writes a partition directory with Kafka's storage
  classes (``kafka.log.UnifiedLog#appendAsLeader``, so offsets, rolling and both indexes
  are Kafka's own logic), through the single-file program ``KafkaLogWriter.java`` run in
  Java's source-launcher mode.
* :func:`dump_log_segments` runs ``kafka.tools.DumpLogSegments`` on many files at once and
  parses what it prints (see :mod:`.dump_output`).

The jars come from ``make kafka-libs`` (version pinned in the Makefile only), found via
the environment variable ``TIDELOG_KAFKA_LIBS`` that the Makefile exports, or by asking
``make`` for that path when pytest is run directly. Missing jars are an error, never a
skip: these tests are the proof of compatibility.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import shutil
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from .dump_output import DumpedBatch, DumpedFile, DumpedRecord, DumpOutput, parse_dump_output

__all__ = [
    "BatchSpec",
    "DumpLogSegmentsError",
    "DumpOutput",
    "DumpedBatch",
    "DumpedFile",
    "DumpedRecord",
    "KafkaReferenceUnavailable",
    "KafkaWriteResult",
    "RawBatch",
    "RecordSpec",
    "dump_log_segments",
    "java_executable",
    "kafka_libs",
    "kafka_write_partition",
    "run_java_jobs",
    "segment_files",
    "write_partition_with_kafka",
]

HERE = Path(__file__).resolve().parent
REPO_ROOT = HERE.parents[1]
WRITER_SOURCE = HERE / "KafkaLogWriter.java"
ENV_VAR = "TIDELOG_KAFKA_LIBS"

# Quick JVM start (these are short batch runs), Kafka's logging at warn only.
JVM_FLAGS = (
    "-XX:TieredStopAtLevel=1",
    "-XX:+UseSerialGC",
    "-Xshare:auto",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
    "-Dorg.slf4j.simpleLogger.logFile=System.err",
)
JVM_TIMEOUT_S = 120

_HOW_TO_FIX = "Run `make kafka-libs` (needs Java 17 and Maven) and run the tests again."


class KafkaReferenceUnavailable(RuntimeError):
    """Apache Kafka's jars or a Java runtime are missing: the tests cannot prove anything."""


class DumpLogSegmentsError(RuntimeError):
    def __init__(self, message: str, output: DumpOutput):
        super().__init__(message)
        self.output = output


def _libs_from_make() -> str | None:
    """Ask the Makefile where it keeps the jars (the version lives only there)."""
    make = shutil.which("make")
    if make is None or not (REPO_ROOT / "Makefile").is_file():
        return None
    try:
        result = subprocess.run(
            [
                make,
                "-s",
                "--no-print-directory",
                "-C",
                str(REPO_ROOT),
                f"--eval=_tidelog_print_kafka_libs: ; @echo $${ENV_VAR}",
                "_tidelog_print_kafka_libs",
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    value = result.stdout.strip()
    return value if result.returncode == 0 and value else None


@functools.cache
def kafka_libs() -> Path:
    """The directory holding Apache Kafka's jars; raises with instructions when missing."""
    value = os.environ.get(ENV_VAR) or _libs_from_make()
    if not value:
        raise KafkaReferenceUnavailable(
            f"{ENV_VAR} is not set and the Makefile could not be asked for it. {_HOW_TO_FIX}"
        )
    libs = Path(value).expanduser()
    if not (libs / ".complete").is_file() or not any(libs.glob("kafka_2.13-*.jar")):
        raise KafkaReferenceUnavailable(
            f"Apache Kafka's jars are not in {libs} ({ENV_VAR}). {_HOW_TO_FIX}"
        )
    return libs


@functools.cache
def java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    candidate = Path(java_home, "bin", "java") if java_home else None
    java = str(candidate) if candidate and candidate.is_file() else shutil.which("java")
    if java is None:
        raise KafkaReferenceUnavailable(
            "No `java` found (JAVA_HOME or PATH): the Kafka reference tools need Java 17+."
        )
    return java


def _java(args: Sequence[str], *, stdin: str | None = None) -> subprocess.CompletedProcess:
    cmd = [java_executable(), *JVM_FLAGS, "-cp", f"{kafka_libs()}/*", *args]
    return subprocess.run(
        cmd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=JVM_TIMEOUT_S,
        check=False,
    )


def run_java_jobs(tool: str, jobs: Sequence[dict]) -> list[dict]:
    """Run ``<tool>.java`` (beside this file) once with ``jobs`` as JSON on stdin; each
    job's answer, in order, from the JSON list it prints last."""
    proc = _java([str(HERE / f"{tool}.java")], stdin=json.dumps(list(jobs)))
    if proc.returncode != 0:
        raise RuntimeError(f"{tool} failed (exit {proc.returncode}):\n{proc.stderr}\n{proc.stdout}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


# --------------------------------------------------------------------------------------
# Writing a partition with Kafka


@dataclass(frozen=True)
class RecordSpec:
    key: bytes | None
    value: bytes | None
    timestamp: int
    headers: tuple[tuple[str, bytes | None], ...] = ()


@dataclass(frozen=True)
class BatchSpec:
    """One producer batch, built by Kafka's MemoryRecordsBuilder (CreateTime, magic 2)."""

    records: Sequence[RecordSpec]
    compression: str = "none"  # none, gzip, snappy, lz4, zstd
    roll_before: bool = False  # roll a new segment (UnifiedLog.roll) before appending
    producer_id: int = -1
    producer_epoch: int = -1
    base_sequence: int = -1
    leader_epoch: int | None = None  # the leader's epoch at this append (default: the call's)


@dataclass(frozen=True)
class RawBatch:
    """Ready-made batch bytes (e.g. built by tidelog), appended by Kafka as a leader would."""

    data: bytes
    roll_before: bool = False
    leader_epoch: int | None = None


@dataclass(frozen=True)
class KafkaAppend:
    first_offset: int
    last_offset: int
    max_timestamp: int
    size_in_bytes: int


@dataclass(frozen=True)
class KafkaWriteResult:
    path: Path  # the partition directory <log_dir>/<topic>-<partition>
    appends: list[KafkaAppend]
    log_start_offset: int
    log_end_offset: int
    segments: list[int]  # base offsets
    stderr: str


def _b64(data: bytes | None) -> str | None:
    return None if data is None else base64.b64encode(data).decode("ascii")


def _batch_json(batch: BatchSpec | RawBatch) -> dict:
    epoch = {} if batch.leader_epoch is None else {"leader_epoch": batch.leader_epoch}
    if isinstance(batch, RawBatch):
        return {"raw": _b64(batch.data), "roll_before": batch.roll_before, **epoch}
    return {
        **epoch,
        "compression": batch.compression,
        "roll_before": batch.roll_before,
        "producer_id": batch.producer_id,
        "producer_epoch": batch.producer_epoch,
        "base_sequence": batch.base_sequence,
        "records": [
            {
                "timestamp": r.timestamp,
                "key": _b64(r.key),
                "value": _b64(r.value),
                "headers": [{"key": k, "value": _b64(v)} for k, v in r.headers],
            }
            for r in batch.records
        ],
    }


def kafka_write_partition(
    directory: Path | str,
    batches: Iterable[BatchSpec | RawBatch],
    *,
    segment_bytes: int,
    index_interval_bytes: int,
    topic: str = "kafka-ref",
    partition: int = 0,
    leader_epoch: int = 0,
    topic_id: str | None = None,
    config: dict[str, object] | None = None,
) -> KafkaWriteResult:
    """Write ``<directory>/<topic>-<partition>/`` with Kafka's UnifiedLog; see the module doc.

    ``config`` holds further topic configs with Kafka's names (``segment.ms``, ...).
    """
    directory = Path(directory)
    topic_config = {
        "segment.bytes": segment_bytes,
        "index.interval.bytes": index_interval_bytes,
        **(config or {}),
    }
    spec = {
        "log_dir": str(directory.resolve()),
        "topic": topic,
        "partition": partition,
        "leader_epoch": leader_epoch,
        "topic_id": topic_id,
        "config": {k: str(v) for k, v in topic_config.items()},
        "batches": [_batch_json(b) for b in batches],
    }
    proc = _java([str(WRITER_SOURCE)], stdin=json.dumps(spec))
    if proc.returncode != 0:
        raise RuntimeError(
            f"KafkaLogWriter failed (exit {proc.returncode}):\n{proc.stderr}\n{proc.stdout}"
        )
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    return KafkaWriteResult(
        path=Path(report["partition_dir"]),
        appends=[KafkaAppend(**a) for a in report["appends"]],
        log_start_offset=report["log_start_offset"],
        log_end_offset=report["log_end_offset"],
        segments=list(report["segments"]),
        stderr=proc.stderr,
    )


def write_partition_with_kafka(
    directory: Path | str,
    batches: Iterable[BatchSpec | RawBatch],
    *,
    segment_bytes: int,
    index_interval_bytes: int,
    **kwargs,
) -> Path:
    """Like :func:`kafka_write_partition`, returning only the partition directory."""
    return kafka_write_partition(
        directory,
        batches,
        segment_bytes=segment_bytes,
        index_interval_bytes=index_interval_bytes,
        **kwargs,
    ).path


# --------------------------------------------------------------------------------------
# DumpLogSegments


def segment_files(
    partition_dir: Path | str, suffixes: Sequence[str] = (".log", ".index", ".timeindex")
) -> list[Path]:
    """The segment files of a partition, by base offset, then in ``suffixes`` order."""
    partition_dir = Path(partition_dir)
    files = [p for p in partition_dir.iterdir() if p.suffix in suffixes and p.stem.isdigit()]
    return sorted(files, key=lambda p: (int(p.stem), suffixes.index(p.suffix)))


def dump_log_segments(
    paths: Iterable[Path | str],
    *,
    print_data_log: bool = False,
    deep_iteration: bool = False,
    index_sanity_check: bool = False,
    verify_index_only: bool = False,
    check: bool = True,
) -> DumpOutput:
    """Run ``kafka.tools.DumpLogSegments --files <all paths>`` once and parse its output.

    With ``check`` (default) a non-zero exit raises :class:`DumpLogSegmentsError`
    (e.g. an index that fails ``--index-sanity-check`` makes Kafka throw); the parsed
    output is attached. Problems Kafka merely prints are in ``DumpOutput.problems``.
    """
    files = [str(Path(p).resolve()) for p in paths]
    if not files:
        raise ValueError("no files to dump")
    if any("," in f for f in files):
        raise ValueError("DumpLogSegments takes a comma-separated list: no commas in paths")
    args = ["kafka.tools.DumpLogSegments", "--files", ",".join(files)]
    if print_data_log:
        args.append("--print-data-log")
    if deep_iteration:
        args.append("--deep-iteration")
    if index_sanity_check:
        args.append("--index-sanity-check")
    if verify_index_only:
        args.append("--verify-index-only")
    proc = _java(args)
    output = parse_dump_output(args, proc.returncode, proc.stdout, proc.stderr)
    if check and proc.returncode != 0:
        raise DumpLogSegmentsError(
            f"DumpLogSegments exited with {proc.returncode}:\n{proc.stderr}", output
        )
    return output
