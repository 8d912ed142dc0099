"""``make bench``: tidelog side by side with Apache Kafka on this machine, in one run.

One ZooKeeper serves both systems (a chroot per session). Single-broker sessions
alternate A B B A (Kafka, tidelog, tidelog, Kafka) so that drift of the machine (page
cache, thermal, other load) falls on both; only one system runs at a time and nothing is
pinned. Each runs S1 (produce), S2 (consume), S3 (end-to-end latency), S6 (RSS), S9
(consumer-group rebalance time), S10 (offset commits) and S12 (the Spark pipeline: batch
read, streaming, tick to bar and Spark's time per micro-batch; ``bench/spark_job.py``);
S5 (compaction) runs once per system, in its first session. S4 (1,000 partitions)
follows in sessions of its own, A B B A again: its figure is file-system work (1,000
directories, thousands of fsyncs), and this machine's fsync latency varies several-fold
for minutes after heavy writes, so one sample per system taken at different points of
the run says more about the disk's state than about the broker. Then come the cluster
sessions, alternating the same way: three brokers of one system run S7 (replicated
produce: 6 partitions, RF=3, acks=all and acks=1) and S8 (failover time after a kill -9
of a partition leader, seen by confluent-kafka and by Kafka's Java producer). Then four
brokers of each system run S11 (partition reassignment under load, with and without a
throttle; ``bench/reassignment.py``), and last three brokers of each system run S13 (a
broker of 1,000 partitions restarted after a clean stop and after a kill -9;
``bench/restart.py``) and S14 (followers and a consumer of a 1,000-partition topic,
where fetch sessions count; ``bench/wide_fetch.py``). The same load generators run
unchanged against both: Kafka's ``kafka-producer-perf-test`` and ours
(``bench/loadgen.py`` and, for the groups, ``bench/groupload.py``; confluent-kafka).

Writes ``bench/results/<UTC date>-<short commit>.md`` and PNG plots next to it.
Usage: ``python bench/compare.py [--quick] [--sessions N] [--cluster-sessions N]
[--scenarios S9,S10] [--profile]``.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import datetime
import gc
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import confluent_kafka
import groupload
import loadgen
import perf_tools
import reassignment
import restart
import spark_job
import wide_fetch
from bench_waiting import ZnodeWatch, registration_gone, wait_until
from confluent_kafka.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    NewTopic,
)
from kafka_broker import KAFKA_HEAP, KafkaBroker, kafka_libs

from tidelog.server.process import BrokerProcess
from tidelog.zookeeper import ZooKeeperServer, find_java
from tidelog_spark.ticks import synthetic_clock, tick_stream

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SYSTEMS = ("kafka", "tidelog")

# The same broker settings for both systems. Segment size and flush policy are both
# systems' defaults (1 GiB, no fsync per write: log.flush.interval.messages unset);
# the cleaner settings make S5 observable within minutes.
BROKER_SETTINGS = {
    "num.partitions": "1",
    "default.replication.factor": "1",
    "auto.create.topics.enable": "false",
    "log.segment.bytes": str(1024 * 1024 * 1024),
    "log.cleaner.dedupe.buffer.size": str(64 * 1024 * 1024),
    "log.cleaner.backoff.ms": "1000",
    # Consumer groups (S9, S10). A group's first rebalance completes at once on both
    # (Kafka's default waits 3 s for more members to come); it applies only to a group
    # that is Empty, so not to S9's measured rebalances, which start from a Stable group.
    # The offsets topic gets one replica (Kafka refuses to create it with more replicas
    # than live brokers, tidelog caps its default of 3 to them): 1 in a single-broker
    # session, where S9 and S10 run.
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.replication.factor": "1",
}
# What a cluster session adds: the ZooKeeper session timeout decides how soon a kill -9'd
# broker is noticed (S8), so it is stated here although it is also BrokerProcess's
# default; the short retry backoff only speeds up stopping Kafka's cluster, whose last
# broker retries its controlled shutdown although nobody can take its leaderships
# (tidelog's stops after the first attempt; no figure depends on it).
CLUSTER_SIZE = 3
CLUSTER_SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "controlled.shutdown.retry.backoff.ms": "100",
    # S8 measures failover alone: Kafka's controller runs a preferred-leader election 5 s
    # after it takes over, which moved a partition back to a rejoined broker in the middle
    # of the next kill's wait.
    "auto.leader.rebalance.enable": "false",
}
REPLICATED_TOPIC = {"min.insync.replicas": "2"}
# A ZooKeeper session expires a timeout after the last packet its client sent, and an
# idle client pings every third of the timeout (Kafka's and kazoo's alike), so how long a
# kill -9 takes to be noticed depends on where in that ping cycle it lands. A kill at a
# fixed delay after the previous restart lands at the same phase every time (tidelog's
# kill to expiry was 6.96-7.07 s in 2026-11-26-bc856dd, Kafka's 4.78-6.58 s), so S8
# waits a random part of one cycle before each kill; the same delays for both systems.
S8_PING_CYCLE_S = int(CLUSTER_SETTINGS["zookeeper.session.timeout.ms"]) / 3000
# The run's ZooKeeper expires sessions only on multiples of its tick of CLOCK_MONOTONIC
# (time.perf_counter's clock), and librdkafka looks for leaderless partitions on a 1 s
# timer that starts with its producer: S8 creates its producers at a phase of the tick
# drawn like the kills' delays, the same for both systems (bench/results/README.md).
ZOOKEEPER_TICK_MS = 2000
# S8's two clients, by their tool names in the report: confluent-kafka (librdkafka) and
# Apache Kafka's own Java producer; how each finds a new leader: bench/results/README.md.
S8_CLIENTS = ("loadgen", "java-producer")
COMPACTED_TOPIC = {
    "cleanup.policy": "compact",
    "min.cleanable.dirty.ratio": "0.01",
    "file.delete.delay.ms": "1000",
}
# What kafka-run-class.sh gives a command-line tool (kafka-producer-perf-test).


@dataclass(frozen=True)
class Scale:
    s1_megabytes: int  # per S1 case and tool
    s2_reads: int  # of each S1 loadgen topic, per session; S2's figures are their median
    s3_seconds: float
    s3_rate_mb: float
    s4_partitions: int
    s4_megabytes: int
    s4_sessions: int  # alternating A B B A
    s5_keys: int
    s5_values_per_key: int
    s5_segment_bytes: int
    s5_segment_ms: int  # rolls the last segment so that the cleaner may take it
    s5_timeout_s: float
    s5_stable_s: float
    s7_megabytes: int  # per acks setting and tool
    s7_paced_seconds: int  # of kafka-producer-perf-test at S7_PACED_RATE, per acks setting
    s8_failovers: int
    s9_repeats: int  # of the 4th member's join, per session: eager (range) assignor
    s9_cooperative_repeats: int  # the same with cooperative-sticky (each takes ~2 s)
    s10_seconds: float  # per commit mode and session
    s10_warmup_seconds: float  # of untimed synchronous commits before the timed ones
    s11_megabytes: int  # the topic S11 moves
    s11_throttle_mb: float  # the throttle of S11's second move, MB/s
    s11_repeats: int  # of S11's pair of moves, per session
    s12_ticks: int  # read by Spark's batch source and by the streaming query
    s12_latency_seconds: float  # of paced ticks for the tick-to-bar latency
    s13_partitions: int
    s13_megabytes: int  # written before each of S13's two restarts
    s14_partitions: int
    s14_seconds: int  # idle, then under a trickle
    s14_megabytes: int  # written for S14's consumer to read
    sessions: int
    cluster_sessions: int


FULL = Scale(
    s1_megabytes=100,
    s2_reads=5,
    s3_seconds=15,
    s3_rate_mb=5,
    s4_partitions=1000,
    s4_megabytes=100,
    s4_sessions=4,
    s5_keys=1_000_000,
    s5_values_per_key=5,
    s5_segment_bytes=16 * 1024 * 1024,
    s5_segment_ms=10_000,
    s5_timeout_s=240,
    s5_stable_s=20,
    s7_megabytes=100,
    s7_paced_seconds=10,
    s8_failovers=5,
    s9_repeats=16,
    s9_cooperative_repeats=16,
    s10_seconds=2,
    s10_warmup_seconds=20,
    s11_megabytes=300,
    s11_throttle_mb=20,
    s11_repeats=3,
    s12_ticks=100_000,
    s12_latency_seconds=60,
    s13_partitions=1000,
    s13_megabytes=1024,
    s14_partitions=1000,
    s14_seconds=20,
    s14_megabytes=200,
    sessions=4,
    cluster_sessions=2,
)
QUICK = Scale(
    s1_megabytes=4,
    s2_reads=2,
    s3_seconds=2,
    s3_rate_mb=5,
    s4_partitions=50,
    s4_megabytes=4,
    s4_sessions=2,
    s5_keys=2_000,
    s5_values_per_key=5,
    s5_segment_bytes=128 * 1024,
    s5_segment_ms=2_000,
    s5_timeout_s=60,
    s5_stable_s=4,
    s7_megabytes=4,
    s7_paced_seconds=2,
    s8_failovers=1,
    s9_repeats=1,
    s9_cooperative_repeats=1,
    s10_seconds=0.5,
    s10_warmup_seconds=0.5,
    s11_megabytes=20,
    s11_throttle_mb=5,
    s11_repeats=2,
    s12_ticks=20_000,
    s12_latency_seconds=15,
    s13_partitions=40,
    s13_megabytes=16,
    s14_partitions=100,
    s14_seconds=3,
    s14_megabytes=8,
    sessions=2,
    cluster_sessions=2,
)

S1_CASES = [(size, codec) for size in (100, 1024) for codec in ("none", "lz4")]
S7_ACKS = ("all", "1")
S7_PARTITIONS = 6
# 1 KiB records/s of S7's paced run: 5 MB/s, as S3, under what either system's three
# brokers carry at acks=all here (14-21 MB/s), so that its ack latency is the brokers'
# and not the producer's queue, as it is at full speed.
S7_PACED_RATE = 5_000
S9_MEMBERS = 3  # the Stable group that a 4th member joins
S9_PARTITIONS = 12
S9_ASSIGNORS = ("range", "cooperative-sticky")  # librdkafka's eager default, incremental
S10_PARTITIONS = 12  # offsets per commit
S10_WINDOW = 16  # asynchronous commits in flight
S12_PARTITIONS = 6
SCENARIOS = tuple(f"S{n}" for n in range(1, 15))
CLUSTER_SCENARIOS = {"S7", "S8"}
PARTITIONS_SCENARIOS = {"S4"}
REASSIGNMENT_SCENARIOS = {"S11"}
RESTART_SCENARIOS = {"S13"}
WIDE_FETCH_SCENARIOS = {"S14"}


# --------------------------------------------------------------------------------------
# Measurements on the broker's process


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cpu_seconds(pid: int) -> float:
    """The CPU time of a process's live threads, in nanoseconds' resolution (the first
    field of each ``/proc/<pid>/task/<tid>/schedstat``). ``/proc/<pid>/stat`` counts in
    clock ticks (10 ms), coarser than a quick run's whole consume, which left a ratio
    over zero; the price is that a thread that exits takes its time with it (both
    brokers keep their threads)."""
    total = 0
    for task in Path(f"/proc/{pid}/task").iterdir():
        with contextlib.suppress(FileNotFoundError, ProcessLookupError):
            total += int((task / "schedstat").read_text().split()[0])
    return total / 1e9


def user_system_seconds(pid: int) -> tuple[float, float]:
    """A process's user and system CPU time so far (``/proc/<pid>/stat``, in clock ticks:
    fine over windows of seconds, where :func:`cpu_seconds` gives no split)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    return int(fields[11]) / tick, int(fields[12]) / tick


