"""``tidelog-demo`` leaves nothing running however it ends: killed with SIGKILL (each
part gets SIGTERM from the kernel and stops on its own), or with its standard output
closed (``make run | tee`` with tee gone: the demo stops every part in order, says so
on stderr, and exits 1 without a traceback).

Each scenario is one real demo run, checked once every part is up (the pipeline's first
micro-batch committed, so Spark's JVM runs): the demo's whole process tree is noted then,
ZooKeeper's and the brokers' JVM and processes, the tick generator, the pipeline's driver
and its JVM among them, and afterwards none of those processes may still run, nor any
of the cluster's ports accept a connection."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.test_local import accepting, free_port_run
from waiting import wait_until

DEMO = Path(sys.executable).with_name("tidelog-demo")

# A start of the cluster and of Spark, then a stop that may wait out a micro-batch.
pytestmark = pytest.mark.timeout(900)


@dataclass(frozen=True)
class Process:
    """A process as noted once: its pid with its start time (a pid can be reused)."""

    pid: int
    start: str
    command: str

    @classmethod
    def read(cls, pid: int) -> Process | None:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
            command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (FileNotFoundError, ProcessLookupError):
            return None
        fields = stat.rpartition(")")[2].split()  # after the command, which may hold spaces
        return cls(pid, fields[19], command.strip())  # field 22 of proc(5): starttime

    def running(self) -> bool:
        try:
            fields = Path(f"/proc/{self.pid}/stat").read_text().rpartition(")")[2].split()
        except FileNotFoundError:
            return False
        return fields[19] == self.start and fields[0] != "Z"


def descendants(root: int) -> list[Process]:
    """Every process below ``root``, children before their children."""
    parents: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rpartition(")")[2].split()[1])
            except (FileNotFoundError, ProcessLookupError):
                continue
            parents.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(parents.get(root, []))
    while todo:
        pid = todo.pop(0)
        if (process := Process.read(pid)) is not None:
            found.append(process)
        todo.extend(parents.get(pid, []))
    return found


@dataclass
class DemoRun:
    process: subprocess.Popen
    directory: Path
    ports: list[int]  # ZooKeeper's, then the brokers'


def start_demo(directory: Path) -> DemoRun:
    first_port = free_port_run(4)
    command = [DEMO, "--dir", directory, "--rate", "10"]
    command += ["--zk-port", str(first_port), "--base-port", str(first_port + 1)]
    process = subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL
    )
    return DemoRun(process, directory, list(range(first_port, first_port + 4)))


def every_part_up(run: DemoRun) -> list[Process]:
    """Wait until the pipeline committed its first micro-batch; the demo's process tree
    then, checked to hold every part."""

    def first_batch_committed() -> bool:
        if run.process.poll() is not None:  # no use waiting on
            logs = {log.name: log.read_text()[-2000:] for log in run.directory.glob("*.log")}
            raise RuntimeError(f"the demo exited with {run.process.returncode}: {logs}")
        return (run.directory / "pipeline" / "checkpoint" / "commits" / "0").exists()

    # the cluster's start, Spark's, and a first batch: minutes on a loaded machine
    wait_until(first_batch_committed, "the pipeline committed a micro-batch", timeout=300)
    tree = descendants(run.process.pid)
    commands = [p.command for p in tree]
    parts = {  # how each part's command line shows it, and how many of it run
        "/bin/tidelog-local ": 1,
        "/bin/tidelog-server ": 3,
        " org.apache.zookeeper.server.ZooKeeperServerMain ": 1,
        "/bin/tidelog-ticks ": 1,
        "/bin/tidelog-bars ": 1,
        " org.apache.spark.deploy.SparkSubmit ": 1,
    }
    for part, count in parts.items():
        assert sum(part in c for c in commands) == count, (part, commands)
    assert all(accepting(port) for port in run.ports)
    return tree


def wait_until_gone(tree: list[Process], ports: list[int]) -> None:
    def nothing_left() -> bool:
        still = [f"{p.pid} {p.command[:120]}" for p in tree if p.running()]
        assert not still, still
        listening = [port for port in ports if accepting(port)]
        assert not listening, f"ports {listening} still accept connections"
        return True

    # the pipeline may wait out a micro-batch against a cluster stopping beside it (60 s)
    wait_until(nothing_left, "every part of the demo exited", timeout=240, interval=1)


def clean_up(run: DemoRun, tree: list[Process]) -> None:
    """After a failure: nothing left to disturb the tests that follow."""
    if run.process.poll() is None:
        tree = tree or descendants(run.process.pid)
        run.process.kill()
        run.process.wait()
    for process in tree:
        if process.running():
            os.kill(process.pid, signal.SIGKILL)


def test_sigkill_of_the_demo_takes_every_part_down(tmp_path):
    run = start_demo(tmp_path)
    tree: list[Process] = []
    try:
        tree = every_part_up(run)
        run.process.kill()
        run.process.wait()
        wait_until_gone(tree, run.ports)
    finally:
        clean_up(run, tree)
    # SIGTERM from the kernel is a clean stop for each part, as Ctrl-C is for the demo
    assert (tmp_path / "cluster.log").read_text().splitlines()[-1] == "stopped."
    assert "tidelog-ticks:" in (tmp_path / "ticks.log").read_text()


def test_a_closed_stdout_stops_every_part_and_the_demo_says_so(tmp_path):
    run = start_demo(tmp_path)
    tree: list[Process] = []
    try:
        tree = every_part_up(run)
        run.process.stdout.close()  # as tee's end: nothing is being written at this moment
        _, err = run.process.communicate(timeout=300)
        wait_until_gone(tree, run.ports)
    finally:
        clean_up(run, tree)
    assert run.process.returncode == 1, err
    lines = err.decode().splitlines()
    assert lines[-5:] == [
        "tidelog-demo: standard output was closed",
        "stopping pipeline",
        "stopping ticks",
        "stopping cluster",
        "stopped.",
    ], lines
    assert "Traceback" not in err.decode() and "Exception ignored" not in err.decode()
    assert not (tmp_path / "cluster" / "cluster.json").exists()  # start stopped cleanly
