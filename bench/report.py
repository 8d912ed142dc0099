"""The report of ``make bench``: ``<stem>.md`` (machine, versions, settings, one table row
per figure with both systems' means and their ratio, the list of figures where tidelog
is behind Kafka, the plots) and ``<stem>-raw.json`` (every row of every session).

:func:`summarise`, :func:`behind_lines` and :func:`separation` are pure functions of the
rows; :func:`write_report` adds what it reads of this machine and writes the files.
"""

from __future__ import annotations

import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

import confluent_kafka
import groupload
import reassignment
import restart
import secured
import wide_fetch
from cluster import S8_PING_CYCLE_S
from groups import S9_MEMBERS, S9_PARTITIONS, S10_PARTITIONS
from kafka_broker import KAFKA_HEAP, kafka_libs
from log_files import COMPACTED_TOPIC
from plots import plot
from session import Session
from settings import (
    BROKER_SETTINGS,
    CLUSTER_SETTINGS,
    CLUSTER_SIZE,
    REPLICATED_TOPIC,
    ROOT,
    SYSTEMS,
    Scale,
)
from throughput import S1_FLUSH_TOPIC

from tidelog.zookeeper import find_java

__all__ = [
    "HIGHER_IS_BETTER",
    "behind_lines",
    "fmt",
    "higher_is_better",
    "is_behind",
    "machine",
    "mean",
    "separation",
    "summarise",
    "versions",
    "write_report",
]

HIGHER_IS_BETTER = (
    "throughput",
    "copy rate",
    "copy rate / throttle",  # S11: the share of the throttle a throttled move used
    "records",
    "produce",
    "achieved rate",
    "commits",
    "offsets committed",
    "records read (batch)",
    "records streamed",
    "connections",  # S15: SCRAM connections per second
    secured.SASL_RATIO_METRIC,
    secured.ACL_COST_METRIC,
)


def machine() -> dict[str, str]:
    meminfo = Path("/proc/meminfo").read_text().split("\n", 1)[0].split()
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    usage = shutil.disk_usage(tempfile.gettempdir())
    disk = subprocess.run(
        ["df", "--output=source,fstype", tempfile.gettempdir()], capture_output=True, text=True
    ).stdout.splitlines()[-1]
    return {
        "cores": str(os.cpu_count()),
        "cpu": cpu,
        "memory": f"{int(meminfo[1]) / 1024**2:.1f} GiB",
        "disk (work dir)": f"{disk.strip()}, {usage.total / 1e9:.0f} GB, "
        f"{usage.free / 1e9:.0f} GB free",
        "kernel": platform.release(),
    }


def versions() -> dict[str, str]:
    java_version = subprocess.run(
        [find_java(), "-version"], capture_output=True, text=True
    ).stderr.splitlines()[0]
    kafka_jar = next(kafka_libs().glob("kafka_2.13-*.jar")).stem
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    return {
        "tidelog": commit + (" (with uncommitted changes)" if dirty else ""),
        "Apache Kafka": f"{kafka_jar.removeprefix('kafka_2.13-')} ({kafka_jar}), ZooKeeper mode, "
        f"heap {' '.join(KAFKA_HEAP)}",
        "Java": java_version,
        "Python": platform.python_version(),
        "confluent-kafka / librdkafka": f"{confluent_kafka.version()[0]} / "
        f"{confluent_kafka.libversion()[0]}",
    }


def mean(values: list) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def fmt(value) -> str:
    if value is None:
        return "—"
    if isinstance(value, int) or abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.3g}" if abs(value) < 10 else f"{value:.1f}"


def summarise(rows: list[dict]) -> list[dict]:
    """One entry per figure: each system's values (one per session), their means and
    the ratio, and the ``spread`` behind them: the values, or where a session's figure
    is the median of repeats within it (a row's ``repeats``), every repeat."""
    groups: dict[tuple, dict[str, list]] = defaultdict(lambda: {s: [] for s in SYSTEMS})
    spreads: dict[tuple, dict[str, list]] = defaultdict(lambda: {s: [] for s in SYSTEMS})
    units = {}
    for row in rows:
        key = (row["scenario"], row["case"], row["tool"], row["metric"])
        groups[key][row["system"]].append(row["value"])
        spreads[key][row["system"]].extend(row.get("repeats") or [row["value"]])
        units[key] = row["unit"]
    summary = []
    for key, values in groups.items():
        kafka, tidelog = mean(values["kafka"]), mean(values["tidelog"])
        ratio = tidelog / kafka if kafka and tidelog is not None else None
        summary.append(
            dict(zip(("scenario", "case", "tool", "metric"), key, strict=True))
            | dict(unit=units[key], values=values, spread=spreads[key])
            | dict(kafka=kafka, tidelog=tidelog, ratio=ratio)
        )
    return summary


