"""Smoke test of ``make bench``'s harness: a tiny run against both brokers writes a
report with a figure of each system for every scenario, and its plots.

It asserts that the harness measures, never what it measured: no timing assertion.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCENARIOS = {"S1", "S2", "S3", "S4", "S5", "S6"}
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def test_a_quick_run_reports_every_scenario_for_both_systems(tmp_path):
    run = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "compare.py"), "--quick", "--output", tmp_path],
        capture_output=True,
        text=True,
        timeout=280,
        check=False,
    )
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]

    (raw,) = tmp_path.glob("*-quick-*-raw.json")
    rows = json.loads(raw.read_text())
    for system in ("kafka", "tidelog"):
        measured = {r["scenario"] for r in rows if r["system"] == system and r["value"]}
        assert measured == SCENARIOS, f"{system} lacks {SCENARIOS - measured}"

    # Both cleaners compacted S5's topic: the harness saw its size on disk shrink.
    sizes = {(r["system"], r["metric"]): r["value"] for r in rows if r["scenario"] == "S5"}
    for system in ("kafka", "tidelog"):
        assert sizes[system, "bytes after"] < sizes[system, "bytes before"]

    report = raw.with_name(raw.name.removesuffix("-raw.json") + ".md").read_text()
    table = [line for line in report.splitlines() if line.startswith("| S")]
    assert {line.split(" | ")[0].removeprefix("| ") for line in table} == SCENARIOS
    assert all("×" in line for line in table if "time to clean" not in line)
    for plot in ("throughput", "latency-cdf"):
        (image,) = tmp_path.glob(f"*-{plot}.png")
        assert image.read_bytes().startswith(PNG_SIGNATURE)
