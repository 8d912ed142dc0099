"""``tidelog-local``: a real ZooKeeper and real brokers, described in cluster.json,
stopped cleanly by SIGTERM; a broker that dies leaves the others serving, and
``restart-broker`` / ``stop-broker`` act on one broker of the running cluster."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from tidelog.admin import AdminClient
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

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


def stop_after_failure(process: subprocess.Popen) -> None:
    """A ``tidelog-local start`` a failed test leaves running: SIGTERM, so that it stops
    its ZooKeeper and brokers (SIGKILL would leave them running), SIGKILL after 60 s."""
    if process.poll() is None:
        process.terminate()
        try:
            process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()


def wait_for(path: Path, process: subprocess.Popen, timeout: float = 60) -> None:
    """``path`` made by ``process``, which must not end first (its output, if it does)."""

    def made() -> bool:
        if process.poll() is not None:
            raise RuntimeError(f"ended before {path} appeared: {process.communicate()}")
        return path.exists()

    wait_until(made, f"{path} appeared", timeout)


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def running(pid: int) -> bool:
    """Whether process ``pid`` exists and has not exited (a zombie has)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rpartition(")")[2].split()[0] != "Z"  # the state follows the command


def accepting(port: int) -> bool:
    """Whether something accepts connections on 127.0.0.1:``port``."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


def local(*arguments) -> subprocess.CompletedProcess:
    """``tidelog-local ARGUMENTS``, run to its end."""
    return subprocess.run(
        [TIDELOG_LOCAL, *map(str, arguments)],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


def broker_entry(description: Path, broker_id: int) -> dict:
    (entry,) = [b for b in json.loads(description.read_text())["brokers"] if b["id"] == broker_id]
    return entry


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
        "--override",
        "num.partitions=4",
        "--override",
        "auto.create.topics.enable=false",
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
            assert broker["running"] is True and broker["exit_code"] is None
            assert broker["log"] == str(Path(broker["config"]).with_name("broker.log"))
            assert f"broker.id={broker['id']}" in Path(broker["config"]).read_text()
            assert len(broker["log_dirs"]) == 3
            assert all(Path(d, "meta.properties").exists() for d in broker["log_dirs"])

        metadata = AdminClient(cluster["bootstrap"]).metadata(["demo"])
        assert sorted(b.node_id for b in metadata.brokers) == [1, 2]
        (demo,) = metadata.topics
        assert demo.error_code == 0 and len(demo.partitions) == 6
        # Replicated on every broker when there are fewer than three.
        assert all(sorted(p.replica_nodes) == [1, 2] for p in demo.partitions)

        # The overrides reached every broker: the default partition count, and no
        # topic made by a Metadata request.
        for broker in brokers:
            assert "auto.create.topics.enable=false" in Path(broker["config"]).read_text()
        admin = AdminClient(cluster["bootstrap"])
        admin.create_topic("defaults")
        (defaults,) = admin.metadata(["defaults"]).topics
        assert len(defaults.partitions) == 4
        with BrokerConnection("127.0.0.1", brokers[0]["port"]) as connection:
            asked = connection.request(
                ApiKey.METADATA,
                None,
                {"topics": [{"name": "never-made"}], "allow_auto_topic_creation": True},
            )
        assert asked.topics[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION

        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=60)
    finally:
        stop_after_failure(process)
    assert process.returncode == 0, err
    assert "stopped." in out
    assert not description.exists()
    assert not (tmp_path / "control.sock").exists()
    assert not any(alive(b["pid"]) for b in brokers)


def test_a_killed_start_takes_zookeeper_and_its_brokers_down(tmp_path):
    """SIGKILL leaves ``start`` no time to stop anything: the kernel's SIGTERM to each
    child (the brokers through tidelog.child_process's launcher) does."""
    zk_port, base_port = free_port_run(1), free_port_run(2)
    command = [TIDELOG_LOCAL, "start", "--brokers", "2", "--dir", tmp_path]
    command += ["--zk-port", str(zk_port), "--base-port", str(base_port)]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    brokers: list[dict] = []
    try:
        wait_for(tmp_path / "cluster.json", process)
        brokers = json.loads((tmp_path / "cluster.json").read_text())["brokers"]
        assert all(running(b["pid"]) for b in brokers) and accepting(zk_port)
        process.kill()
        process.communicate(timeout=60)

        def no_broker_running() -> bool:
            still = [b["id"] for b in brokers if running(b["pid"])]
            assert not still, f"brokers {still} still run"
            return True

        wait_until(no_broker_running, "every broker exited", timeout=90)
        wait_until(lambda: not accepting(zk_port), "ZooKeeper stopped listening", timeout=60)
    finally:
        stop_after_failure(process)
        for broker in brokers:  # without the feature, the brokers outlive the test
            if running(broker["pid"]):
                os.kill(broker["pid"], signal.SIGKILL)


def test_a_dead_broker_leaves_the_others_serving_until_restart_broker_brings_it_back(tmp_path):
    base_port = free_port_run(3)
    directory = tmp_path.resolve()
    stderr_path = tmp_path / "start.err"
    command = [TIDELOG_LOCAL, "start", "--dir", directory, "--base-port", str(base_port)]
    with open(stderr_path, "w") as stderr:
        process = subprocess.Popen(
            [*command, "--zk-port", str(free_port_run(1))],
            stdout=subprocess.PIPE,
            stderr=stderr,
            text=True,
        )
    zookeeper: KazooClient | None = None
    try:
        description = directory / "cluster.json"
        wait_for(description, process)
        cluster = json.loads(description.read_text())
        bootstrap = cluster["bootstrap"]
        zookeeper = KazooClient(hosts=cluster["zookeeper"])
        zookeeper.start(timeout=10)

        def registration_owner() -> int | None:
            stat = zookeeper.exists("/brokers/ids/2")
            return None if stat is None else stat.ephemeralOwner

        def broker_2_down() -> dict | None:
            entry = broker_entry(description, 2)
            return None if entry["running"] else entry

        def broker_2_rejoined() -> bool:
            broker_1 = f"127.0.0.1:{broker_entry(description, 1)['port']}"
            return sorted(b.node_id for b in AdminClient(broker_1).metadata([]).brokers) == [
                1,
                2,
                3,
            ]

        killed = broker_entry(description, 2)
        old_owner = registration_owner()
        with ContinuousProducer(bootstrap, "demo", 6) as producer:
            producer.wait_for_more(100, "records acknowledged by the whole cluster")
            os.kill(killed["pid"], signal.SIGKILL)
            down = wait_until(broker_2_down, "cluster.json says broker 2 is down")
            assert (down["pid"], down["exit_code"]) == (None, -9)
            assert process.poll() is None  # start, ZooKeeper and the others go on
            assert all(broker_entry(description, b)["running"] for b in (1, 3))
            died = stderr_path.read_text()
            assert f"broker 2 died: exit code -9 (SIGKILL); its log: {killed['log']}" in died
            assert f"tidelog-local restart-broker 2 --dir {directory}" in died
            producer.wait_for_more(200, "records acknowledged with broker 2 down")

            restarted = local("restart-broker", 2, "--dir", directory)
            assert restarted.returncode == 0, restarted.stderr
            back = broker_entry(description, 2)
            assert back["running"] is True and back["exit_code"] is None
            assert back["pid"] != killed["pid"] and alive(back["pid"])
            assert restarted.stdout == f"broker 2 is running again (pid {back['pid']})\n"
            assert registration_owner() not in (None, old_owner)  # registered anew
            wait_until(broker_2_rejoined, "broker 1's metadata lists broker 2 again")
            producer.wait_for_more(200, "records acknowledged after broker 2 came back")

            again = local("restart-broker", 2, "--dir", directory)
            assert (again.returncode, again.stderr) == (
                1,
                f"tidelog-local: broker 2 is running (pid {back['pid']}); stop it first: "
                f"tidelog-local stop-broker 2 --dir {directory}\n",
            )
            unknown = local("stop-broker", 7, "--dir", directory)
            assert (unknown.returncode, unknown.stderr) == (
                1,
                "tidelog-local: no broker 7 in this cluster (brokers 1, 2, 3)\n",
            )

            stopped = local("stop-broker", 3, "--dir", directory)
            assert stopped.returncode == 0, stopped.stderr
            assert stopped.stdout.startswith("broker 3 stopped (exit code 0)")
            entry = broker_entry(description, 3)
            assert (entry["running"], entry["pid"], entry["exit_code"]) == (False, None, 0)
            twice = local("stop-broker", 3, "--dir", directory)
            assert (twice.returncode, twice.stderr) == (
                1,
                "tidelog-local: broker 3 is not running\n",
            )
            producer.wait_for_more(200, "records acknowledged with broker 3 stopped")
        assert_acknowledged_records_kept(bootstrap, producer)

        process.send_signal(signal.SIGTERM)
        out, _ = process.communicate(timeout=60)
    finally:
        if zookeeper is not None:
            zookeeper.stop()
            zookeeper.close()
        stop_after_failure(process)
    assert process.returncode == 0, stderr_path.read_text()
    assert "stopped." in out
    assert "broker 3 died" not in stderr_path.read_text()  # stopped on request
    assert not description.exists()


def test_restart_broker_without_a_running_start_is_one_line_and_status_1(tmp_path):
    done = local("restart-broker", 1, "--dir", tmp_path)
    assert done.returncode == 1
    assert done.stderr == f"tidelog-local: no tidelog-local start is running in {tmp_path}\n"


def test_a_port_in_use_is_one_line_and_exit_2_before_anything_starts(tmp_path):
    base_port = free_port_run(2)
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", base_port + 1))
        taken.listen()
        ports = ["--base-port", str(base_port), "--zk-port", str(free_port_run(1))]
        done = subprocess.run(
            [TIDELOG_LOCAL, "start", "--dir", tmp_path, "--brokers", "2", *ports],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        )
    assert done.returncode == 2
    assert done.stderr == (
        f"tidelog-local: port {base_port + 1}, broker 2's (--base-port), is in use on "
        "127.0.0.1: choose another\n"
    )
    assert not (tmp_path / "zookeeper").exists()


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--brokers", "0"], "--brokers must be at least 1"),
        (["--log-dirs-per-broker", "0"], "--log-dirs-per-broker must be at least 1"),
        (
            ["--brokers", "1", "--replication-factor", "2"],
            "--replication-factor must be between 1 and --brokers",
        ),
        (["--override", "num.partitions"], "--override expects key=value"),
        (["--override", "num.partitons=3"], "--override num.partitons: not a broker config"),
        (["--override", "num.partitions=three"], "--override num.partitions=three:"),
        (["--override", "broker.id=7"], "--override broker.id: tidelog-local sets it"),
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
