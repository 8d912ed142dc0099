"""The reference pipeline: ticks from Kafka → one-minute OHLC bars → the compacted topic
``ohlc-1m`` and Parquet partitioned by date (DESIGN §4).

    tidelog-bars --bootstrap-server HOST:PORT --state-dir DIR [--group tidelog-bars]
                 [--ticks-topic ticks] [--bars-topic ohlc-1m] [--parquet DIR]
                 [--watermark "10 seconds"] [--trigger "5 seconds"] [--master URL]

One Structured Streaming query reads the ticks with Spark's Kafka source; each
micro-batch's final bars (:mod:`.bars`) go to the bars topic with an idempotent producer
and to Parquet under ``<parquet>/date=YYYY-MM-DD/``. A replayed batch (after a crash)
writes the same keys to the compacted topic and replaces its own Parquet files, so
neither output holds a bar twice. The checkpoint is ``<state-dir>/checkpoint``; the
processed offsets go to the consumer group (:mod:`.offsets`), which also decides where
a run starts. When the group's offsets were reset, the old checkpoint and Parquet files
are moved to ``<state-dir>/before-reset-<time>/`` and the bars are computed anew.

The topics are created when missing (the bars topic with ``cleanup.policy=compact``).
SIGTERM or Ctrl-C stops the query once its running batch is done. Under
``spark-submit`` the master is the one it was given; run with ``python``, it is
``--master`` (default ``local[*]``).

On Kubernetes the operator runs it as the application of a ConsumerGroup and passes the
defaults of the first three options in the environment: ``TIDELOG_BOOTSTRAP_SERVERS``,
``TIDELOG_STATE_DIR`` (the checkpoint volume) and ``TIDELOG_GROUP_ID``.
"""

from __future__ import annotations

import argparse
import logging
import os
import shutil
import signal
import sys
import time
from pathlib import Path

from pyspark.errors import StreamingQueryException
from pyspark.sql import DataFrame
from pyspark.sql.streaming import StreamingQuery

from tidelog.admin import AdminClient, AdminError
from tidelog_spark.bars import bar_records, bar_rows, one_minute_bars, parse_ticks
from tidelog_spark.offsets import OffsetCommitter, checkpoint_query_id, plan_start
from tidelog_spark.session import SparkSetupError, spark_session

QUERY_NAME = "ohlc-1m"
log = logging.getLogger("tidelog_spark.pipeline")


def write_parquet_batch(rows: DataFrame, directory: Path, batch_id: int) -> None:
    """Write one micro-batch's rows under ``directory/date=…/`` as files named
    ``batch-<id>-…``, replacing any that an earlier attempt at the same batch left."""
    staging = directory / "_staging" / f"batch-{batch_id}"
    rows.write.mode("overwrite").partitionBy("date").parquet(str(staging))
    prefix = f"batch-{batch_id:012d}-"
    for old in directory.glob(f"date=*/{prefix}*"):
        old.unlink()
    for part in staging.glob("date=*/part-*.parquet"):
        target = directory / part.parent.name / (prefix + part.name)
        target.parent.mkdir(parents=True, exist_ok=True)
        part.replace(target)
    shutil.rmtree(staging)


class BarSink:
    """``foreachBatch``: a micro-batch's bars to the compacted topic and to Parquet."""

    def __init__(self, bootstrap: str, topic: str, parquet: Path):
        self._bootstrap = bootstrap
        self._topic = topic
        self._parquet = parquet

    def __call__(self, bars: DataFrame, batch_id: int) -> None:
        bars.persist()
        try:
            count = bars.count()
            if count:
                (
                    bar_records(bars)
                    .write.format("kafka")
                    .option("kafka.bootstrap.servers", self._bootstrap)
                    .option("kafka.acks", "all")
                    .option("kafka.enable.idempotence", "true")
                    .option("topic", self._topic)
                    .save()
                )
                write_parquet_batch(bar_rows(bars), self._parquet, batch_id)
            log.info("batch %d: %d bars", batch_id, count)
        finally:
            bars.unpersist()


def start_bars_query(
    spark,
    bootstrap: str,
    topics: tuple[str, str],
    state: tuple[Path, Path],
    *,
    starting_offsets: str,
    watermark: str,
    trigger: dict,
    name: str = QUERY_NAME,
) -> StreamingQuery:
    """Start the pipeline's query: the ticks of ``topics[0]`` as one-minute bars into
    ``topics[1]`` and Parquet, with the checkpoint and Parquet directories ``state``;
    ``trigger`` as ``DataStreamWriter.trigger`` takes it."""
    ticks, bars = topics
    checkpoint, parquet = state
    records = (
        spark.readStream.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", ticks)
        .option("startingOffsets", starting_offsets)
        .load()
    )
    return (
        one_minute_bars(parse_ticks(records), watermark)
        .writeStream.queryName(name)
        .outputMode("append")
        .option("checkpointLocation", str(checkpoint))
        .trigger(**trigger)
        .foreachBatch(BarSink(bootstrap, bars, parquet))
        .start()
    )


