"""The reference pipeline end to end on ``tidelog-local``: a known tick stream in, the
bars in ``ohlc-1m`` and in Parquet equal to bars computed here from the same ticks, the
group's lag 0 in tidelog's tool and in Kafka's, a kill -9 and a restart that resumes from
the checkpoint, and a reset to earliest that recomputes the same bars."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer
from pyspark.sql import functions as F

from bar_oracle import expected_bars, known_ticks
from kafka_reference.tools import run_kafka_tool
from tidelog.admin import AdminClient
from tidelog_spark.bars import BAR_COLUMNS, MINUTE_FORMAT
from waiting import wait_until

BIN = Path(sys.executable).parent
# A minute boundary an hour ago: event times well within the topics' retention (7 days
# of record timestamps), which would otherwise delete the ticks under the test.
START_MS = (time.time_ns() // 60_000_000_000 - 60) * 60_000
SPACING_MS = 250
COUNT = 1200  # five minutes of event time


def tool(name: str, *args) -> str:
    """A command of ours run to its end (it must succeed); what it printed."""
    done = subprocess.run(
        [BIN / name, *map(str, args)], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def send_ticks(bootstrap: str, topic: str, seed: int, start_ms: int) -> None:
    """``tidelog-ticks`` in its count mode with synthetic event times."""
    tool(
        "tidelog-ticks",
        "--bootstrap-server",
        bootstrap,
        "--topic",
        topic,
        "--rate",
        "0",
        "--count",
        COUNT,
        "--seed",
        seed,
        "--start",
        start_ms,
        "--spacing-ms",
        SPACING_MS,
    )


class Pipeline:
    """``tidelog-bars`` as a process of its own, its output in a log file."""

    def __init__(self, bootstrap: str, state: Path, names: dict[str, str]):
        self.log = state.with_suffix(".log")
        self.command = [
            BIN / "tidelog-bars",
            "--bootstrap-server",
            bootstrap,
            "--state-dir",
            state,
            "--ticks-topic",
            names["ticks"],
            "--bars-topic",
            names["bars"],
            "--group",
            names["group"],
            "--partitions",
            "3",
            "--trigger",
            "1 second",
            "--master",
            "local[2]",
        ]
        self.process: subprocess.Popen | None = None

    def start(self) -> Pipeline:
        self.log_start = self.log.stat().st_size if self.log.exists() else 0
        with open(self.log, "a") as log:
            self.process = subprocess.Popen(self.command, stdout=log, stderr=log)
        return self

    def output(self) -> str:
        with open(self.log) as log:
            log.seek(self.log_start)
            return log.read()

    def stop(self, signum: int = signal.SIGTERM) -> int:
        self.process.send_signal(signum)
        return self.process.wait(timeout=120)


def lag(admin: AdminClient, group: str, topic: str) -> int | None:
    """The group's total lag on ``topic``; None while it has committed nothing."""
    partitions = [(topic, p) for p in admin.topic_partitions([topic])[topic]]
    committed = admin.list_group_offsets(group, partitions)
    if len(committed) < len(partitions):
        return None
    ends = admin.list_offsets(partitions)
    return sum(ends[tp].offset - committed[tp].offset for tp in committed)


def caught_up(bootstrap: str, pipeline: Pipeline, names: dict[str, str], bars: int) -> None:
    """Wait until the group's lag is 0 and the bars topic holds ``bars`` records (the
    last bars come with the batch after the last ticks: the one that moves the
    watermark past them)."""
    admin = AdminClient(bootstrap)

    def done() -> bool:
        assert pipeline.process.poll() is None, pipeline.output()[-3000:]
        return (
            lag(admin, names["group"], names["ticks"]) == 0
            and len(bars_in_topic(bootstrap, names["bars"])) >= bars
        )

    wait_until(done, "the pipeline has processed every tick", timeout=240)


def bars_in_topic(bootstrap: str, topic: str) -> list[tuple[str, dict]]:
    consumer = KafkaConsumer(
        topic, bootstrap_servers=bootstrap, auto_offset_reset="earliest", consumer_timeout_ms=3000
    )
    records = [(m.key.decode(), json.loads(m.value)) for m in consumer]
    consumer.close()
    return records


