"""``tidelog-zookeeper`` runs a real ZooKeeper server in the foreground: ready line, client
sessions with ephemeral nodes, TLS clients on their own address, clean stop on SIGTERM and
SIGINT, one-line errors."""

from __future__ import annotations

import os
import re
import selectors
import signal
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tidelog.controller.zk_security import ZkClientSecurity, secured_kazoo_client
from tidelog.security.certificates import CertificateAuthority
from tidelog.zookeeper import four_letter_word, zookeeper_libs
from waiting import wait_until
from zookeeper.helpers import kazoo_session

CLI = Path(sys.executable).with_name("tidelog-zookeeper")
CLIENT_SUBJECT = "CN=events-broker,O=tidelog.dev"
READY = re.compile(r"zookeeper ready at 127\.0\.0\.1:(\d+)(?:, TLS at (\S+))?\n")


def _read_line(process: subprocess.Popen, timeout: float) -> str:
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            process.kill()
            raise AssertionError(f"no line from {CLI.name} within {timeout} s")
    return process.stdout.readline()


@contextmanager
def running_cli(data_dir: Path, *args: str) -> Iterator[tuple[subprocess.Popen, int]]:
    """The CLI on a free port, once it printed its ready line; killed if a test fails.
    With TLS ``args``, the ready line's TLS address is the process's ``secure_address``."""
    process = subprocess.Popen(
        [str(CLI), "--port", "0", "--data-dir", str(data_dir), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = _read_line(process, timeout=30)
        ready = READY.fullmatch(line)
        assert ready, f"unexpected first line {line!r}; stderr: {process.stderr.read()}"
        process.secure_address = ready.group(2)
        yield process, int(ready.group(1))
    finally:
        if process.poll() is None:
            process.kill()
        process.communicate()


def _refuses_connections(port: int, host: str = "127.0.0.1") -> bool:
    try:
        four_letter_word(host, port, "ruok", timeout=0.5)
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


def _run(env: dict[str, str], data_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(CLI), "--port", "0", "--data-dir", str(data_dir), *args],
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


def _tls_args(directory: Path) -> list[str]:
    """A CA, ZooKeeper's keystore naming 127.0.0.2 and a client's keystore, in
    ``directory``; the CLI's TLS options with its TLS port on 127.0.0.2."""
    ca = CertificateAuthority("CN=cluster-ca")
    (directory / "ca.pem").write_bytes(ca.certificate_pem)
    for name, subject in (("zookeeper", "CN=zookeeper"), ("client", CLIENT_SUBJECT)):
        issued = ca.issue(subject, hosts=["127.0.0.2"])
        (directory / f"{name}.pem").write_bytes(issued.key_pem() + issued.chain_pem)
    return [
        "--secure-port",
        "0",
        "--secure-host",
        "127.0.0.2",
        "--tls-keystore",
        str(directory / "zookeeper.pem"),
        "--tls-truststore",
        str(directory / "ca.pem"),
    ]


def test_serves_tls_clients_on_the_secure_address(tmp_path: Path) -> None:
    """The TLS port listens on --secure-host only, the plain one on --host only; a TLS
    client is authenticated by its certificate: what it creates with Kafka's secure
    ACLs belongs to its subject."""
    with running_cli(tmp_path / "zk", *_tls_args(tmp_path)) as (process, port):
        host, secure_port = process.secure_address.split(":")
        assert host == "127.0.0.2"
        context = ssl.create_default_context(cafile=str(tmp_path / "ca.pem"))
        context.load_cert_chain(str(tmp_path / "client.pem"))  # host name checked too
        client = secured_kazoo_client(
            ZkClientSecurity(context, set_acl=True), hosts=process.secure_address
        )
        client.start(timeout=15)
        try:
            client.create("/brokers/topics/orders", b"{}", makepath=True)
            acls, _ = client.get_acls("/brokers/topics/orders")
        finally:
            client.stop()
            client.close()
        assert ("x509", CLIENT_SUBJECT) in {(acl.id.scheme, acl.id.id) for acl in acls}
        with pytest.raises(ConnectionRefusedError):
            socket.create_connection(("127.0.0.1", int(secure_port)), timeout=5)
        assert _refuses_connections(port, "127.0.0.2")
        assert four_letter_word("127.0.0.1", port, "ruok") == "imok"


@pytest.mark.parametrize(
    ("keystore", "error"),
    [
        ("missing.pem", "cannot read the TLS keystore {directory}/missing.pem: "),
        ("ca.pem", "the TLS keystore {directory}/ca.pem holds no PEM private key"),
    ],
)
def test_an_unusable_keystore_gives_one_line_and_status_1(
    tmp_path: Path, keystore: str, error: str
) -> None:
    args = _tls_args(tmp_path)
    args[args.index("--tls-keystore") + 1] = str(tmp_path / keystore)
    result = _run(dict(os.environ), tmp_path / "zk", *args)
    assert result.returncode == 1
    assert result.stdout == ""
    assert result.stderr.count("\n") == 1
    assert result.stderr.startswith("tidelog-zookeeper: " + error.format(directory=tmp_path))
    assert not (tmp_path / "zk" / "zookeeper.log").exists()


@pytest.mark.parametrize(
    "args",
    [
        ["--secure-port", "0"],
        ["--tls-keystore", "k.pem", "--tls-truststore", "t.pem"],
        ["--quorum-tls"],
        ["--secure-port", "0", "--tls-keystore", "k", "--tls-truststore", "t", "--quorum-tls"],
    ],
)
def test_tls_options_are_refused_without_their_companions(tmp_path: Path, args) -> None:
    result = _run(dict(os.environ), tmp_path, *args)
    assert result.returncode == 2, result
    error = result.stderr.strip().splitlines()[-1]
    assert error.startswith("tidelog-zookeeper: error: --")