def higher_is_better(row: dict) -> bool:
    return row["metric"] in HIGHER_IS_BETTER


def is_behind(row: dict) -> bool:
    """Whether tidelog's figure is worse than Kafka's: a ratio on the wrong side of 1.0
    as the table shows it, to two decimals (both clients' 5 MB/s, say, are 1.00×, not
    behind by a rounding error)."""
    if row["ratio"] is None:
        return False
    ratio = round(row["ratio"], 2)
    return ratio < 1 if higher_is_better(row) else ratio > 1


def separation(kafka: list, tidelog: list) -> str:
    """What one run's samples of a figure (a value per session, or per repeat) say about
    the gap between the two systems: ``"one sample each"`` when a system has at most
    one, so that the run has no spread to compare the gap with; ``"overlap"`` when the
    ranges of the two systems' samples meet, so that the gap is within this run's
    spread; ``"apart"`` when they do not."""
    kafka = [v for v in kafka if v is not None]
    tidelog = [v for v in tidelog if v is not None]
    if len(kafka) < 2 or len(tidelog) < 2:
        return "one sample each"
    if max(kafka) < min(tidelog) or max(tidelog) < min(kafka):
        return "apart"
    return "overlap"


def behind_lines(summary: list[dict]) -> list[str]:
    """The report's list of the figures where tidelog is behind Kafka, each with its
    ratio and :func:`separation`."""
    lines = []
    for row in summary:
        if not is_behind(row):
            continue
        kafka, tidelog = ([v for v in row["spread"][s] if v is not None] for s in SYSTEMS)
        ranges = ", ".join(
            f"{name} {fmt(min(values))}–{fmt(max(values))}"
            for name, values in (("Kafka", kafka), ("tidelog", tidelog))
            if len(values) > 1
        )
        verdict = separation(kafka, tidelog)
        lines.append(
            f"- {row['scenario']} {row['case']}, {row['tool']}, {row['metric']}: "
            f"{row['ratio']:.2f}×, {verdict}" + (f" ({ranges})" if ranges else "")
        )
    return lines or ["None: every ratio is on tidelog's side of 1.0."]


