"""``tidelog-server`` that cannot reach ZooKeeper at start-up (a container started before
its ZooKeeper) exits 1 with one line, for a restart policy to try again; within its
connection timeout it waits, and starts once ZooKeeper answers; one stopped while it
waits stops at once, whatever its connection timeout."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

from tidelog.server.process import TIDELOG_SERVER, free_port
from tidelog.zookeeper.server import ZooKeeperServer


def _config(tmp_path: Path, zookeeper_port: int, connection_timeout_ms: int) -> Path:
    config = tmp_path / "server.properties"
    config.write_text(
        f"zookeeper.connect=127.0.0.1:{zookeeper_port}\n"
        f"zookeeper.connection.timeout.ms={connection_timeout_ms}\n"
        "listeners=PLAINTEXT://127.0.0.1:0\n"
        f"log.dirs={tmp_path / 'data'}\n"
    )
    return config


def test_no_zookeeper_at_start_up_is_one_line_and_status_1(tmp_path: Path) -> None:
    closed = free_port()
    config = _config(tmp_path, closed, 1000)
    result = subprocess.run(
        [str(TIDELOG_SERVER), str(config)], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 1
    last = result.stderr.splitlines()[-1]
    assert last == f"tidelog-server: no ZooKeeper answered at 127.0.0.1:{closed} in time"
    assert "Traceback" not in result.stderr


def _until_connecting(broker: subprocess.Popen) -> str:
    """The broker's line saying it waits for ZooKeeper."""
    for line in broker.stderr:
        if "connecting to ZooKeeper" in line:
            return line
    raise AssertionError(f"the broker ended ({broker.wait()}) without waiting for ZooKeeper")


def test_a_broker_started_before_its_zookeeper_starts_when_zookeeper_answers(
    tmp_path: Path,
) -> None:
    """What a broker beside an ensemble that is still forming does (the operator gives
    its brokers the servers' start timeout): it starts once ZooKeeper serves."""
    port = free_port()
    config = _config(tmp_path, port, 600_000)
    broker = subprocess.Popen([str(TIDELOG_SERVER), str(config)], stderr=subprocess.PIPE, text=True)
    try:
        _until_connecting(broker)
        with ZooKeeperServer(tmp_path / "zk", port=port):
            for line in broker.stderr:
                if "started, listening on" in line:
                    break
            assert broker.poll() is None, "the broker gave up"
            broker.send_signal(signal.SIGTERM)
            assert broker.wait(timeout=120) == 0
    finally:
        broker.kill()
        broker.wait()


def test_a_stop_while_waiting_for_zookeeper_ends_the_wait(tmp_path: Path) -> None:
    """A pod deleted while its broker waits for an ensemble that is still forming: the
    SIGTERM ends the wait (ten minutes here) and the process, status 0."""
    closed = free_port()
    config = _config(tmp_path, closed, 600_000)
    broker = subprocess.Popen([str(TIDELOG_SERVER), str(config)], stderr=subprocess.PIPE, text=True)
    try:
        assert "waiting up to 600 s" in _until_connecting(broker)
        broker.send_signal(signal.SIGTERM)
        assert broker.wait(timeout=60) == 0
        rest = broker.stderr.read()
    finally:
        broker.kill()
        broker.wait()
    assert f"stopped before ZooKeeper at 127.0.0.1:{closed} answered" in rest
    assert "Traceback" not in rest