class PeakRss:
    """Samples the summed RSS of ``pids`` every 100 ms while in use."""

    def __init__(self, pids: list[int]):
        self.pids, self.peak = pids, 0.0
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self._done.wait(0.1):
            self.peak = max(self.peak, sum(rss_mb(pid) for pid in self.pids))

    def __enter__(self) -> PeakRss:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._done.set()
        self._thread.join()


def partition_bytes(log_dirs: list[Path], topic: str, partition: int = 0) -> int:
    """Bytes of the partition's live segment files (.log), as ``du`` would count them."""
    for log_dir in log_dirs:
        directory = log_dir / f"{topic}-{partition}"
        if directory.is_dir():
            return sum(f.stat().st_size for f in directory.glob("*.log") if f.is_file())
    return 0


# --------------------------------------------------------------------------------------
# One session: one system's brokers on their own chroot


class Session:
    """One broker (S1-S6) or a cluster of ``size`` brokers, ids 1..size (S7, S8); topics
    are created with as many replicas as there are brokers."""

    def __init__(self, system: str, number: int, work: Path, zookeeper: str, size: int = 1):
        name = f"{system}-{number}"
        connect = f"{zookeeper}/{name}"
        cls = KafkaBroker if system == "kafka" else BrokerProcess
        settings = BROKER_SETTINGS | (CLUSTER_SETTINGS if size > 1 else {})
        self.system, self.number = system, number
        self.connect = connect
        self.directory = work / name
        self.brokers = {
            i: cls(self.directory / f"broker-{i}", connect, broker_id=i, overrides=dict(settings))
            for i in range(1, size + 1)
        }
        self.broker = self.brokers[1]
        self.work = work
        self.admin: AdminClient | None = None
        self.rows: list[dict] = []
        self.latencies: list[float] = []

    @property
    def pid(self) -> int:
        return self.broker.process.pid

    @property
    def pids(self) -> list[int]:
        return [b.process.pid for b in self.brokers.values()]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def _live_pids(self) -> list[int]:
        return [b.process.pid for b in self.brokers.values() if b.process.poll() is None]

    def cpu_seconds(self) -> float:
        """CPU time of the brokers so far, summed (a killed broker counts no more)."""
        return sum(cpu_seconds(pid) for pid in self._live_pids())

    def user_system_seconds(self) -> tuple[float, float]:
        """User and system CPU time of the live brokers so far, each summed."""
        times = [user_system_seconds(pid) for pid in self._live_pids()]
        return sum(t[0] for t in times), sum(t[1] for t in times)

    def record(
        self, scenario: str, case: str, tool: str, metric: str, value, unit: str, **raw
    ) -> None:
        """One figure; ``raw`` (such as every repeat behind a median) goes only to the
        raw JSON."""
        self.rows.append(
            dict(
                system=self.system,
                session=self.number,
                scenario=scenario,
                case=case,
                tool=tool,
                metric=metric,
                value=value,
                unit=unit,
                **raw,
            )
        )
        print(f"  {self.system}#{self.number} {scenario} {case} {tool} {metric}: {value}")

    def record_median(
        self, scenario: str, case: str, tool: str, metric: str, repeats: list, unit: str
    ) -> None:
        """One figure that is the median of ``repeats`` taken within this session; the
        repeats go to the raw JSON beside it, and the report judges the figure by them
        (:func:`summarise`)."""
        value = statistics.median(repeats)
        self.record(scenario, case, tool, metric, value, unit, repeats=repeats)

    def create_topic(self, name: str, partitions: int = 1, configs: dict | None = None):
        """Create with a replica on every broker; return once every partition has a
        leader and a full ISR."""
        topic = NewTopic(name, partitions, len(self.brokers), config=configs or {})
        self.admin.create_topics([topic], operation_timeout=60)[name].result(120)
        wait_until(
            lambda: self.fully_replicated(name, partitions), f"{name}: leaders and full ISRs"
        )

    def partitions(self, topic: str) -> dict:
        """Partition id → librdkafka's PartitionMetadata (leader, replicas, isrs)."""
        metadata = self.admin.list_topics(topic, timeout=10).topics.get(topic)
        return metadata.partitions if metadata and metadata.error is None else {}

    def fully_replicated(self, topic: str, partitions: int) -> bool:
        found = self.partitions(topic).values()
        return len(found) == partitions and all(
            p.leader >= 0 and len(p.isrs) == len(self.brokers) for p in found
        )

    def all_brokers_known(self) -> bool:
        return len(self.admin.list_topics(timeout=10).brokers) == len(self.brokers)

    def start(self) -> None:
        with ThreadPoolExecutor(len(self.brokers)) as pool:  # JVMs start slowly
            list(pool.map(BrokerProcess.start, self.brokers.values()))
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        wait_until(self.all_brokers_known, "every broker in the metadata")

    def stop(self) -> None:
        """SIGTERM each broker in turn. One that does not exit in time has been killed by
        then: say so with its log's tail and go on, the figures are already taken."""
        self.admin = None  # librdkafka would keep reconnecting to the stopped brokers
        for broker_id, broker in self.brokers.items():
            try:
                broker.stop()
            except subprocess.TimeoutExpired as error:
                tail = "\n".join(broker.log().splitlines()[-20:])
                print(
                    f"WARNING {self.system}#{self.number} broker {broker_id}: {error}, "
                    f"killed; its log ends with:\n{tail}",
                    file=sys.stderr,
                    flush=True,
                )

    def __enter__(self) -> Session:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_) -> None:
        self.stop()


