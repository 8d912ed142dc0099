"""The plots of ``make bench``'s report, PNG files beside it: S1-S14's throughput bars,
S3's latency CDF and S11's acknowledgement latencies during reassignment. A plot is
drawn only when the run measured what it shows.
"""

from __future__ import annotations

from pathlib import Path

import reassignment
from session import Session

__all__ = ["plot"]


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