def write_report(
    stem: Path,
    scale: Scale,
    order: list[str],
    sessions: list[Session],
    elapsed: float,
    software: dict[str, str],
) -> Path:
    rows = [row for session in sessions for row in session.rows]
    summary = summarise(rows)
    images = plot(summary, sessions, stem)
    lines = [
        f"# tidelog vs Apache Kafka — {stem.name}",
        "",
        f"Run: `{' '.join(sys.argv)}`, {elapsed / 60:.1f} min, sessions in order "
        f"{', '.join(order)}. Ratio = tidelog / Kafka of the means over sessions; "
        "↑ means higher is better, ↓ lower is better. See README.md.",
        "",
        "## Machine",
        "",
        *[f"- {k}: {v}" for k, v in machine().items()],
        "",
        "## Versions",
        "",
        *[f"- {k}: {v}" for k, v in software.items()],
        "",
        "## Settings",
        "",
        f"- scale: {scale}",
        "- both brokers: " + ", ".join(f"`{k}={v}`" for k, v in BROKER_SETTINGS.items()),
        "- S1's flush cases: topics with "
        + ", ".join(f"`{k}={v}`" for k, v in S1_FLUSH_TOPIC.items())
        + " on both, each case named by it; the other S1 cases keep both systems' default "
        "(no fsync per append)",
        "- S5 topic: "
        + ", ".join(f"`{k}={v}`" for k, v in COMPACTED_TOPIC.items())
        + f", `segment.bytes={scale.s5_segment_bytes}`, `segment.ms={scale.s5_segment_ms}`",
        "- producers: acks=1 (S7: acks=all and acks=1), batch.size=65536, linger.ms=5 "
        "(S3: linger.ms=1), idempotence off; consumers of S2 and S3: assign() from offset 0, "
        f"no group; S2 reads each topic {scale.s2_reads} times, each figure the median",
        "- consumer groups (S9, S10, single-broker sessions): confluent-kafka consumers with "
        f"`session.timeout.ms={groupload.SESSION_TIMEOUT_MS}`, "
        f"`heartbeat.interval.ms={groupload.HEARTBEAT_INTERVAL_MS}`, "
        f"`statistics.interval.ms={groupload.WAKE_UP_MS}` (wakes librdkafka's main thread "
        "so that heartbeats keep their interval), otherwise librdkafka's defaults; the "
        "offsets topic has 1 replica on both (`offsets.topic.replication.factor=1` above) "
        "and `offsets.topic.num.partitions` is both systems' default, 50. S9: "
        f"{S9_MEMBERS} members then a {S9_MEMBERS + 1}th on a {S9_PARTITIONS}-partition "
        "topic fed 200 records/s, members as threads of one process; S10: one member owning "
        f"{S10_PARTITIONS} partitions, each commit carrying {S10_PARTITIONS} offsets",
        f"- cluster sessions (S7, S8): {CLUSTER_SIZE} brokers of one system, each with the "
        "settings above plus "
        + ", ".join(f"`{k}={v}`" for k, v in CLUSTER_SETTINGS.items())
        + "; topics with replication factor 3 and "
        + ", ".join(f"`{k}={v}`" for k, v in REPLICATED_TOPIC.items()),
        "- S8: one partition; two idempotent acks=all producers, confluent-kafka "
        "(`loadgen`) and Apache Kafka's Java producer (`java-producer`, "
        "`bench/PacedProducer.java`), each sending a 1 KiB record about every ms through "
        "the same kills; failover time = kill -9 of the leader → that client's first "
        "acknowledgement of a record sent after the kill, each kill after a random part "
        f"(the same for both systems) of the {S8_PING_CYCLE_S:g} s ZooKeeper ping cycle, so "
        "that it lands at any point of it. Both systems use "
        f"`zookeeper.session.timeout.ms={CLUSTER_SETTINGS['zookeeper.session.timeout.ms']}`"
        ": Kafka's controller notices a kill -9'd broker only when its session expires; "
        "tidelog's as soon as the dead broker's endpoint refuses its connection. Each "
        "failover is split at the moment the partition's state in ZooKeeper names the new "
        "leader: before it the cluster's share (tool `-`, kill → new leader in ZooKeeper), "
        "after it the client's (it finds the new leader by a metadata refresh; see "
        "README.md) and the new leader's",
        reassignment.settings_line(scale.s11_throttle_mb, scale.s11_repeats),
        restart.settings_line(scale.s13_partitions, scale.s13_megabytes),
        wide_fetch.settings_line(scale.s14_partitions, scale.s14_seconds, scale.s14_megabytes),
        secured.settings_line(scale),
        "",
        "## Results",
        "",
        "| scenario | case | tool | metric | unit | Kafka | tidelog | ratio | raw Kafka | "
        "raw tidelog |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for s in summary:
        arrow = "↑" if higher_is_better(s) else "↓"
        raw = {k: " / ".join(fmt(v) for v in s["values"][k]) for k in SYSTEMS}
        ratio = f"**{s['ratio']:.2f}×** {arrow}" if s["ratio"] is not None else "—"
        lines.append(
            f"| {s['scenario']} | {s['case']} | {s['tool']} | {s['metric']} | {s['unit']} | "
            f"{fmt(s['kafka'])} | {fmt(s['tidelog'])} | {ratio} | {raw['kafka']} | "
            f"{raw['tidelog']} |"
        )
    lines += [
        "",
        "## Behind Kafka",
        "",
        "The figures whose ratio is on the wrong side of 1.0. **overlap**: the two "
        "systems' samples (the raw columns; S2's, S11's and S14's repeats within a "
        "session) overlap, so the gap is within this run's spread; **apart**: they do not; "
        "**one sample each**: the run cannot tell.",
        "",
        *behind_lines(summary),
        "",
        *(["## S15's goals", "", *goals, ""] if (goals := secured.goal_lines(summary)) else []),
        "## Plots",
        "",
        *[f"![{name}]({name})" for name in images],
        "",
    ]
    report = stem.with_suffix(".md")
    report.write_text("\n".join(lines))
    stem.with_name(stem.name + "-raw.json").write_text(json.dumps(rows, indent=1))
    return report