# --------------------------------------------------------------------------------------
# Scenarios


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
    """Returns the record counts of the loadgen topics for S2."""
    counts = {}
    with PeakRss(session.pids) as peak:
        for size, codec in S1_CASES:
            case = ProduceCase(f"s1-{size}-{codec}", f"{size}B {codec}", size, codec)
            count = scale.s1_megabytes * loadgen.MB // size
            topic = produce_with_both_tools(session, "S1", case, count, profile=profile)
            counts[(size, codec)] = (topic, count)
    session.record("S6", "under S1", "-", "peak RSS", peak.peak, "MB")
    return counts


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


@contextlib.contextmanager
def collector_paused():
    """Hold Python's cyclic garbage collector off (after one full collection) while this
    process times a client's calls. A full collection of the harness's heap, which keeps
    every session's samples, took 15-40 ms and fell inside whichever call crossed its
    threshold, on either system: S4's metadata p99 was that pause, not the broker."""
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def s4_partitions(session: Session, scale: Scale) -> None:
    """Create a topic of ``s4_partitions`` partitions on a fresh broker, time until each
    has a leader, then metadata requests and a produce over all of them. The page cache's
    dirty pages (whichever system wrote them) are written out first, so that the
    creation's fsyncs do not queue behind them."""
    n = scale.s4_partitions
    case = f"{n} partitions"
    os.sync()
    start = time.perf_counter()
    session.create_topic("s4-many", n)
    session.record("S4", case, "admin", "create → all leaders", time.perf_counter() - start, "s")
    timings = []
    with collector_paused():
        for _ in range(30):
            start = time.perf_counter()
            session.admin.list_topics("s4-many", timeout=10)
            timings.append((time.perf_counter() - start) * 1000)
    for p, value in loadgen.percentiles(timings, (50, 99)).items():
        session.record("S4", case, "admin", f"metadata {p}", value, "ms")
    count = scale.s4_megabytes * loadgen.MB // 1024
    result = loadgen.produce(session.bootstrap, "s4-many", count, 1024, partitions=n)
    session.record("S4", case, "loadgen", "throughput", result.mb_per_s, "MB/s")


