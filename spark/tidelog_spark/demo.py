"""``make run``: the whole local story in one terminal. ``tidelog-local`` runs ZooKeeper
and three brokers, ``tidelog-ticks`` writes 20 ticks a second to ``ticks``, and
``tidelog-bars`` (Spark in ``local[*]`` mode) turns them into one-minute bars in
``ohlc-1m`` and Parquet. This process shows the latest completed bar of each symbol as it
arrives in ``ohlc-1m``, with the pipeline's lag; Ctrl-C stops the ticks, then the
pipeline, then the cluster.

    tidelog-demo [--dir .run] [--zk-port 2181] [--base-port 9092] [--rate 20]

Each part logs to ``<dir>/<part>.log``; the pipeline keeps its checkpoint and Parquet
files under ``<dir>/pipeline``, so a second run goes on where the first stopped. A bar
appears once the watermark (10 s) has passed the end of its minute. On a terminal the
table is redrawn in place; otherwise each bar is printed as a line.

Ctrl-C, SIGTERM, SIGHUP (the terminal closed) and a closed standard output (``| tee``
or ``| head`` gone) each stop every part in that order; the demo exits 0, or 1 when its
output was closed or a part died. Whatever kills the demo itself (SIGKILL), each part
gets SIGTERM from the kernel and stops on its own (:mod:`tidelog.child_process`): the
cluster stops its brokers and ZooKeeper, the pipeline its Spark driver, whose JVM exits
when the driver's end of its stdin closes. All output goes through one writer
(:mod:`tidelog_spark.console`), so every message is a whole line.
"""

from __future__ import annotations

import argparse
import json
import logging
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer

from tidelog.admin import AdminClient
from tidelog.child_process import dying_with_parent
from tidelog_spark.console import Console, ConsoleLogHandler
from tidelog_spark.pipeline import ensure_topics

TICKS, BARS, GROUP = "ticks", "ohlc-1m", "tidelog-bars"
BIN = Path(sys.executable).parent
CLEAR = "\x1b[H\x1b[2J"
_STOP_TIMEOUT_S = 90


class LiveBars:
    """The latest completed bar of each symbol, and how it prints."""

    def __init__(self) -> None:
        self.latest: dict[str, dict] = {}

    def add(self, bar: dict) -> bool:
        """Keep ``bar`` if it is the newest of its symbol; whether it was."""
        current = self.latest.get(bar["symbol"])
        if current is not None and current["start"] >= bar["start"]:
            return False
        self.latest[bar["symbol"]] = bar
        return True

    @staticmethod
    def line(bar: dict) -> str:
        return (
            f"{bar['symbol']:<6} {bar['start']:<18} {bar['open']:>9.2f} {bar['high']:>9.2f} "
            f"{bar['low']:>9.2f} {bar['close']:>9.2f} {bar['volume']:>8} {bar['trades']:>6}"
        )

    def table(self) -> str:
        header = (
            f"{'SYMBOL':<6} {'MINUTE (UTC)':<18} {'OPEN':>9} {'HIGH':>9} {'LOW':>9} "
            f"{'CLOSE':>9} {'VOLUME':>8} {'TRADES':>6}"
        )
        rows = [self.line(self.latest[s]) for s in sorted(self.latest)]
        return "\n".join([header, *rows]) if rows else header + "\n(waiting for a minute to close)"


def pipeline_lag(admin: AdminClient) -> str:
    """The group's lag on the ticks, as shown: a number, or '-' before its first commit."""
    partitions = [(TICKS, p) for p in admin.topic_partitions([TICKS])[TICKS]]
    committed = admin.list_group_offsets(GROUP, partitions)
    if not committed:
        return "-"
    ends = admin.list_offsets(partitions)
    done = {tp: committed[tp].offset if tp in committed else 0 for tp in ends}
    return str(sum(ends[tp].offset - done[tp] for tp in ends))


class StopRequest:
    """Why the demo stops, once asked: the first of a signal and a closed stdout. Set
    from a signal handler or a console thread (a plain attribute: a lock taken in a signal
    handler could be held by the very code the handler interrupted); the main thread's
    loops look at it at least once a second."""

    SIGNAL, CLOSED_OUTPUT = "signal", "closed output"

    def __init__(self) -> None:
        self.reason: str | None = None

    def __call__(self, reason: str) -> None:
        if self.reason is None:
            self.reason = reason

    def __bool__(self) -> bool:
        return self.reason is not None


