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
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

from kafka import KafkaConsumer

from tidelog.admin import AdminClient
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


class Parts:
    """The child processes, each in its own session (Ctrl-C reaches only this process,
    which stops them in order), each logging to ``<dir>/<name>.log``."""

    def __init__(self, directory: Path):
        self.directory = directory
        self.running: list[tuple[str, subprocess.Popen]] = []

    def start(self, name: str, *command) -> subprocess.Popen:
        with open(self.directory / f"{name}.log", "a") as log:
            process = subprocess.Popen(
                [str(c) for c in command], stdout=log, stderr=log, start_new_session=True
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
                print(f"stopping {name}", flush=True)
                process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout=_STOP_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="tidelog-demo", description=__doc__.splitlines()[0])
    parser.add_argument("--dir", type=Path, default=Path(".run"))
    parser.add_argument("--zk-port", type=int, default=2181)
    parser.add_argument("--base-port", type=int, default=9092)
    parser.add_argument("--rate", type=float, default=20.0, help="ticks a second")
    return parser


def _wait_for_cluster(parts: Parts, description: Path) -> str:
    while not description.exists():
        parts.check()
        time.sleep(0.2)
    return json.loads(description.read_text())["bootstrap"]


def show(parts: Parts, bootstrap: str, interactive: bool) -> None:
    """Follow the bars topic until interrupted, redrawing or printing each new bar."""
    admin = AdminClient(bootstrap)
    live = LiveBars()
    consumer = KafkaConsumer(BARS, bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        while True:
            parts.check()
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    bar = json.loads(record.value)
                    if live.add(bar) and not interactive:
                        print(LiveBars.line(bar), flush=True)
            if interactive:
                print(
                    f"{CLEAR}tidelog: ticks → Spark → {BARS}   bootstrap {bootstrap}\n"
                    f"pipeline lag: {pipeline_lag(admin)} ticks   (Ctrl-C stops everything)\n\n"
                    f"{live.table()}",
                    flush=True,
                )
    finally:
        consumer.close()


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    directory = args.dir.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    parts = Parts(directory)
    # Ctrl-C and SIGTERM stop everything, even where SIGINT came in ignored (a shell
    # starts background jobs so)
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.default_int_handler)
    try:
        parts.start(
            "cluster",
            BIN / "tidelog-local",
            *("start", "--dir", directory / "cluster", "--topic", TICKS),
            *("--zk-port", args.zk_port, "--base-port", args.base_port),
        )
        print(f"starting ZooKeeper and 3 brokers (log: {directory}/cluster.log)", flush=True)
        bootstrap = _wait_for_cluster(parts, directory / "cluster" / "cluster.json")
        ensure_topics(AdminClient(bootstrap), TICKS, BARS, partitions=6)
        parts.start(
            "ticks", BIN / "tidelog-ticks", "--bootstrap-server", bootstrap, "--rate", args.rate
        )
        parts.start(
            "pipeline",
            BIN / "tidelog-bars",
            *("--bootstrap-server", bootstrap, "--state-dir", directory / "pipeline"),
            *("--group", GROUP, "--ticks-topic", TICKS, "--bars-topic", BARS),
        )
        print(
            f"ticks at {args.rate:g}/s and the Spark pipeline started (logs: {directory}); "
            "bars appear when a minute has closed",
            flush=True,
        )
        show(parts, bootstrap, sys.stdout.isatty())
    except KeyboardInterrupt:
        pass
    except RuntimeError as error:
        print(f"tidelog-demo: {error}", file=sys.stderr)
        return 1
    finally:
        parts.stop()
    print("stopped.", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