def s5_compaction(session: Session, scale: Scale) -> None:
    """Produce with ``cleanup.policy=delete`` (nothing cleans while records arrive), then
    switch the topic to ``compact`` and time until its size on disk stops shrinking:
    both cleaners start from the same log at the same moment."""
    topic, keys = "s5-compacted", scale.s5_keys
    case = f"{keys:,} keys x {scale.s5_values_per_key}"
    configs = COMPACTED_TOPIC | {
        "segment.bytes": str(scale.s5_segment_bytes),
        "segment.ms": str(scale.s5_segment_ms),
        "cleanup.policy": "delete",
        "retention.ms": "-1",
    }
    session.create_topic(topic, 1, configs)
    count = keys * scale.s5_values_per_key
    result = loadgen.produce(session.bootstrap, topic, count, 100, keys=keys)
    session.record("S5", case, "loadgen", "produce", result.mb_per_s, "MB/s")
    time.sleep(scale.s5_segment_ms / 1000 + 1)  # let the last segment roll
    log_dirs = session.broker.log_dirs
    before = last = partition_bytes(log_dirs, topic)
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    session.admin.incremental_alter_configs([resource])[resource].result(60)
    start = last_change = time.monotonic()
    while time.monotonic() - start < scale.s5_timeout_s:
        time.sleep(0.5)
        now = partition_bytes(log_dirs, topic)
        if now != last:
            last, last_change = now, time.monotonic()
        elif last < before and time.monotonic() - last_change > scale.s5_stable_s:
            break
    session.record("S5", case, "disk", "bytes before", before, "B")
    session.record("S5", case, "disk", "bytes after", last, "B")
    cleaned = last < before
    session.record(
        "S5", case, "disk", "time to clean", last_change - start if cleaned else None, "s"
    )


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


def s7_replicated_produce(session: Session, scale: Scale) -> None:
    """Both tools at acks=all and acks=1 into 6-partition RF=3 topics, as fast as they
    go; then kafka-producer-perf-test at :data:`S7_PACED_RATE`; peak summed RSS."""
    count = scale.s7_megabytes * loadgen.MB // 1024
    with PeakRss(session.pids) as peak:
        for acks in S7_ACKS:
            label = f"{S7_PARTITIONS}p RF={CLUSTER_SIZE} 1KiB acks={acks}"
            case = ProduceCase(f"s7-acks-{acks}", label, 1024, acks=acks, partitions=S7_PARTITIONS)
            produce_with_both_tools(session, "S7", case, count, REPLICATED_TOPIC)
            s7_paced(session, scale, case)
    session.record("S7", "during S7", "-", f"peak RSS, sum of {CLUSTER_SIZE}", peak.peak, "MB")


