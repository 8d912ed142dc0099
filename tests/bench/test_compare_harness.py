"""Smoke test of ``make bench``'s harness: a tiny run against both systems (single
brokers, with S12's Spark job, then 3-broker clusters, then 4-broker reassignments, then
3-broker restarts and 3-broker wide fetches, then S15's secured single brokers)
writes a report with a figure of each system for every scenario, and its plots.

It asserts that the harness measures, never what it measured: no timing assertion.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {f"S{n}" for n in range(1, 16)}
SYSTEMS = ("kafka", "tidelog")
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
QUICK_RUN_LIMIT_S = 1500


def _s15_figures(acls: int) -> set[tuple[str, str, str]]:
    """(case, tool, metric) of every S15 figure of one system."""
    figures = set()
    for codec in ("none", "lz4"):
        case = f"1 KiB {codec}"
        for tool in ("perf-test", "loadgen"):
            figures |= {
                (f"produce {case}, {listener}", tool, "throughput")
                for listener in ("PLAINTEXT", "SASL_SSL")
            }
            figures.add((f"produce {case}", tool, "SASL_SSL / PLAINTEXT"))
        figures |= {
            (f"consume {case}, {listener}", "loadgen", "throughput")
            for listener in ("PLAINTEXT", "SASL_SSL")
        }
        figures.add((f"consume {case}", "loadgen", "SASL_SSL / PLAINTEXT"))
    figures.add(("SCRAM-SHA-512 connections over SASL_SSL", "python client", "connections"))
    acl_case = "produce 1 KiB none, SASL_SSL, User:bench"
    figures |= {
        (f"{acl_case}, 1 ACL", "loadgen", "throughput"),
        (f"{acl_case}, {acls + 1:,} ACLs", "loadgen", "throughput"),
        (acl_case, "loadgen", "with the ACLs / with 1 ACL"),
    }
    return figures


def _kill_with_its_brokers(run: subprocess.Popen) -> tuple[str, str]:
    """SIGKILL to ``run``'s whole process group; what it wrote."""
    os.killpg(run.pid, signal.SIGKILL)
    return run.communicate()


