"""S1, S2, S3 and S6 of ``make bench``, on one broker: produce with both load generators
(S1, with S6's peak RSS during it, then again into topics that flush every append),
consume what S1's loadgen wrote (S2), and end-to-end latency at a fixed rate (S3); also
the produce machinery that S7 runs on its clusters (:class:`ProduceCase`,
:func:`produce_with_both_tools`, the figures of a load generator's result).

Each scenario takes a started :class:`session.Session` and records its figures there.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import loadgen
import perf_tools
from measure import PeakRss, start_profile, stop_profile
from session import Session
from settings import Scale

__all__ = [
    "S1_CASES",
    "S1_FLUSH_TOPIC",
    "ProduceCase",
    "cpu_per_gb",
    "produce_with_both_tools",
    "rates",
    "record_acks",
    "record_cpu",
    "record_rates",
    "s1_flushed",
    "s1_produce",
    "s2_consume",
    "s3_latency",
]

S1_CASES = [(size, codec) for size in (100, 1024) for codec in ("none", "lz4")]
# The topic config of S1's flush cases (records of ``Scale.s1_flush_sizes``, no
# compression), on both systems: a partition's log is written out to disk (fsync) after
# every append, where the default cases leave it to the page cache.
S1_FLUSH_TOPIC = {"flush.messages": "1"}


@dataclass(frozen=True)
class ProduceCase:
    name: str  # prefix of its topics and profiles
    label: str  # the report's "case"
    size: int
    codec: str = "none"
    acks: str = "1"
    partitions: int = 1


def rates(result) -> dict[tuple[str, str], float]:
    """A load generator's rates, by (metric, unit)."""
    return {("throughput", "MB/s"): result.mb_per_s, ("records", "rec/s"): result.records_per_s}


def cpu_per_gb(cpu: float, result) -> float:
    """Broker CPU seconds (all of the session's brokers) per GB the client moved."""
    return cpu / (result.bytes / 1e9)


def record_rates(session: Session, scenario: str, case: str, tool: str, result) -> None:
    for (metric, unit), value in rates(result).items():
        session.record(scenario, case, tool, metric, value, unit)


def record_acks(session: Session, scenario: str, case: str, tool: str, result) -> None:
    for p in ("p50", "p99"):
        session.record(scenario, case, tool, f"ack {p}", result.latency_ms.get(p), "ms")


def record_cpu(session: Session, scenario: str, case: str, cpu: float, result) -> None:
    session.record(scenario, case, "loadgen", "broker CPU", cpu_per_gb(cpu, result), "CPU-s/GB")


def produce_with_both_tools(
    session: Session,
    scenario: str,
    case: ProduceCase,
    count: int,
    configs: dict | None = None,
    profile: Path | None = None,
) -> str:
    """``count`` records by kafka-producer-perf-test, then by loadgen (its broker CPU
    measured), each into a fresh topic; returns loadgen's topic."""
    perf_topic, loadgen_topic = f"{case.name}-perf", f"{case.name}-loadgen"
    session.create_topic(perf_topic, case.partitions, configs)
    perf = perf_tools.producer_perf_test(
        session.bootstrap, perf_topic, count, case.size, case.codec, case.acks
    )
    record_rates(session, scenario, case.label, "perf-test", perf)
    record_acks(session, scenario, case.label, "perf-test", perf)
    session.create_topic(loadgen_topic, case.partitions, configs)
    cpu = session.cpu_seconds()
    spy = start_profile(session, profile, case.name)
    result = loadgen.produce(
        session.bootstrap,
        loadgen_topic,
        count,
        case.size,
        compression=case.codec,
        partitions=case.partitions,
        acks=case.acks,
    )
    stop_profile(spy)
    cpu = session.cpu_seconds() - cpu
    record_rates(session, scenario, case.label, "loadgen", result)
    record_acks(session, scenario, case.label, "loadgen", result)
    record_cpu(session, scenario, case.label, cpu, result)
    return loadgen_topic


def s1_produce(session: Session, scale: Scale, profile: Path | None) -> dict:
    """Returns the record counts of the loadgen topics for S2. S6's peak RSS is taken
    over the default cases (:data:`S1_CASES`), the flush cases come after it."""
    counts = {}
    with PeakRss(session.pids) as peak:
        for size, codec in S1_CASES:
            case = ProduceCase(f"s1-{size}-{codec}", f"{size}B {codec}", size, codec)
            count = scale.s1_megabytes * loadgen.MB // size
            topic = produce_with_both_tools(session, "S1", case, count, profile=profile)
            counts[(size, codec)] = (topic, count)
    session.record("S6", "under S1", "-", "peak RSS", peak.peak, "MB")
    for size in scale.s1_flush_sizes:
        s1_flushed(session, scale, size, profile)
    return counts


def s1_flushed(session: Session, scale: Scale, size: int, profile: Path | None) -> None:
    """S1's produce of ``size``-byte records without compression, as a default case, into
    topics with :data:`S1_FLUSH_TOPIC`; its case is the default case's, flush config
    appended. S2 does not read them."""
    config = ", ".join(f"{k}={v}" for k, v in S1_FLUSH_TOPIC.items())
    case = ProduceCase(f"s1-{size}-none-flush", f"{size}B none, {config}", size)
    count = scale.s1_megabytes * loadgen.MB // size
    produce_with_both_tools(session, "S1", case, count, S1_FLUSH_TOPIC, profile)


def s2_consume(session: Session, counts: dict, reads: int, profile: Path | None) -> None:
    """Each S1 loadgen topic read ``reads`` times from offset 0. One read of 100 MB of
    1 KiB records takes a quarter of a second, most of it the consumer's own
    decompression and Python loop (the broker's answer takes a few milliseconds), so a
    single read is mostly the noise of this 2-core machine; each figure is the median
    of the reads, every read in the raw JSON."""
    for (size, codec), (topic, count) in counts.items():
        case = f"{size}B {codec}"
        spy = start_profile(session, profile, f"s2-{size}-{codec}")
        figures = defaultdict(list)  # (metric, unit) → one value per read
        for _ in range(reads):
            cpu = session.cpu_seconds()
            result = loadgen.consume(session.bootstrap, topic, count)
            cpu = session.cpu_seconds() - cpu
            for key, value in rates(result).items():
                figures[key].append(value)
            figures["broker CPU", "CPU-s/GB"].append(cpu_per_gb(cpu, result))
        stop_profile(spy)
        for (metric, unit), values in figures.items():
            session.record_median("S2", case, "loadgen", metric, values, unit)


def s3_latency(session: Session, scale: Scale) -> None:
    session.create_topic("s3-latency")
    result, latencies = loadgen.end_to_end(
        session.bootstrap,
        "s3-latency",
        rate_mb=scale.s3_rate_mb,
        size=1024,
        seconds=scale.s3_seconds,
        work=session.work,
    )
    session.latencies = latencies
    case = f"{scale.s3_rate_mb:g} MB/s 1KiB"
    session.record("S3", case, "loadgen", "achieved rate", result.mb_per_s, "MB/s")
    for p, value in result.latency_ms.items():
        session.record("S3", case, "loadgen", f"e2e {p}", value, "ms")