def s7_paced(session: Session, scale: Scale, case: ProduceCase) -> None:
    """kafka-producer-perf-test at :data:`S7_PACED_RATE` for ``s7_paced_seconds``: the
    rate it held and its ack latencies, those of the brokers' replication."""
    topic = f"{case.name}-paced"
    session.create_topic(topic, case.partitions, REPLICATED_TOPIC)
    result = perf_tools.producer_perf_test(
        session.bootstrap,
        topic,
        S7_PACED_RATE * scale.s7_paced_seconds,
        case.size,
        case.codec,
        case.acks,
        throughput=S7_PACED_RATE,
    )
    label = f"{case.label}, {S7_PACED_RATE:,} records/s"
    session.record("S7", label, "perf-test", "achieved rate", result.mb_per_s, "MB/s")
    record_acks(session, "S7", label, "perf-test", result)


def leader_moved(connect: str, topic: str, partition: int, away_from: int) -> ZnodeWatch:
    """When the partition's state in ZooKeeper first names a leader other than
    ``away_from``: the controller's election is written (both systems keep Kafka's
    layout)."""

    def moved(data: bytes | None) -> bool:
        return data is not None and json.loads(data)["leader"] not in (away_from, -1)

    return ZnodeWatch(connect, f"/brokers/topics/{topic}/partitions/{partition}/state", moved)


@dataclass(frozen=True)
class Failover:
    """One kill -9 of a leader, as ``time.perf_counter`` moments: the kill, the expiry of
    the killed broker's ZooKeeper session and the new leader written to ZooKeeper."""

    killed: int
    killed_at: float
    expired_at: float
    elected_at: float

    @property
    def cluster_figures(self) -> dict[str, float]:
        """Seconds until ZooKeeper expired the killed broker's session, and until the
        controller had written the new leader (the cluster's share of the failover: after
        the expiry on Kafka, which learns of the kill from it; before it on tidelog, whose
        controller is refused a connection by the dead broker at once)."""
        return {
            "until session expiry": self.expired_at - self.killed_at,
            "kill → new leader in ZooKeeper": self.elected_at - self.killed_at,
        }

    def client_figures(self, first_ack: float) -> dict[str, float]:
        """One client's failover, ``first_ack`` seconds from the kill to the first
        acknowledgement of a record sent after it, and its part after the election (the
        client's metadata refresh, reconnecting, the produce)."""
        return {
            "failover time": first_ack,
            "new leader → first ack": self.killed_at + first_ack - self.elected_at,
        }


def wait_for_phase(phase: float, period: float) -> None:
    """Sleep until ``time.perf_counter()`` is ``phase`` seconds past a multiple of
    ``period``."""
    time.sleep((phase - time.perf_counter()) % period)


def kill_leader(
    session: Session, topic: str, clients: dict[str, loadgen.Acknowledgements], delay: float
) -> tuple[Failover, dict[str, float]]:
    """kill -9 the leader of ``topic``-0, ``delay`` seconds after it is known, while
    ``clients`` write to it; the kill and each client's seconds to its first
    acknowledgement after it."""
    for client in clients.values():
        client.first_ack_after(time.perf_counter())  # acknowledgements are flowing

    def leader_after_delay() -> tuple[int, ZnodeWatch] | None:
        """The leader the metadata names and the watch for its move, if ZooKeeper still
        names it after the delay."""
        leader = session.partitions(topic)[0].leader
        time.sleep(delay)
        election = leader_moved(session.connect, topic, 0, leader)
        if election.seen_at is None:
            return leader, election
        election.close()
        return None

    leader, election = wait_until(leader_after_delay, f"{topic}-0: a leader ZooKeeper names")
    registration = registration_gone(session.connect, leader)
    killed_at = time.perf_counter()
    session.brokers[leader].kill()
    first_acks = {tool: client.first_ack_after(killed_at) for tool, client in clients.items()}
    expired_at = registration.wait(f"broker {leader}'s registration gone")
    elected_at = election.wait(f"{topic}-0 led by another broker than {leader}")
    return Failover(leader, killed_at, expired_at, elected_at), first_acks


def rejoin(session: Session, topic: str, broker_id: int) -> None:
    """Start a killed broker again once its registration is gone from ZooKeeper (a
    tidelog controller takes a killed broker out of Metadata before that); wait for a
    full ISR."""
    registration_gone(session.connect, broker_id).wait(
        f"broker {broker_id}'s ZooKeeper session expired"
    )
    session.brokers[broker_id].start()
    wait_until(lambda: session.fully_replicated(topic, 1), f"{topic}: full ISR again")


