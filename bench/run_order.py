"""Which sessions a ``make bench`` run holds, in which order, and what each runs: the
single-broker sessions alternating A B B A, S4's sessions, the cluster sessions, then
one session per system for S11, S13 and S14, and S15's secured single-broker sessions
(A B, or A B B A). Each session is started, runs its
scenarios, is stopped and its directory removed before the next starts: only one
system runs at a time.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import reassignment
import restart
import secured
import wide_fetch
from cluster import s7_replicated_produce, s8_failover
from groups import s9_rebalance, s10_commits
from log_files import s4_partitions, s5_compaction
from measure import rss_mb
from session import Session
from settings import CLUSTER_SIZE, SYSTEMS, Scale
from spark_pipeline import s12_spark
from throughput import s1_produce, s2_consume, s3_latency

__all__ = [
    "CLUSTER_SCENARIOS",
    "PARTITIONS_SCENARIOS",
    "REASSIGNMENT_SCENARIOS",
    "RESTART_SCENARIOS",
    "SCENARIOS",
    "SECURITY_SCENARIOS",
    "WIDE_FETCH_SCENARIOS",
    "alternating",
    "run_cluster_session",
    "run_per_system",
    "run_session",
    "run_sessions",
]

SCENARIOS = tuple(f"S{n}" for n in range(1, 16))
CLUSTER_SCENARIOS = {"S7", "S8"}
PARTITIONS_SCENARIOS = {"S4"}
REASSIGNMENT_SCENARIOS = {"S11"}
RESTART_SCENARIOS = {"S13"}
WIDE_FETCH_SCENARIOS = {"S14"}
SECURITY_SCENARIOS = {"S15"}


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
    (one per system, Kafka first), then S15's (alternating A B B A)."""
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
    if scenarios & SECURITY_SCENARIOS:
        run_per_system(
            sessions,
            work,
            zookeeper,
            ("security", 1),
            lambda session: secured.s15_security(session, scale),
            order=alternating(scale.s15_sessions),
            session_type=secured.SecureSession,
        )
    return sessions


def run_per_system(
    sessions: list[Session],
    work: Path,
    zookeeper: str,
    kind: tuple[str, int],
    scenario: Callable[[Session], None],
    order: Sequence[str] = SYSTEMS,
    session_type: type[Session] = Session,
) -> None:
    """A session of ``kind`` (its name and number of brokers) for each system in
    ``order`` (by default one each, Kafka first), each a ``session_type`` running
    ``scenario``; appended to ``sessions``."""
    name, size = kind
    for system in order:
        number = len(sessions)
        sessions.append(session_type(system, number, work, zookeeper, size=size))
        print(f"== {system} {name} session {number}", flush=True)
        with sessions[-1] as session:
            scenario(session)
        shutil.rmtree(sessions[-1].directory, ignore_errors=True)


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
