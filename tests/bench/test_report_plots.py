"""The plots of ``make bench``'s report (``bench/plots.py``): a plot is drawn and linked
only when the run measured what it shows, so a partial run (``--scenarios S13``) links
no empty figure."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

# matplotlib's font config parser calls pyparsing names that pyparsing deprecates.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def session(system: str, latencies: list[float]) -> SimpleNamespace:
    return SimpleNamespace(system=system, number=0, latencies=latencies)


def test_a_run_without_throughput_or_latencies_draws_no_plot(plots, tmp_path):
    summary = [{"scenario": "S13", "metric": "until serving", "kafka": 8.1, "tidelog": 5.7}]
    sessions = [session("kafka", []), session("tidelog", [])]
    assert plots.plot(summary, sessions, tmp_path / "run") == []
    assert not list(tmp_path.iterdir())


def test_each_plot_is_drawn_from_what_was_measured(plots, tmp_path):
    bars = {"scenario": "S1", "case": "100B none", "tool": "loadgen", "metric": "throughput"}
    summary = [bars | {"kafka": 30.0, "tidelog": 45.0}]
    sessions = [session("kafka", [1.2, 3.4, 2.0]), session("tidelog", [])]
    images = plots.plot(summary, sessions, tmp_path / "run")
    assert images == ["run-throughput.png", "run-latency-cdf.png"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(images)