def bars_in_parquet(spark, directory: Path, count: int) -> dict[str, dict]:
    """The bars of the Parquet output once it holds ``count`` rows: a batch goes to the
    bars topic first, then to Parquet, so :func:`caught_up` can return in between."""

    def rows_written() -> int:
        if not any(directory.glob("date=*/*.parquet")):
            return 0
        return spark.read.parquet(str(directory)).count()

    wait_until(lambda: rows_written() >= count, f"{count} bars in Parquet", 120)
    rows = spark.read.parquet(str(directory)).select(
        "symbol",
        F.date_format("start", MINUTE_FORMAT).alias("start"),
        F.date_format("end", MINUTE_FORMAT).alias("end"),
        *BAR_COLUMNS[3:],
        F.date_format("date", "yyyy-MM-dd").alias("date"),
    )
    bars = {}
    for row in rows.collect():
        bar = row.asDict()
        assert bar.pop("date") == bar["start"][:10]
        key = f"{bar['symbol']}|{bar['start']}"
        assert key not in bars, f"{key} twice in the Parquet files"
        bars[key] = bar
    return bars


def assert_no_lag_in_the_tools(bootstrap: str, group: str) -> None:
    """Both ``--describe`` tools print the group's partitions with LAG 0."""
    ours = tool(
        "tidelog-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group
    )
    kafka = run_kafka_tool(
        "kafka-consumer-groups", "--bootstrap-server", bootstrap, "--describe", "--group", group
    )
    assert kafka.returncode == 0, kafka.stderr
    for printed in (ours, kafka.stdout):
        lags = [line.split()[5] for line in printed.splitlines() if line.startswith(group + " ")]
        assert len(lags) == 3 and set(lags) == {"0"}, printed


def test_bars_are_right_resume_after_kill_9_and_are_recomputed_after_a_reset(
    local_cluster, spark, tmp_path
):
    bootstrap = local_cluster.bootstrap
    names = {"ticks": "ticks-run", "bars": "bars-run", "group": "bars-run"}
    admin = AdminClient(bootstrap)
    pipeline = Pipeline(bootstrap, tmp_path / "state", names).start()
    first = known_ticks(7, START_MS, COUNT, SPACING_MS)
    wait_until(lambda: names["ticks"] in admin.list_topics(), "the pipeline made its topics", 120)
    send_ticks(bootstrap, names["ticks"], seed=7, start_ms=START_MS)
    expected = expected_bars(first)
    assert len(expected) == 5 * 4  # five symbols, four closed minutes
    caught_up(bootstrap, pipeline, names, bars=len(expected))
    assert_no_lag_in_the_tools(bootstrap, names["group"])
    assert dict(bars_in_topic(bootstrap, names["bars"])) == expected
    assert bars_in_parquet(spark, tmp_path / "state" / "bars", len(expected)) == expected

    # kill -9 and more ticks: the restarted job goes on from its checkpoint, so no bar
    # is written twice (a start from the group's offsets would not know the open window)
    assert pipeline.stop(signal.SIGKILL) == -signal.SIGKILL
    second = known_ticks(8, START_MS + COUNT * SPACING_MS, COUNT, SPACING_MS)
    send_ticks(bootstrap, names["ticks"], seed=8, start_ms=START_MS + COUNT * SPACING_MS)
    pipeline.start()
    expected = expected_bars(first + second)
    assert len(expected) == 5 * 9
    caught_up(bootstrap, pipeline, names, bars=len(expected))
    assert "starting from the checkpoint" in pipeline.output()
    written = bars_in_topic(bootstrap, names["bars"])
    assert len(written) == len(dict(written)), "a bar written twice"
    assert dict(written) == expected
    assert bars_in_parquet(spark, tmp_path / "state" / "bars", len(expected)) == expected
    assert pipeline.stop() == 0

    # a reset to earliest while the job is stopped: the job notices it, sets the old
    # checkpoint aside and computes the same bars again
    tool(
        "tidelog-consumer-groups",
        "--bootstrap-server",
        bootstrap,
        "--group",
        names["group"],
        "--topic",
        names["ticks"],
        "--reset-offsets",
        "--to-earliest",
        "--execute",
    )
    assert lag(admin, names["group"], names["ticks"]) == 2 * COUNT
    pipeline.start()
    caught_up(bootstrap, pipeline, names, bars=2 * len(expected))
    assert re.search(r"was reset: the old checkpoint is in \S+before-reset-", pipeline.output())
    (archive,) = (tmp_path / "state").glob("before-reset-*")
    assert {p.name for p in archive.iterdir()} == {"checkpoint", "bars"}
    assert bars_in_parquet(spark, tmp_path / "state" / "bars", len(expected)) == expected
    written = bars_in_topic(bootstrap, names["bars"])
    assert len(written) == 2 * len(expected)  # every bar again (compaction drops the old)
    assert dict(written) == expected
    assert pipeline.stop() == 0
