"""S12 of ``make bench``, on one broker: the Spark pipeline. Ticks are produced here; the
same Spark job (``bench/spark_job.py``, a process of its own) reads them in batch and
through a streaming query against either system, and its figures (records per second,
tick to bar, Spark's time per micro-batch) are recorded on the session.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

import confluent_kafka
import loadgen
import spark_job
from session import Session, warn
from settings import RESULTS, ROOT, Scale

from tidelog_spark.ticks import synthetic_clock, tick_stream

__all__ = ["S12_PARTITIONS", "s12_spark"]

S12_PARTITIONS = 6


def s12_spark(session: Session, scale: Scale) -> None:
    """The same Spark job (``bench/spark_job.py``) against either system: the ticks are
    produced here, the job reads them in a process of its own."""
    ticks = "s12-ticks"
    for topic in (ticks, f"{ticks}-bars", f"{ticks}-live", f"{ticks}-live-bars"):
        session.create_topic(topic, S12_PARTITIONS)
    producer = confluent_kafka.Producer({"bootstrap.servers": session.bootstrap})
    # event times of the last hour: within both systems' retention of 7 days
    start_ms = (time.time_ns() // 60_000_000_000 - 60) * 60_000
    stream = tick_stream(synthetic_clock(start_ms, 10), seed=12)
    for _, tick in zip(range(scale.s12_ticks), stream, strict=False):
        key, value = tick.record()
        while True:
            try:
                producer.produce(ticks, value, key, timestamp=tick.time)
                break
            except BufferError:  # the local queue is full: let it drain
                producer.poll(0.1)
    producer.flush(60)
    work = session.directory / "s12"
    job = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "spark_job.py"),
            *("--bootstrap", session.bootstrap, "--ticks", ticks, "--work", str(work)),
            *("--count", str(scale.s12_ticks), "--latency-seconds", str(scale.s12_latency_seconds)),
        ],
        capture_output=True,
        text=True,
        timeout=1800,
        check=False,
    )
    if job.returncode != 0:
        log = RESULTS / f"s12-{session.system}-{session.number}.log"
        log.write_text(job.stderr)
        errors = [line for line in job.stderr.splitlines() if "Exception" in line]
        warn(session, "S12", {"exit": job.returncode, "first error": errors[:1], "log": str(log)})
        return
    result = json.loads(job.stdout.strip().splitlines()[-1])
    case = f"{scale.s12_ticks:,} ticks, local[2]"
    session.record(
        "S12",
        case,
        "spark",
        "records read (batch)",
        result["batch_records_per_s"],
        "records/s",
        samples=result["reads_s"],
    )
    session.record(
        "S12", case, "spark", "records streamed", result["stream_records_per_s"], "records/s"
    )
    latency_case = f"{spark_job.LATENCY_RATE} ticks/s"
    for p, value in loadgen.percentiles(result["tick_to_bar_ms"], (50, 99)).items():
        session.record(
            "S12",
            latency_case,
            "spark",
            f"tick to bar {p}",
            value,
            "ms",
            bars=result["bars"],
            samples=result["tick_to_bar_ms"],
        )
    for p, value in loadgen.percentiles(result["micro_batch_ms"], (50,)).items():
        session.record(
            "S12",
            latency_case,
            "spark",
            f"micro-batch {p}",
            value,
            "ms",
            samples=result["micro_batch_ms"],
        )