class Parts:
    """The child processes, each in its own session (Ctrl-C reaches only this process,
    which stops them in order), each logging to ``<dir>/<name>.log``, each getting
    SIGTERM if this process dies (started from the main thread)."""

    def __init__(self, directory: Path, console: Console):
        self.directory = directory
        self.console = console
        self.running: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, *command) -> subprocess.Popen:
        with open(self.directory / f"{name}.log", "a") as log:
            process = subprocess.Popen(
                dying_with_parent([str(c) for c in command]),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        self.running.append((name, process))
        return process

    def check(self) -> None:
        for name, process in self.running:
            if process.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with {process.returncode}; see {self.directory}/{name}.log"
                )

    def stop(self) -> None:
        """SIGTERM to the last started first, each waited for (killed after a while)."""
        for name, process in reversed(self.running):
            if process.poll() is None:
                status(self.console, f"stopping {name}")
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def status(console: Console, text: str) -> None:
    """A status line: on stdout, or on stderr once stdout is closed (``| head`` gone),
    so that a user still sees the demo stopping."""
    console.say(text, error=console.out_closed)


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidelog-demo", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(".run"))
    parser.add_argument("--zk-port", type=int, default=2181)
    parser.add_argument("--base-port", type=int, default=9092)
    parser.add_argument("--rate", type=float, default=20.0, help="ticks a second")
    return parser


def _wait_for_cluster(parts: Parts, description: Path, stop: StopRequest) -> str | None:
    """The cluster's bootstrap servers once it serves; None if the demo was stopped."""
    while not description.exists():
        parts.check()
        if stop:
            return None
        time.sleep(0.2)
    return json.loads(description.read_text())["bootstrap"]


def show(
    parts: Parts, bootstrap: str, console: Console, stop: StopRequest, interactive: bool
) -> None:
    """Follow the bars topic until asked to stop, redrawing or printing each new bar."""
    admin = AdminClient(bootstrap)
    live = LiveBars()
    consumer = KafkaConsumer(
        BARS, bootstrap_servers=bootstrap, auto_offset_reset="earliest", enable_auto_commit=False
    )
    try:
        while not stop:
            parts.check()
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    bar = json.loads(record.value)
                    if live.add(bar) and not interactive:
                        console.say(LiveBars.line(bar))
            if interactive and not stop:
                console.say(
                    f"{CLEAR}tidelog: ticks → Spark → {BARS}   bootstrap {bootstrap}\n"
                    f"pipeline lag: {pipeline_lag(admin)} ticks   (Ctrl-C stops everything)\n\n"
                    f"{live.table()}"
                )
    finally:
        consumer.close()


def run(args: argparse.Namespace, parts: Parts, console: Console, stop: StopRequest) -> None:
    """Start the parts, then show the bars until asked to stop."""
    directory = parts.directory
    parts.start(
        "cluster",
        BIN / "tidelog-local",
        *("start", "--dir", directory / "cluster", "--topic", TICKS),
        *("--zk-port", args.zk_port, "--base-port", args.base_port),
    )
    status(console, f"starting ZooKeeper and 3 brokers (log: {directory}/cluster.log)")
    bootstrap = _wait_for_cluster(parts, directory / "cluster" / "cluster.json", stop)
    if bootstrap is None:
        return
    ensure_topics(AdminClient(bootstrap), TICKS, BARS, partitions=6)
    if stop:
        return
    parts.start(
        "ticks", BIN / "tidelog-ticks", "--bootstrap-server", bootstrap, "--rate", args.rate
    )
    parts.start(
        "pipeline",
        BIN / "tidelog-bars",
        *("--bootstrap-server", bootstrap, "--state-dir", directory / "pipeline"),
        *("--group", GROUP, "--ticks-topic", TICKS, "--bars-topic", BARS),
    )
    status(
        console,
        f"ticks at {args.rate:g}/s and the Spark pipeline started (logs: {directory}); "
        "bars appear when a minute has closed",
    )
    show(parts, bootstrap, console, stop, sys.stdout.isatty())


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    directory = args.dir.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    stop = StopRequest()
    console = Console(sys.stdout, sys.stderr, on_closed=lambda: stop(stop.CLOSED_OUTPUT))
    # Ctrl-C, SIGTERM and SIGHUP stop everything, even where SIGINT came in ignored (a
    # shell starts background jobs so)
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, lambda *_: stop(stop.SIGNAL))
    logging.basicConfig(level=logging.WARNING, handlers=[ConsoleLogHandler(console)])
    parts = Parts(directory, console)
    code = 0
    try:
        run(args, parts, console, stop)
    except RuntimeError as error:
        console.say(f"tidelog-demo: {error}", error=True)
        code = 1
    finally:
        if stop.reason == stop.SIGNAL and sys.stdout.isatty():
            console.say("")  # below the ^C that the terminal echoed
        if stop.reason == stop.CLOSED_OUTPUT:
            console.say("tidelog-demo: standard output was closed", error=True)
            code = 1
        parts.stop()
        status(console, "stopped.")
        console.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
