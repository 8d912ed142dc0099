"""``make run`` (``tidelog-demo``): the cluster, the tick generator and the Spark pipeline
come up, completed bars are shown as they arrive, and Ctrl-C stops every part."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path

from cli.test_local import alive, free_port_run
from tidelog_spark.demo import LiveBars

DEMO = Path(sys.executable).with_name("tidelog-demo")
BAR_LINE = re.compile(
    r"^[A-Z]{4} +\d{4}-\d\d-\d\dT\d\d:\d\dZ +[\d.]+ +[\d.]+ +[\d.]+ +[\d.]+ +\d+ +\d+$"
)


def bar(symbol: str, start: str, close: float = 101.5) -> dict:
    return {
        "symbol": symbol,
        "start": start,
        "end": "",
        "open": 100.0,
        "high": 102.0,
        "low": 99.5,
        "close": close,
        "volume": 1200,
        "trades": 7,
    }


def test_the_table_keeps_the_newest_bar_of_each_symbol():
    live = LiveBars()
    assert "(waiting for a minute to close)" in live.table()
    assert live.add(bar("BOLT", "2026-11-25T10:01Z"))
    assert live.add(bar("ACME", "2026-11-25T10:02Z", close=1.0))
    assert not live.add(bar("ACME", "2026-11-25T10:01Z"))  # a replayed older bar
    assert live.add(bar("ACME", "2026-11-25T10:03Z"))
    lines = live.table().splitlines()
    assert lines[0].split() == "SYMBOL MINUTE (UTC) OPEN HIGH LOW CLOSE VOLUME TRADES".split()
    assert [line.split()[:2] for line in lines[1:]] == [
        ["ACME", "2026-11-25T10:03Z"],
        ["BOLT", "2026-11-25T10:01Z"],
    ]
    assert all(BAR_LINE.match(line) for line in lines[1:])


def test_the_demo_shows_bars_and_ctrl_c_stops_every_part(tmp_path):
    first_port = free_port_run(4)
    demo = subprocess.Popen(
        [
            DEMO,
            "--dir",
            tmp_path,
            "--rate",
            "10",
            "--zk-port",
            str(first_port),
            "--base-port",
            str(first_port + 1),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    printed: list[str] = []
    first_bar = threading.Event()

    def read() -> None:
        for line in demo.stdout:
            printed.append(line.rstrip("\n"))
            if BAR_LINE.match(printed[-1]):
                first_bar.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        # the first minute to close, 10 s of watermark, and Spark's start
        assert first_bar.wait(timeout=180), "\n".join(printed) + demo.stderr.read()
        brokers = json.loads((tmp_path / "cluster" / "cluster.json").read_text())["brokers"]
        demo.send_signal(signal.SIGINT)
        assert demo.wait(timeout=240) == 0, demo.stderr.read()
    finally:
        if demo.poll() is None:
            demo.kill()
    reader.join(timeout=10)
    assert printed[-4:] == ["stopping pipeline", "stopping ticks", "stopping cluster", "stopped."]
    assert not any(alive(b["pid"]) for b in brokers)
    assert list((tmp_path / "pipeline" / "bars").glob("date=*/batch-*.parquet"))
    assert "tidelog-ticks:" in (tmp_path / "ticks.log").read_text()