def s8_failover(session: Session, scale: Scale, rank: int) -> None:
    """Both clients (:data:`S8_CLIENTS`) write to the partition through the same kills.
    ``rank``: how many cluster sessions of this system came before; the kth session of
    each system creates its producers at the same phase of ZooKeeper's tick
    (:data:`ZOOKEEPER_TICK_MS`) and waits the same delays before its kills."""
    topic = "s8-failover"
    timeout = CLUSTER_SETTINGS["zookeeper.session.timeout.ms"]
    case = f"kill -9 leader, zk session {timeout} ms"
    session.create_topic(topic, 1, REPLICATED_TOPIC)
    figures = defaultdict(list)  # (tool, figure) → seconds, one per kill
    phases = random.Random(rank)
    wait_for_phase(phases.uniform(0, ZOOKEEPER_TICK_MS / 1000), ZOOKEEPER_TICK_MS / 1000)
    java_log = session.directory / "s8-java-producer.log"
    with (
        loadgen.PacedProducer(session.bootstrap, topic) as librdkafka,
        perf_tools.JavaPacedProducer(session.bootstrap, topic, java_log) as java,
    ):
        clients = dict(zip(S8_CLIENTS, (librdkafka, java), strict=True))
        for repeat in range(1, scale.s8_failovers + 1):
            delay = phases.uniform(0, S8_PING_CYCLE_S)
            failover, first_acks = kill_leader(session, topic, clients, delay)
            for figure, seconds in failover.cluster_figures.items():
                session.record("S8", case, "-", figure, seconds, "s")
            for tool, first_ack in first_acks.items():
                for figure, seconds in failover.client_figures(first_ack).items():
                    session.record("S8", case, tool, figure, seconds, "s")
                    figures[tool, figure].append(seconds)
            if repeat < scale.s8_failovers:
                rejoin(session, topic, failover.killed)
    medians = {
        "failover time": "failover median",
        "new leader → first ack": "new leader → first ack, median",
    }
    for tool in S8_CLIENTS:
        for figure, name in medians.items():
            session.record("S8", case, tool, name, statistics.median(figures[tool, figure]), "s")


def s9_rebalance(session: Session, scale: Scale, rank: int) -> None:
    """A Stable group of 3 consuming members, a 4th subscribes: the time until all 4 hold
    their part of the balanced assignment (for the eager assignor, the time during which
    the group consumes nothing), then until the 3 hold it again after the 4th leaves.
    ``rank`` as for :func:`run_session`: the kth session of each system meets the old
    members' heartbeats at the same phases (``groupload.rebalance``)."""
    repeats = {"range": scale.s9_repeats, "cooperative-sticky": scale.s9_cooperative_repeats}
    for assignor in S9_ASSIGNORS:
        topic = f"s9-{assignor}"
        session.create_topic(topic, S9_PARTITIONS)
        result = groupload.run(
            "rebalance",
            bootstrap=session.bootstrap,
            topic=topic,
            partitions=S9_PARTITIONS,
            members=S9_MEMBERS,
            repeats=repeats[assignor],
            assignor=assignor,
            seed=rank,
        )
        case = f"{S9_MEMBERS}→{S9_MEMBERS + 1} members, {S9_PARTITIONS}p, {assignor}"
        joins = [s * 1000 for s in result["join_s"]]
        leaves = [s * 1000 for s in result["leave_s"]]
        raw = {
            k: result[k]
            for k in (
                "first_balanced_s",
                "extra_callbacks",
                "lost_callbacks",
                "consumed",
                "errors",
                "client_log",
            )
        }
        session.record(
            "S9", case, "groupload", "join median", statistics.median(joins), "ms", samples=joins
        )
        session.record("S9", case, "groupload", "join max", max(joins), "ms")
        session.record(
            "S9",
            case,
            "groupload",
            "leave median",
            statistics.median(leaves),
            "ms",
            samples=leaves,
            **raw,
        )
        if any(raw[k] for k in ("extra_callbacks", "lost_callbacks", "errors", "client_log")):
            warn(session, f"S9 {assignor}", raw)


def s10_commits(session: Session, scale: Scale) -> None:
    """One member of a group, owning all 12 partitions of a topic, commits an offset for
    each in a loop: synchronously (after ``s10_warmup_seconds`` of the same untimed),
    then with up to 16 commits in flight."""
    topic = "s10-commits"
    session.create_topic(topic, S10_PARTITIONS)
    results = groupload.run(
        "commit",
        bootstrap=session.bootstrap,
        topic=topic,
        partitions=S10_PARTITIONS,
        seconds=scale.s10_seconds,
        window=S10_WINDOW,
        warmup=scale.s10_warmup_seconds,
    )
    for mode, label in (("sync", "sync"), ("async", f"async ≤{S10_WINDOW} in flight")):
        result = results[mode]
        case = f"{S10_PARTITIONS} offsets/commit, {label}"
        raw = {k: result[k] for k in ("commits", "seconds", "failed", "unanswered", "out_of_order")}
        raw |= {k: results[k] for k in ("errors", "client_log")}  # of the process: both modes
        session.record(
            "S10", case, "groupload", "commits", result["commits_per_s"], "commits/s", **raw
        )
        session.record(
            "S10", case, "groupload", "offsets committed", result["offsets_per_s"], "offsets/s"
        )
        for p, value in result["latency_ms"].items():
            session.record("S10", case, "groupload", f"commit {p}", value, "ms")
        if any(raw[k] for k in ("failed", "unanswered", "out_of_order", "errors", "client_log")):
            warn(session, f"S10 {mode}", raw)


def warn(session: Session, what: str, raw: dict) -> None:
    """A figure was taken, but the clients saw something wrong: say what."""
    print(
        f"WARNING {session.system}#{session.number} {what}: {json.dumps(raw)}",
        file=sys.stderr,
        flush=True,
    )