def ensure_topics(admin: AdminClient, ticks: str, bars: str, partitions: int) -> list[int]:
    """Create the ticks and bars topics where missing (replicated on up to 3 brokers,
    the bars compacted); the partitions of the ticks."""
    replication = min(3, len(admin.live_brokers()))
    admin.create_topic(ticks, partitions, replication, exist_ok=True)
    admin.create_topic(bars, partitions, replication, {"cleanup.policy": "compact"}, exist_ok=True)
    return admin.topic_partitions([ticks])[ticks]


def set_aside(state: Path, paths: list[Path]) -> Path:
    """Move what exists of ``paths`` into ``state/before-reset-<UTC time>/``."""
    archive = state / time.strftime("before-reset-%Y%m%dT%H%M%SZ", time.gmtime())
    archive.mkdir(parents=True)
    for path in paths:
        if path.exists():
            path.replace(archive / path.name)
    return archive


def stop_between_batches(query: StreamingQuery, timeout: float = 60) -> None:
    """Stop ``query`` once its running micro-batch (if any) has finished: stopping
    interrupts a batch midway, which the next run would then replay."""
    deadline = time.monotonic() + timeout
    while query.isActive and query.status["isTriggerActive"] and time.monotonic() < deadline:
        time.sleep(0.1)
    query.stop()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidelog-bars", description=__doc__.splitlines()[0])
    bootstrap, state = (
        os.environ.get(v) for v in ("TIDELOG_BOOTSTRAP_SERVERS", "TIDELOG_STATE_DIR")
    )
    parser.add_argument(
        "--bootstrap-server", required=not bootstrap, default=bootstrap, metavar="HOST:PORT[,...]"
    )
    parser.add_argument("--state-dir", required=not state, default=state, type=Path)
    parser.add_argument("--group", default=os.environ.get("TIDELOG_GROUP_ID", "tidelog-bars"))
    parser.add_argument("--ticks-topic", default="ticks")
    parser.add_argument("--bars-topic", default="ohlc-1m")
    parser.add_argument("--partitions", type=int, default=6, help="of topics created here")
    parser.add_argument("--parquet", type=Path, help="default: <state-dir>/bars")
    parser.add_argument("--watermark", default="10 seconds", help="how late a tick may be")
    parser.add_argument("--trigger", default="5 seconds", help="micro-batch interval")
    parser.add_argument("--master", help="default: spark-submit's, else local[*]")
    return parser


def _master(args: argparse.Namespace) -> str | None:
    launched_by_spark_submit = "PYSPARK_GATEWAY_PORT" in os.environ
    return args.master or (None if launched_by_spark_submit else "local[*]")


def run(args: argparse.Namespace) -> int:
    state: Path = args.state_dir.resolve()
    parquet: Path = (args.parquet or state / "bars").resolve()
    checkpoint = state / "checkpoint"
    admin = AdminClient(args.bootstrap_server)
    partitions = ensure_topics(admin, args.ticks_topic, args.bars_topic, args.partitions)
    committed = admin.list_group_offsets(args.group)
    start = plan_start(args.ticks_topic, partitions, committed, checkpoint_query_id(checkpoint))
    if start.reset:
        archive = set_aside(state, [checkpoint, parquet])
        log.warning("group %s was reset: the old checkpoint is in %s", args.group, archive)
    log.info("starting from %s", "the checkpoint" if start.resume else start.starting_offsets)
    spark = spark_session("tidelog-bars", _master(args))
    spark.streams.addListener(OffsetCommitter(args.bootstrap_server, args.group, QUERY_NAME))
    query = start_bars_query(
        spark,
        args.bootstrap_server,
        (args.ticks_topic, args.bars_topic),
        (checkpoint, parquet),
        starting_offsets=start.starting_offsets,
        watermark=args.watermark,
        trigger={"processingTime": args.trigger},
    )
    stopping: list[int] = []
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda number, _: stopping.append(number))
    try:
        while not stopping and not query.awaitTermination(1):
            pass
    except StreamingQueryException as error:
        log.error("the query failed: %s", error)
        return 1
    finally:
        stop_between_batches(query)
        spark.stop()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    logging.getLogger("py4j").setLevel(logging.WARNING)  # a line per callback otherwise
    try:
        return run(args)
    except (AdminError, OSError, SparkSetupError) as error:  # OSError: no broker answered
        print(f"tidelog-bars: {error}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
