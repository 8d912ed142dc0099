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
where fetch sessions count; ``bench/wide_fetch.py``). S15 (security) comes last, in
single-broker sessions of its own (A B B A): a PLAINTEXT and a SASL_SSL listener with
SCRAM-SHA-512, the ACL authorizer on (``bench/secured.py``). The same load generators run
unchanged against both: Kafka's ``kafka-producer-perf-test`` and ours
(``bench/loadgen.py`` and, for the groups, ``bench/groupload.py``; confluent-kafka).

This module is the command line; the harness's parts are modules beside it:
``settings`` (the systems, both brokers' settings, the scale of a run), ``session`` (one
system's brokers, started and stopped, and the figures taken on them), ``run_order``
(which sessions, in which order, running what), ``measure`` (a broker's RSS and CPU, a
partition's bytes, timing without the garbage collector, py-spy), one module per family
of scenarios (``throughput``: S1, S2, S3, S6; ``log_files``: S4, S5; ``cluster``: S7,
S8; ``groups``: S9, S10; ``spark_pipeline``: S12; and ``reassignment``, ``restart``,
``wide_fetch``, ``secured``), and ``report`` and ``plots`` (the files a run writes).

Writes ``bench/results/<UTC date>-<short commit>.md`` and PNG plots next to it.
Usage: ``python bench/compare.py [--quick] [--sessions N] [--cluster-sessions N]
[--scenarios S9,S10] [--profile]``.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime
import subprocess
import tempfile
import time
from pathlib import Path

from report import versions, write_report
from run_order import (
    CLUSTER_SCENARIOS,
    PARTITIONS_SCENARIOS,
    REASSIGNMENT_SCENARIOS,
    RESTART_SCENARIOS,
    SCENARIOS,
    SECURITY_SCENARIOS,
    WIDE_FETCH_SCENARIOS,
    alternating,
    run_sessions,
)
from settings import FULL, QUICK, RESULTS, ROOT, SYSTEMS, ZOOKEEPER_TICK_MS

from tidelog.zookeeper import ZooKeeperServer


def chosen_scenarios(text: str) -> set[str]:
    """``--scenarios S9,S10`` (case-insensitive); every scenario by default."""
    chosen = {name.strip().upper() for name in text.split(",") if name.strip()}
    if unknown := chosen - set(SCENARIOS):
        raise argparse.ArgumentTypeError(f"unknown scenarios: {', '.join(sorted(unknown))}")
    return chosen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a tiny run (about 9 min on 2 cores)")
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
        - SECURITY_SCENARIOS
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
    if args.scenarios & SECURITY_SCENARIOS:
        order += [f"{system} security" for system in alternating(scale.s15_sessions)]
    report = write_report(stem, scale, order, sessions, time.monotonic() - began, software)
    print(f"wrote {report.relative_to(ROOT) if report.is_relative_to(ROOT) else report}")


if __name__ == "__main__":
    main()
