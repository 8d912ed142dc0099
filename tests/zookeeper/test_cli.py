"""``tidelog-zookeeper`` runs a real ZooKeeper server in the foreground: ready line, client
sessions with ephemeral nodes, clean stop on SIGTERM and SIGINT, one-line errors."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tidelog.zookeeper import four_letter_word, zookeeper_libs
from waiting import wait_until
from zookeeper.helpers import kazoo_session

CLI = Path(sys.executable).with_name("tidelog-zookeeper")
READY = re.compile(r"zookeeper ready at 127\.0\.0\.1:(\d+)\n")


def _read_line(process: subprocess.Popen, timeout: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            raise AssertionError(f"no line from {CLI.name} within {timeout} s")
    return process.stdout.readline()


@contextmanager
def running_cli(data_dir: Path) -> Iterator[tuple[subprocess.Popen, int]]:
    """The CLI on a free port, once it printed its ready line; killed if a test fails."""
    process = subprocess.Popen(
        [str(CLI), "--port", "0", "--data-dir", str(data_dir)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = _read_line(process, timeout=30)
        ready = READY.fullmatch(line)
        assert ready, f"unexpected first line {line!r}; stderr: {process.stderr.read()}"
        yield process, int(ready.group(1))
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _refuses_connections(port: int) -> bool:
    try:
        four_letter_word("127.0.0.1", port, "ruok", timeout=0.5)
    except OSError:
        return True
    return False


def test_serves_clients_and_sigterm_stops_it_with_status_0(tmp_path: Path) -> None:
    with running_cli(tmp_path / "zk") as (process, port):
        assert four_letter_word("127.0.0.1", port, "ruok") == "imok"
        assert "Mode: standalone" in four_letter_word("127.0.0.1", port, "stat")

        hosts = f"127.0.0.1:{port}"
        with kazoo_session(hosts) as observer:
            with kazoo_session(hosts) as owner:
                owner.create("/brokers/ids/7", b"owner", ephemeral=True, makepath=True)
                data, stat = observer.get("/brokers/ids/7")
                assert data == b"owner"
                assert stat.ephemeralOwner == owner.client_id[0]
            # The owner's session is closed: ZooKeeper deletes its ephemeral node.
            wait_until(
                lambda: observer.exists("/brokers/ids/7") is None,
                "the closed session's ephemeral node deleted",
                5,
                interval=0.02,
            )
            assert observer.exists("/brokers/ids") is not None

        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=15) == 0
        assert process.stdout.read() == ""
        assert process.stderr.read() == ""
    assert _refuses_connections(port)
    assert (tmp_path / "zk" / "zoo.cfg").is_file()
    assert "ZooKeeperServerMain" in (tmp_path / "zk" / "zookeeper.log").read_text()


def test_sigint_stops_it_with_status_0(tmp_path: Path) -> None:
    with running_cli(tmp_path / "zk") as (process, port):
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=15) == 0
    assert _refuses_connections(port)


def test_server_dies_with_a_killed_launcher(tmp_path: Path) -> None:
    with running_cli(tmp_path / "zk") as (process, port):
        process.kill()
        process.wait(timeout=5)
        wait_until(lambda: _refuses_connections(port), "the server gone with its launcher", 10)


def _run(env: dict[str, str], data_dir: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CLI), "--port", "0", "--data-dir", str(data_dir)],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def test_missing_jars_give_one_line_and_status_1(tmp_path: Path) -> None:
    env = {**os.environ, "TIDELOG_ZOOKEEPER_LIBS": str(tmp_path / "no-jars-here")}
    result = _run(env, tmp_path / "zk")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("tidelog-zookeeper: ")
    assert "make zookeeper-libs" in result.stderr
    assert str(tmp_path / "no-jars-here") in result.stderr


def test_missing_java_gives_one_line_and_status_1(tmp_path: Path) -> None:
    env = {key: value for key, value in os.environ.items() if key != "JAVA_HOME"}
    env["PATH"] = str(tmp_path)  # holds no java
    env["TIDELOG_ZOOKEEPER_LIBS"] = str(zookeeper_libs())
    result = _run(env, tmp_path / "zk")
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr == (
        "tidelog-zookeeper: no `java` found (JAVA_HOME or PATH); ZooKeeper needs Java 17\n"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--my-id", "1"],
        ["--server", "1=a:2888:3888", "--server", "2=b:2888:3888"],
        ["--server", "1=a:2888:3888", "--my-id", "3"],
        ["--server", "one=a:2888:3888", "--my-id", "1"],
        ["--server", "1=a:2888", "--my-id", "1"],
    ],
)
def test_an_ensemble_member_is_refused_without_consistent_servers(tmp_path: Path, args) -> None:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog.zookeeper.cli",
            "--port",
            "0",
            "--data-dir",
            str(tmp_path),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert result.returncode == 2, result
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("tidelog-zookeeper: error: ") and (
        "--server" in error or "ID=" in error
    )
