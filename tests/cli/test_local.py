"""``tidelog-local start``: a real ZooKeeper and real brokers, described in cluster.json,
stopped cleanly by SIGTERM."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tidelog.admin import AdminClient

TIDELOG_LOCAL = Path(sys.executable).with_name("tidelog-local")


def free_port_run(count: int) -> int:
    """The first of ``count`` consecutive free loopback ports."""
    for _ in range(100):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            first = probe.getsockname()[1]
        sockets = []
        try:
            for port in range(first, first + count):
                sock = socket.socket()
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
            return first
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError(f"no run of {count} free ports")


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert process.poll() is None, process.communicate()
        assert time.monotonic() < deadline, f"{path} did not appear"
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_start_describes_the_cluster_and_sigterm_stops_it(tmp_path):
    base_port = free_port_run(2)
    command = [
        TIDELOG_LOCAL,
        "start",
        "--brokers",
        "2",
        "--dir",
        tmp_path,
        "--zk-port",
        str(free_port_run(1)),
        "--base-port",
        str(base_port),
        "--log-dirs-per-broker",
        "3",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        description = tmp_path / "cluster.json"
        wait_for(description, process)
        cluster = json.loads(description.read_text())
        brokers = cluster["brokers"]
        assert [b["id"] for b in brokers] == [1, 2]
        assert [b["port"] for b in brokers] == [base_port, base_port + 1]
        assert cluster["bootstrap"] == f"127.0.0.1:{base_port},127.0.0.1:{base_port + 1}"
        assert cluster["zookeeper"].startswith("127.0.0.1:")
        for broker in brokers:
            assert alive(broker["pid"])
            assert f"broker.id={broker['id']}" in Path(broker["config"]).read_text()
            assert len(broker["log_dirs"]) == 3
            assert all(Path(d, "meta.properties").exists() for d in broker["log_dirs"])

        metadata = AdminClient(cluster["bootstrap"]).metadata(["demo"])
        assert sorted(b.node_id for b in metadata.brokers) == [1, 2]
        (demo,) = metadata.topics
        assert demo.error_code == 0 and len(demo.partitions) == 6
        # Replicated on every broker when there are fewer than three.
        assert all(sorted(p.replica_nodes) == [1, 2] for p in demo.partitions)

        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == 0, err
    assert "stopped." in out
    assert not description.exists()
    assert not any(alive(b["pid"]) for b in brokers)


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--brokers", "0"], "--brokers must be at least 1"),
        (["--log-dirs-per-broker", "0"], "--log-dirs-per-broker must be at least 1"),
        (
            ["--brokers", "1", "--replication-factor", "2"],
            "--replication-factor must be between 1 and --brokers",
        ),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2(tmp_path, arguments, message):
    done = subprocess.run(
        [TIDELOG_LOCAL, "start", "--dir", tmp_path, *arguments],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"tidelog-local: {message}")
    assert len(done.stderr.splitlines()) == 1
    assert not (tmp_path / "zookeeper").exists()  # refused before starting anything
