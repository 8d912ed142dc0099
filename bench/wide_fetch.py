"""S14 of ``make bench``: fetching 1,000 partitions, where incremental fetch sessions
(KIP-227) pay off, tidelog and Apache Kafka alike.

On three brokers, a topic of ``partitions`` partitions with three replicas (every broker
leads a third and follows the rest), then

1. idle: the brokers' summed CPU over ``seconds`` while nothing is written, so all
   that runs is the followers' long-polling fetches of every partition (in a session,
   each names nothing and is answered with nothing);
2. trickle: ``kafka-producer-perf-test`` sends ``TRICKLE_RATE`` records of 100 B a
   second, acks=all, spread over every partition, for ``seconds``: the brokers'
   CPU and the acknowledgement latencies (each record waits for two followers' fetches);
3. consume: ``megabytes`` of 1 KiB records more (acks=all), then Kafka's own
   ``kafka-consumer-perf-test``, the Java consumer with its fetch sessions, reads the
   whole topic in a new group, ``S14_READS`` times: the median of its records per
   second of fetch time. One read lasts about two seconds in a fresh JVM, and a single
   read's figure moved from 70,089 to 114,285 records/s between two runs on Kafka
   (2026-12-03-4db3cdb and -f94d10b).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

import loadgen
import perf_tools
from bench_waiting import wait_until
from confluent_kafka.admin import NewTopic

__all__ = ["S14_BROKERS", "S14_READS", "s14_wide_fetch", "settings_line"]

S14_BROKERS = 3
TOPIC = "s14-wide"
TRICKLE_RATE = 1000
S14_READS = 3
T = TypeVar("T")


def settings_line(partitions: int, seconds: int, megabytes: int) -> str:
    return (
        f"- S14 (fetching {partitions:,} partitions): {S14_BROKERS} brokers, a "
        f"{partitions:,}-partition RF={S14_BROKERS} topic; broker CPU (summed, % of one "
        f"core) idle for {seconds} s and under a trickle of {TRICKLE_RATE} records/s "
        f"of 100 B (acks=all, kafka-producer-perf-test) for {seconds} s; then "
        f"{megabytes:,} MB of 1 KiB records more, and the whole topic read by "
        f"kafka-consumer-perf-test (the Java consumer, fetch sessions on) {S14_READS} times, "
        "each in a new group (the median)"
    )


def _cpu_percent(session, work: Callable[[], T]) -> tuple[float, dict, T]:
    """The brokers' summed CPU, in % of one core, while ``work()`` runs; its user and
    system parts (for the raw JSON: an idle figure that jumps between runs shows
    whether the kernel's work on the brokers' behalf or their own grew); and what
    ``work()`` returned."""
    cpu, (user, system) = session.cpu_seconds(), session.user_system_seconds()
    began = time.perf_counter()
    result = work()
    elapsed = time.perf_counter() - began
    user_after, system_after = session.user_system_seconds()
    parts = {
        "user_percent": 100 * (user_after - user) / elapsed,
        "system_percent": 100 * (system_after - system) / elapsed,
    }
    return 100 * (session.cpu_seconds() - cpu) / elapsed, parts, result


def s14_wide_fetch(session, partitions: int, seconds: int, megabytes: int) -> None:
    topic = NewTopic(TOPIC, partitions, S14_BROKERS)
    session.admin.create_topics([topic], operation_timeout=120)[TOPIC].result(300)
    wait_until(lambda: session.fully_replicated(TOPIC, partitions), "topic fully replicated")
    case = f"{partitions:,} partitions RF={S14_BROKERS}"

    time.sleep(5)  # the followers' first, full fetches done
    idle, parts, _ = _cpu_percent(session, lambda: time.sleep(seconds))
    session.record("S14", f"{case}, idle", "-", "broker CPU", idle, "% of a core", **parts)

    count = TRICKLE_RATE * seconds
    busy, parts, trickle = _cpu_percent(
        session,
        lambda: perf_tools.producer_perf_test(
            session.bootstrap, TOPIC, count, 100, "none", acks="all", throughput=TRICKLE_RATE
        ),
    )
    trickle_case = f"{case}, {TRICKLE_RATE} records/s"
    session.record("S14", trickle_case, "perf-test", "broker CPU", busy, "% of a core", **parts)
    for p in ("p50", "p99"):
        session.record("S14", trickle_case, "perf-test", f"ack {p}", trickle.latency_ms[p], "ms")

    filled = megabytes * loadgen.MB // 1024
    loadgen.produce(session.bootstrap, TOPIC, filled, 1024, partitions=partitions, acks="all")
    reads = [
        perf_tools.consumer_perf_test(
            session.bootstrap, TOPIC, count + filled, f"s14-reader-{n}"
        ).records_per_s
        for n in range(S14_READS)
    ]
    session.record_median("S14", case, "consumer-perf-test", "records", reads, "rec/s")
