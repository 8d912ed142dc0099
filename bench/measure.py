"""Measurements of the harness: the memory and CPU of a broker's process (``/proc``), the
bytes of a partition on disk, timing with Python's garbage collector held off, and a
py-spy profile of a tidelog broker (``--profile``).

Each helper reads or times one thing and records nothing: the scenarios turn what they
return into figures (``Session.record``).
"""

from __future__ import annotations

import contextlib
import gc
import os
import subprocess
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from session import Session

__all__ = [
    "PeakRss",
    "collector_paused",
    "cpu_seconds",
    "partition_bytes",
    "rss_mb",
    "start_profile",
    "stop_profile",
    "user_system_seconds",
]


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