def start_profile(session: Session, profile: Path | None, name: str):
    if profile is None or session.system != "tidelog":
        return None
    spy = Path(sys.executable).with_name("py-spy")
    out = profile / f"{name}-session{session.number}.svg"
    return subprocess.Popen(
        [str(spy), "record", "--pid", str(session.pid), "--output", str(out), "--rate", "200"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


def stop_profile(spy: subprocess.Popen | None) -> None:
    if spy is not None:
        spy.send_signal(2)
        spy.wait(60)


def run_session(
    session: Session, scale: Scale, rank: int, profile: Path | None, scenarios: set[str]
) -> None:
    """The chosen ``scenarios`` of S1-S6, S9, S10, S12; S2 and S6 need S1's load, so either
    brings S1 along. ``rank``: how many single-broker sessions of this system came
    before; S5 runs in the first only."""
    first = rank == 0
    print(f"== {session.system} session {session.number}", flush=True)
    with session:
        if "S6" in scenarios:
            time.sleep(2)
            session.record("S6", "idle", "-", "RSS", rss_mb(session.pid), "MB")
        if scenarios & {"S1", "S2", "S6"}:
            counts = s1_produce(session, scale, profile)
        if "S2" in scenarios:
            s2_consume(session, counts, scale.s2_reads, profile)
        if "S3" in scenarios:
            s3_latency(session, scale)
        if first and "S5" in scenarios:
            s5_compaction(session, scale)
        if "S12" in scenarios:
            s12_spark(session, scale)
        if "S9" in scenarios:
            s9_rebalance(session, scale, rank)
        if "S10" in scenarios:
            s10_commits(session, scale)


def run_cluster_session(session: Session, scale: Scale, scenarios: set[str], rank: int) -> None:
    print(f"== {session.system} cluster session {session.number}", flush=True)
    with session:
        if "S7" in scenarios:
            s7_replicated_produce(session, scale)
        if "S8" in scenarios:
            s8_failover(session, scale, rank)


# --------------------------------------------------------------------------------------
# Report

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


def plot(summary: list[dict], sessions: list[Session], stem: Path) -> list[str]:
    """The report's plots, as file names beside ``stem``: only those the chosen scenarios
    have data for (a run of S13 alone has no throughput bars and no S3 latencies). Each
    chart draws itself to its path and says whether it had anything to draw."""
    import matplotlib

    matplotlib.use("Agg")
    charts = {
        "throughput": lambda path: _plot_throughput(summary, path),
        "latency-cdf": lambda path: _plot_latency_cdf(sessions, path),
        "reassignment-acks": lambda path: reassignment.plot_ack_latency(sessions, path),
    }
    images = []
    for name, draw in charts.items():
        path = stem.with_name(f"{stem.name}-{name}.png")
        if draw(path):
            images.append(path.name)
    return images


def _plot_throughput(summary: list[dict], path: Path) -> bool:
    bars = [s for s in summary if s["metric"] == "throughput"]
    if not bars:
        return False
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(max(8, len(bars) * 0.8), 5))
    positions = range(len(bars))
    for offset, system in ((-0.2, "kafka"), (0.2, "tidelog")):
        axes.bar(
            [p + offset for p in positions],
            [s[system] or 0 for s in bars],
            width=0.4,
            label=system,
        )
    axes.set_xticks(list(positions))
    axes.set_xticklabels(
        [f"{s['scenario']} {s['case']}\n{s['tool']}" for s in bars], rotation=45, ha="right"
    )
    axes.set_ylabel("MB/s (mean over sessions)")
    axes.set_title("Throughput: Apache Kafka vs tidelog")
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


def _plot_latency_cdf(sessions: list[Session], path: Path) -> bool:
    measured = [s for s in sessions if s.latencies]
    if not measured:
        return False
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    for session in measured:
        ordered = sorted(session.latencies)
        fraction = [(i + 1) / len(ordered) for i in range(len(ordered))]
        style = "-" if session.system == "kafka" else "--"
        axes.plot(ordered, fraction, style, label=f"{session.system} #{session.number}")
    axes.set_xscale("log")
    axes.set_xlabel("end-to-end latency, ms (log scale)")
    axes.set_ylabel("fraction of records")
    axes.set_title("S3 end-to-end latency CDF")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True


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
        "## Plots",
        "",
        *[f"![{name}]({name})" for name in images],
        "",
    ]
    report = stem.with_suffix(".md")
    report.write_text("\n".join(lines))
    stem.with_name(stem.name + "-raw.json").write_text(json.dumps(rows, indent=1))
    return report


def alternating(count: int) -> list[str]:
    """A B B A A B B A ...: Kafka first."""
    pattern = ["kafka", "tidelog", "tidelog", "kafka"]
    return [pattern[i % 4] for i in range(count)]


