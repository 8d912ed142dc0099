"""S12's Spark side, one process per system: the reference pipeline's code
(``tidelog_spark``) against the brokers at ``--bootstrap``, in ``local[2]`` mode.

    python bench/spark_job.py --bootstrap B --ticks T --count N --repeats R --work DIR
                              --latency-seconds S

1. **Batch read**: ``spark.read.format("kafka")`` of the N ticks already in topic T,
   counted; R timed reads after one untimed read that warms the JVM; records/s.
2. **Streaming**: the pipeline's query (parse, one-minute bars with the watermark, the
   compacted bars topic and Parquet) over the same N ticks from a new checkpoint with
   the ``availableNow`` trigger: all of them, then stop; records/s from start to stop.
3. **Tick to bar**: the same query running (1 s trigger) while ticks arrive at 190 a
   second with event times 100 ms apart (a minute of event time every 3.2 s). A bar can be
   written once a tick 10 s past its minute has arrived (the watermark); the latency is
   from producing that tick to the bar arriving in the bars topic, for every bar. With
   it, Spark's own duration of each micro-batch that read ticks (``triggerExecution``
   of the query's progress): what the broker can change. A bar's latency also draws
   where in the 1 s trigger cycle its tick came (``bench/results/README.md``).

Prints one JSON document: the figures, and the raw timings behind them.
"""

from __future__ import annotations

import argparse
import calendar
import json
import statistics
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer

from tidelog_spark.pipeline import start_bars_query
from tidelog_spark.session import spark_session
from tidelog_spark.ticks import synthetic_clock, tick_stream

WATERMARK = "10 seconds"
WATERMARK_MS = 10_000
# Ticks a second. At 200 (50 ms apart) a minute of event time took 6 s, a whole number of
# the query's 1 s triggers, so every bar of a run closed at one point of the trigger's
# cycle, set by when the query happened to start, and that one draw decided the run's
# figure (p50 and p99 within 0.1-0.3 s of each other, 1.5 to 2.5 s from run to run). At
# 190 and 100 ms apart a minute takes 3.16 s: the bars close 0.16 s later in the cycle
# each time, and a run's ~19 bars spread over all of it three times. Until 2026-12-03 the
# ticks were 50 ms apart and a run had ~9 bars, so its p99 was the slowest of 9 draws.
LATENCY_RATE = 190
LATENCY_SPACING_MS = 100  # event time between ticks


def timed_read(spark, bootstrap: str, topic: str) -> tuple[int, float]:
    start = time.perf_counter()
    count = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
        .count()
    )
    return count, time.perf_counter() - start


def bars_query(spark, bootstrap: str, ticks: str, work: Path, trigger: dict):
    """The pipeline's own query over ``ticks`` from the earliest offsets."""
    return start_bars_query(
        spark,
        bootstrap,
        (ticks, f"{ticks}-bars"),
        (work / "checkpoint", work / "bars"),
        starting_offsets="earliest",
        watermark=WATERMARK,
        trigger=trigger,
        name=f"s12-{ticks}",
    )


def streamed(spark, bootstrap: str, ticks: str, work: Path) -> tuple[int, float]:
    """Ticks through the pipeline's query with ``availableNow``: (rows, seconds)."""
    start = time.perf_counter()
    query = bars_query(spark, bootstrap, ticks, work, {"availableNow": True})
    query.awaitTermination()
    seconds = time.perf_counter() - start
    return sum(p["numInputRows"] for p in query.recentProgress), seconds


def tick_to_bar(
    spark, bootstrap: str, ticks: str, work: Path, seconds: float
) -> tuple[list[float], list[float]]:
    """Latencies (ms) from the tick that lets a bar close to the bar in the bars topic,
    and the durations (ms) of the query's micro-batches that read ticks meanwhile."""
    bars = f"{ticks}-bars"
    start_ms = (time.time_ns() // 60_000_000_000 + 1) * 60_000  # a minute boundary
    stream = tick_stream(synthetic_clock(start_ms, LATENCY_SPACING_MS), seed=12)
    sent_at: list[tuple[int, float]] = []  # (event time, when produced)
    query = bars_query(spark, bootstrap, ticks, work, {"processingTime": "1 second"})
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"s12-{ticks}",
            "auto.offset.reset": "earliest",
        }
    )
    consumer.subscribe([bars])
    arrived: dict[str, float] = {}  # window start → when its first bar arrived
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set():
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                arrived.setdefault(json.loads(message.value())["start"], time.monotonic())

    reader = threading.Thread(target=consume)
    reader.start()
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 0})
    began = time.monotonic()
    for n, tick in enumerate(stream):
        if time.monotonic() - began > seconds:
            break
        time.sleep(max(0.0, began + n / LATENCY_RATE - time.monotonic()))
        key, value = tick.record()
        producer.produce(ticks, value, key, timestamp=tick.time)
        producer.poll(0)
        sent_at.append((tick.time, time.monotonic()))
    producer.flush(30)
    time.sleep(5)  # the last bars that could close
    stop.set()
    reader.join()
    consumer.close()
    batches = [
        progress["durationMs"]["triggerExecution"]
        for progress in query.recentProgress
        if progress["numInputRows"] > 0
    ]
    query.stop()
    latencies = []
    for minute, at in arrived.items():
        end = calendar.timegm(time.strptime(minute, "%Y-%m-%dT%H:%MZ")) * 1000 + 60_000
        closing = next((sent for t, sent in sent_at if t >= end + WATERMARK_MS), None)
        if closing is not None:
            latencies.append((at - closing) * 1000)
    return latencies, batches


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--ticks", required=True)
    parser.add_argument("--count", type=int, required=True)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--latency-seconds", type=float, default=60)
    args = parser.parse_args()
    spark = spark_session("s12", "local[2]")
    count, _ = timed_read(spark, args.bootstrap, args.ticks)
    if count != args.count:
        raise SystemExit(f"read {count} records of {args.count}")
    reads = [timed_read(spark, args.bootstrap, args.ticks)[1] for _ in range(args.repeats)]
    rows, seconds = streamed(spark, args.bootstrap, args.ticks, args.work / "stream")
    if rows != args.count:
        raise SystemExit(f"the query read {rows} records of {args.count}")
    latencies, batches = tick_to_bar(
        spark, args.bootstrap, f"{args.ticks}-live", args.work / "live", args.latency_seconds
    )
    spark.stop()
    print(
        json.dumps(
            {
                "batch_records_per_s": args.count / statistics.median(reads),
                "stream_records_per_s": rows / seconds,
                "bars": len(latencies),
                "tick_to_bar_ms": latencies,
                "micro_batch_ms": batches,
                "reads_s": reads,
                "stream_s": seconds,
            }
        )
    )


if __name__ == "__main__":
    main()