# A guard against a hung run, not a measure: 535 s on 2026-12-07, over 900 s on a slow day.
@pytest.mark.timeout(QUICK_RUN_LIMIT_S + 60)
def test_a_quick_run_reports_every_scenario_for_both_systems(
    tmp_path, settings, throughput, wide_fetch
):
    # Its own session: the brokers it starts are in its process group, and a run past the
    # limit, or an interrupted test run, kills them with it (a killed harness alone left
    # its brokers running; its ZooKeeper has a session of its own and dies with its parent).
    run = subprocess.Popen(
        [sys.executable, str(ROOT / "bench" / "compare.py"), "--quick", "--output", tmp_path],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        stdout, stderr = run.communicate(timeout=QUICK_RUN_LIMIT_S)
    except subprocess.TimeoutExpired:
        stdout, stderr = _kill_with_its_brokers(run)
        pytest.fail(
            f"the quick run took more than {QUICK_RUN_LIMIT_S} s\n"
            + stdout[-3000:]
            + stderr[-3000:]
        )
    except BaseException:
        _kill_with_its_brokers(run)
        raise
    assert run.returncode == 0, stdout[-3000:] + stderr[-3000:]

    (raw,) = tmp_path.glob("*-quick-*-raw.json")
    rows = json.loads(raw.read_text())
    for system in SYSTEMS:
        measured = {r["scenario"] for r in rows if r["system"] == system and r["value"]}
        assert measured == SCENARIOS, f"{system} lacks {SCENARIOS - measured}"

    # Each produced S1's default cases and, into topics of flush.messages=1, its flush
    # cases, with both tools.
    for system in SYSTEMS:
        produced = {
            (r["case"], r["tool"])
            for r in rows
            if (r["system"], r["scenario"], r["metric"]) == (system, "S1", "throughput")
            and r["value"]
        }
        cases = [f"{size}B {codec}" for size, codec in throughput.S1_CASES]
        cases += [f"{size}B none, flush.messages=1" for size in settings.QUICK.s1_flush_sizes]
        assert produced == {(case, tool) for case in cases for tool in ("perf-test", "loadgen")}

    # Each read every S1 loadgen topic as often as the scale says, each S2 figure the
    # median of those reads.
    for system in SYSTEMS:
        s2 = [r for r in rows if r["system"] == system and r["scenario"] == "S2"]
        cases = [f"{size}B {codec}" for size, codec in throughput.S1_CASES]
        figures = ("throughput", "records", "broker CPU")
        assert sorted((r["case"], r["metric"]) for r in s2) == sorted(
            (case, figure) for case in cases for figure in figures
        ), s2
        for row in s2:
            assert len(row["repeats"]) == settings.QUICK.s2_reads and min(row["repeats"]) > 0
            assert row["value"] == statistics.median(row["repeats"]), row

    # Both cleaners compacted S5's topic: the harness saw its size on disk shrink.
    sizes = {(r["system"], r["metric"]): r["value"] for r in rows if r["scenario"] == "S5"}
    for system in SYSTEMS:
        assert sizes[system, "bytes after"] < sizes[system, "bytes before"]

    # Each cluster produced with acks=all and acks=1, and saw a partition fail over under
    # both S8 clients (librdkafka and Kafka's Java producer).
    for system in SYSTEMS:
        ours = [r for r in rows if r["system"] == system]
        s7 = {r["case"].rsplit(" ", 1)[-1] for r in ours if r["scenario"] == "S7" and r["value"]}
        assert {"acks=all", "acks=1"} <= s7, f"{system}: S7 measured only {s7}"
        # and held the paced rate long enough to time acknowledgements, with both settings.
        paced = {
            r["case"]
            for r in ours
            if r["scenario"] == "S7" and r["metric"] == "achieved rate" and r["value"]
        }
        assert len(paced) == 2, f"{system}: S7 paced only {paced}"
        paced_p50 = [r for r in ours if r["case"] in paced and r["metric"] == "ack p50"]
        assert len(paced_p50) == 2 and all(r["value"] is not None for r in paced_p50)
        # Each failover splits where the controller wrote the new leader, after the kill
        # and before the client's first acknowledgement from that leader.
        elected = [r["value"] for r in ours if r["metric"] == "kill → new leader in ZooKeeper"]
        assert elected and all(value > 0 for value in elected), f"{system}: {elected}"
        for tool in ("loadgen", "java-producer"):
            failovers = [
                r["value"] for r in ours if (r["tool"], r["metric"]) == (tool, "failover time")
            ]
            assert len(failovers) == len(elected), f"{system} {tool}: {failovers}"
            assert all(e <= f for e, f in zip(elected, failovers, strict=True)), failovers

    # Each group rebalanced with both assignors and committed offsets both ways.
    for system in SYSTEMS:
        ours = [r for r in rows if r["system"] == system]
        joins = {r["case"].rsplit(" ", 1)[-1] for r in ours if r["metric"] == "join median"}
        assert joins == {"range", "cooperative-sticky"}, f"{system}: S9 measured {joins}"
        commits = [r for r in ours if r["scenario"] == "S10" and r["metric"] == "commits"]
        assert len(commits) == 2 and all(r["value"] > 0 for r in commits), f"{system}: {commits}"

    # Each moved replicas off broker 1 and back under a throttle, and measured both.
    for system in SYSTEMS:
        s11 = [r for r in rows if r["system"] == system and r["scenario"] == "S11"]
        completed = {r["case"] for r in s11 if r["metric"] == "time to complete" and r["value"]}
        assert len(completed) == 2, f"{system}: S11 completed {completed}"
        shares = [r["value"] for r in s11 if r["metric"] == "copy rate / throttle"]
        assert len(shares) == 1 and shares[0] > 0, f"{system}: {shares}"
        # each move ran once per repeat, the repeats after the first from the preferred
        # leaders again
        repeated = [r for r in s11 if "repeats" in r]
        assert repeated and all(
            len(r["repeats"]) == settings.QUICK.s11_repeats for r in repeated
        ), f"{system}: {repeated}"

    # Each restarted a broker after a clean stop and after a kill -9, and saw it serve
    # and rejoin every ISR.
    for system in SYSTEMS:
        s13 = {
            (r["case"].rsplit(", ", 1)[-1], r["metric"]): r["value"]
            for r in rows
            if r["system"] == system and r["scenario"] == "S13"
        }
        assert sorted(s13) == [
            (stop, metric)
            for stop in ("clean stop", "kill -9")
            for metric in ("until in every ISR", "until serving")
        ], f"{system}: {s13}"
        assert all(value > 0 for value in s13.values()), f"{system}: {s13}"

    # Each measured its brokers following a wide topic idle and under a trickle, and the
    # Java consumer read all of it.
    for system in SYSTEMS:
        s14 = {
            (r["case"].rsplit(", ", 1)[-1], r["metric"]): r
            for r in rows
            if r["system"] == system and r["scenario"] == "S14"
        }
        assert s14[("idle", "broker CPU")]["value"] > 0, s14
        assert s14[("1000 records/s", "ack p99")]["value"] > 0, s14
        read = s14[("100 partitions RF=3", "records")]
        assert len(read["repeats"]) == wide_fetch.S14_READS and min(read["repeats"]) > 0, read
        assert read["value"] == statistics.median(read["repeats"]), read

    # Each produced and consumed over its SASL_SSL listener and its PLAINTEXT one, logged
    # in with SCRAM again and again, and produced with and without its 10,000 ACLs.
    for system in SYSTEMS:
        s15 = [r for r in rows if r["system"] == system and r["scenario"] == "S15"]
        figures = {(r["case"], r["tool"], r["metric"]) for r in s15}
        assert figures == _s15_figures(settings.QUICK.s15_acls), system
        assert all(r["value"] > 0 for r in s15), [r for r in s15 if not r["value"] > 0]

    # The same Spark job read every tick in batch and through the streaming query, and
    # saw bars arrive after the ticks that closed them.
    for system in SYSTEMS:
        s12 = {
            r["metric"]: r["value"]
            for r in rows
            if r["system"] == system and r["scenario"] == "S12"
        }
        assert s12["records read (batch)"] > 0 and s12["records streamed"] > 0, s12
        assert s12["tick to bar p50"] > 0, s12
        assert s12["micro-batch p50"] > 0, s12

    report = raw.with_name(raw.name.removesuffix("-raw.json") + ".md").read_text()
    # Every session (single, S4's, cluster, ...) has a number of its own: the number names
    # its ZooKeeper chroot, and two sessions sharing one would see each other's topics.
    (run,) = [line for line in report.splitlines() if line.startswith("Run: ")]
    sessions = run.split("sessions in order ", 1)[1].split(". ", 1)[0].split(", ")
    assert {r["session"] for r in rows} == set(range(len(sessions))), sessions
    table = [line for line in report.splitlines() if line.startswith("| S")]
    assert {line.split(" | ")[0].removeprefix("| ") for line in table} == SCENARIOS
    unrated = [line for line in table if "×" not in line and "time to clean" not in line]
    assert not unrated, "rows without a ratio:\n" + "\n".join(unrated)
    for plot in ("throughput", "latency-cdf"):
        (image,) = tmp_path.glob(f"*-{plot}.png")
        assert image.read_bytes().startswith(PNG_SIGNATURE)
