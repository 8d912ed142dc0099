"""What every part of ``make bench`` shares: where it lives and writes, the two systems,
the settings both systems' brokers get, and the scale of a run (:data:`FULL`, or
:data:`QUICK` for ``--quick``).

Only constants and the :class:`Scale` dataclass: nothing here starts a process.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = [
    "BROKER_SETTINGS",
    "CLUSTER_SETTINGS",
    "CLUSTER_SIZE",
    "FULL",
    "QUICK",
    "REPLICATED_TOPIC",
    "RESULTS",
    "ROOT",
    "SYSTEMS",
    "ZOOKEEPER_TICK_MS",
    "Scale",
]

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
SYSTEMS = ("kafka", "tidelog")

# The same broker settings for both systems. Segment size and flush policy are both
# systems' defaults (1 GiB, no fsync per write: log.flush.interval.messages unset; S1's
# flush cases set flush.messages=1 on their topics, throughput.S1_FLUSH_TOPIC); the
# cleaner settings make S5 observable within minutes.
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
# The run's ZooKeeper expires sessions only on multiples of its tick of CLOCK_MONOTONIC
# (time.perf_counter's clock), and librdkafka looks for leaderless partitions on a 1 s
# timer that starts with its producer: S8 creates its producers at a phase of the tick
# drawn like the kills' delays, the same for both systems (bench/results/README.md).
ZOOKEEPER_TICK_MS = 2000


@dataclass(frozen=True)
class Scale:
    s1_megabytes: int  # per S1 case and tool
    s1_flush_sizes: tuple[int, ...]  # record sizes of S1's flush.messages=1 cases
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
    s15_megabytes: int  # per S15 produce case, listener and tool
    s15_reads: int  # of each S15 loadgen topic per listener; the figure is their median
    s15_connection_seconds: float  # of SCRAM connections one after another
    s15_acls: int  # added for S15's authorizer case
    s15_acl_repeats: int  # of each S15 authorizer case's produce; the figure is the median
    s15_sessions: int  # alternating A B B A
    sessions: int
    cluster_sessions: int


FULL = Scale(
    s1_megabytes=100,
    s1_flush_sizes=(100, 1024),
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
    s15_megabytes=100,
    s15_reads=5,
    s15_connection_seconds=10,
    s15_acls=10_000,
    s15_acl_repeats=3,
    s15_sessions=4,
    sessions=4,
    cluster_sessions=2,
)
QUICK = Scale(
    s1_megabytes=4,
    s1_flush_sizes=(1024,),
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
    s15_megabytes=4,
    s15_reads=2,
    s15_connection_seconds=2,
    s15_acls=10_000,
    s15_acl_repeats=1,
    s15_sessions=2,
    sessions=2,
    cluster_sessions=2,
)