def run_sessions(
    work: Path,
    zookeeper: str,
    scale: Scale,
    order: list[str],
    cluster_order: list[str],
    profile: Path | None,
    scenarios: set[str],
) -> list[Session]:
    """The single-broker sessions in ``order``, then S4's (A B B A),
    the cluster sessions, S11's four-broker sessions, S13's three-broker ones and S14's
    (one per system, Kafka first)."""
    sessions = []
    for number, system in enumerate(order):
        sessions.append(Session(system, number, work, zookeeper))
        run_session(sessions[-1], scale, order[:number].count(system), profile, scenarios)
        shutil.rmtree(sessions[-1].directory, ignore_errors=True)
    if scenarios & PARTITIONS_SCENARIOS:
        run_per_system(
            sessions,
            work,
            zookeeper,
            ("partitions", 1),
            lambda session: s4_partitions(session, scale),
            order=alternating(scale.s4_sessions),
        )
    for number, system in enumerate(cluster_order):
        # Numbered on: a session's number names its chroot.
        sessions.append(Session(system, len(sessions), work, zookeeper, size=CLUSTER_SIZE))
        run_cluster_session(sessions[-1], scale, scenarios, cluster_order[:number].count(system))
        shutil.rmtree(sessions[-1].directory, ignore_errors=True)
    if scenarios & REASSIGNMENT_SCENARIOS:
        run_per_system(
            sessions,
            work,
            zookeeper,
            ("reassignment", reassignment.S11_BROKERS),
            lambda session: reassignment.s11_reassignment(
                session, scale.s11_megabytes, scale.s11_throttle_mb, scale.s11_repeats
            ),
        )
    if scenarios & RESTART_SCENARIOS:
        run_per_system(
            sessions,
            work,
            zookeeper,
            ("restart", restart.S13_BROKERS),
            lambda session: restart.s13_restart(session, scale.s13_partitions, scale.s13_megabytes),
        )
    if scenarios & WIDE_FETCH_SCENARIOS:
        run_per_system(
            sessions,
            work,
            zookeeper,
            ("wide fetch", wide_fetch.S14_BROKERS),
            lambda session: wide_fetch.s14_wide_fetch(
                session, scale.s14_partitions, scale.s14_seconds, scale.s14_megabytes
            ),
        )
    return sessions


def run_per_system(
    sessions: list[Session],
    work: Path,
    zookeeper: str,
    kind: tuple[str, int],
    scenario: Callable[[Session], None],
    order: Sequence[str] = SYSTEMS,
) -> None:
    """A session of ``kind`` (its name and number of brokers) for each system in
    ``order`` (by default one each, Kafka first), each running ``scenario``; appended
    to ``sessions``."""
    name, size = kind
    for system in order:
        number = len(sessions)
        sessions.append(Session(system, number, work, zookeeper, size=size))
        print(f"== {system} {name} session {number}", flush=True)
        with sessions[-1] as session:
            scenario(session)
        shutil.rmtree(sessions[-1].directory, ignore_errors=True)


def chosen_scenarios(text: str) -> set[str]:
    """``--scenarios S9,S10`` (case-insensitive); every scenario by default."""
    chosen = {name.strip().upper() for name in text.split(",") if name.strip()}
    if unknown := chosen - set(SCENARIOS):
        raise argparse.ArgumentTypeError(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run (about 2 min)")
    parser.add_argument("--sessions", type=int, help="broker sessions, alternating A B B A")
    parser.add_argument(
        "--cluster-sessions", type=int, help="3-broker sessions (S7, S8), alternating A B B A"
    )
    parser.add_argument("--profile", action="store_true", help="py-spy the tidelog broker")
    parser.add_argument(
        "--scenarios",
        type=chosen_scenarios,
        default=set(SCENARIOS),
        help="only these, comma-separated, e.g. S9,S10 (default: all; S2 and S6 bring S1 "
        "along); sessions that would run none of them are skipped",
    )
    parser.add_argument("--output", type=Path, default=RESULTS)
    args = parser.parse_args()
    scale = QUICK if args.quick else FULL
    if args.cluster_sessions is not None:
        scale = dataclasses.replace(scale, cluster_sessions=args.cluster_sessions)
    single = (
        args.scenarios
        - PARTITIONS_SCENARIOS
        - CLUSTER_SCENARIOS
        - REASSIGNMENT_SCENARIOS
        - RESTART_SCENARIOS
        - WIDE_FETCH_SCENARIOS
    )
    order = alternating(scale.sessions if args.sessions is None else args.sessions)
    order = order if single else []
    clustered = args.scenarios & CLUSTER_SCENARIOS
    cluster_order = alternating(scale.cluster_sessions) if clustered else []
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    today = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d")
    args.output.mkdir(parents=True, exist_ok=True)
    stem = args.output / f"{today}{'-quick' if args.quick else ''}-{commit}"
    if args.scenarios != set(SCENARIOS):  # a partial run's report is named as such
        chosen = sorted(args.scenarios, key=lambda name: int(name[1:]))
        stem = stem.with_name(f"{stem.name}-{'-'.join(chosen)}")
    profile = None
    if args.profile:
        profile = stem.with_name(stem.name + "-profiles")
        profile.mkdir(exist_ok=True)
    software = versions()  # before the run: the code the brokers run, not later edits
    began = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="tidelog-bench-") as base:
        work = Path(base)
        zookeeper = ZooKeeperServer(work / "zookeeper", port=0, tick_time=ZOOKEEPER_TICK_MS).start()
        try:
            sessions = run_sessions(
                work,
                zookeeper.connect_string,
                scale,
                order,
                cluster_order,
                profile,
                args.scenarios,
            )
        finally:
            zookeeper.stop()
    if args.scenarios & PARTITIONS_SCENARIOS:
        order += [f"{system} partitions" for system in alternating(scale.s4_sessions)]
    order += [f"{system} cluster" for system in cluster_order]
    if args.scenarios & REASSIGNMENT_SCENARIOS:
        order += [f"{system} reassignment" for system in SYSTEMS]
    if args.scenarios & RESTART_SCENARIOS:
        order += [f"{system} restart" for system in SYSTEMS]
    if args.scenarios & WIDE_FETCH_SCENARIOS:
        order += [f"{system} wide fetch" for system in SYSTEMS]
    report = write_report(stem, scale, order, sessions, time.monotonic() - began, software)
    print(f"wrote {report.relative_to(ROOT) if report.is_relative_to(ROOT) else report}")


if __name__ == "__main__":
    main()
