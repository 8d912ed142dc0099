"""``tidelog-healthcheck`` against a real broker and a real ZooKeeper: exit status 0 and
one line when they answer, 1 and one line on stderr when nothing or something else
listens."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from integration.broker_process import BrokerProcess, free_port, uninformed_broker
from integration.tls_files import TlsFiles
from tidelog.zookeeper import ZooKeeperServer

HEALTHCHECK = Path(sys.executable).with_name("tidelog-healthcheck")


def healthcheck(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("TIDELOG_CONFIG_")}
    return subprocess.run(
        [str(HEALTHCHECK), *args, "--timeout", "3"],
        capture_output=True,
        text=True,
        timeout=30,
        env={**environ, **(env or {})},
    )


def assert_unhealthy(result: subprocess.CompletedProcess, reason: str) -> None:
    assert result.returncode == 1, result
    assert result.stdout == ""
    assert result.stderr.startswith("tidelog-healthcheck: ") and result.stderr.count("\n") == 1
    assert reason in result.stderr, result.stderr


def config_file(directory: Path, listeners: str) -> Path:
    path = directory / "healthcheck.properties"
    path.write_text(f"broker.id=7\nlisteners={listeners}\nzookeeper.connect=127.0.0.1:1\n")
    return path


def test_a_running_broker_is_healthy(broker: BrokerProcess) -> None:
    result = healthcheck(str(broker.config_path))
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(
        f"broker 1 answers ApiVersions on PLAINTEXT 127.0.0.1:{broker.port} ("
    )
    assert result.stdout.count("\n") == 1


def test_a_broker_without_the_controllers_metadata_is_not_ready_but_listening(
    tmp_path: Path, zk_chroot: str
) -> None:
    """``/controller`` names a broker that is not there: the broker answers ApiVersions
    but knows no live broker, so as a readiness probe the check keeps it out of a
    Service, where clients would learn an empty cluster from it; ``--listening`` (the
    startupProbe's check) passes it."""
    with uninformed_broker(tmp_path / "uninformed", zk_chroot) as uninformed:
        result = healthcheck(str(uninformed.config_path))
        assert_unhealthy(result, "has no metadata from the controller yet")
        # ... but it has started: its logs are loaded, its listener answers
        listening = healthcheck("--listening", str(uninformed.config_path))
        assert listening.returncode == 0, listening.stderr
        assert listening.stdout.startswith(
            f"broker 7 answers ApiVersions on PLAINTEXT 127.0.0.1:{uninformed.port} ("
        )
        assert "live brokers" not in listening.stdout and listening.stdout.count("\n") == 1


def test_listening_wants_every_listener_to_answer(broker: BrokerProcess, tmp_path: Path) -> None:
    """``--listening`` (the startupProbe's check) skips only the metadata: a listener
    that does not answer still fails it."""
    closed = free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{broker.port},EXTRA://127.0.0.1:{closed}"
    path = config_file(tmp_path, listeners)
    result = healthcheck(
        "--listening",
        str(path),
        "--override",
        "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,EXTRA:PLAINTEXT",
    )
    assert_unhealthy(result, f"broker on EXTRA 127.0.0.1:{closed}: connection refused")


def test_a_listener_on_every_interface_is_checked_on_loopback(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    path = config_file(tmp_path, f"PLAINTEXT://0.0.0.0:{broker.port}")
    result = healthcheck(str(path), "--override", "advertised.listeners=PLAINTEXT://broker:1")
    assert result.returncode == 0, result.stderr
    assert f"127.0.0.1:{broker.port}" in result.stdout


def test_environment_and_overrides_choose_the_listener(
    broker: BrokerProcess, tmp_path: Path
) -> None:
    closed = free_port()
    path = config_file(tmp_path, f"PLAINTEXT://127.0.0.1:{closed}")
    live = {"TIDELOG_CONFIG_LISTENERS": f"PLAINTEXT://127.0.0.1:{broker.port}"}
    assert healthcheck(str(path), env=live).returncode == 0
    overridden = healthcheck(
        str(path), "--override", f"listeners=PLAINTEXT://127.0.0.1:{closed}", env=live
    )
    assert_unhealthy(overridden, "connection refused")


def test_arguments_may_come_from_a_file(broker: BrokerProcess, tmp_path: Path) -> None:
    arguments = tmp_path / "healthcheck.args"
    arguments.write_text(f"{broker.config_path}\n--override\nbroker.id=1\n")
    result = healthcheck(f"@{arguments}")
    assert result.returncode == 0, result.stderr


def test_a_closed_port_is_unhealthy(tmp_path: Path) -> None:
    port = free_port()
    result = healthcheck(str(config_file(tmp_path, f"PLAINTEXT://127.0.0.1:{port}")))
    assert_unhealthy(result, f"broker on PLAINTEXT 127.0.0.1:{port}: connection refused")


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts connections and closes each without a word."""
    with socket.create_server(("127.0.0.1", 0)) as server:
        server.settimeout(0.1)
        stop = threading.Event()

        def serve() -> None:
            while not stop.is_set():
                try:
                    connection, _ = server.accept()
                except TimeoutError:
                    continue
                connection.recv(1024)
                connection.close()

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        yield server.getsockname()[1]
        stop.set()
        thread.join()


def test_something_else_on_the_port_is_unhealthy(silent_server: int, tmp_path: Path) -> None:
    path = config_file(tmp_path, f"PLAINTEXT://127.0.0.1:{silent_server}")
    assert_unhealthy(healthcheck(str(path)), "the broker closed the connection")
    assert_unhealthy(
        healthcheck("--zookeeper", f"127.0.0.1:{silent_server}"),
        "does not serve: no answer to srvr",
    )


def test_a_missing_config_file_is_unhealthy(tmp_path: Path) -> None:
    assert_unhealthy(healthcheck(str(tmp_path / "absent.properties")), "cannot read")


def test_zookeeper_serving_is_healthy_and_a_closed_port_is_not(
    zookeeper: ZooKeeperServer,
) -> None:
    result = healthcheck("--zookeeper", zookeeper.connect_string)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"ZooKeeper on {zookeeper.connect_string} serves (Mode: standalone)\n"
    closed = free_port()
    assert_unhealthy(
        healthcheck("--zookeeper", f"127.0.0.1:{closed}"),
        f"ZooKeeper on 127.0.0.1:{closed}: connection refused",
    )


PLAIN_BROKER = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="broker-secret" user_broker="broker-secret";'
)


def test_secured_listeners_are_probed_as_the_broker_reaches_them(
    tmp_path: Path, zk_chroot: str
) -> None:
    """A broker whose inter-broker listener is SASL_SSL and whose other listener wants
    client certificates: the probe speaks TLS to both (the broker's own certificate for
    mutual TLS) and logs in as the broker for Metadata; a certificate the probe cannot
    trust makes the broker unhealthy, in one line."""
    tls = TlsFiles.make(tmp_path / "tls")
    ports = {name: free_port() for name in ("PLAINTEXT", "INTERNAL", "MTLS")}
    broker = BrokerProcess(
        tmp_path / "broker",
        zk_chroot,
        port=ports["PLAINTEXT"],
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{ports['PLAINTEXT']},"
            f"INTERNAL://:{ports['INTERNAL']},MTLS://127.0.0.1:{ports['MTLS']}",
            "advertised.listeners": f"INTERNAL://127.0.0.1:{ports['INTERNAL']},"
            f"MTLS://127.0.0.1:{ports['MTLS']}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL,MTLS:SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": PLAIN_BROKER,
            "listener.name.mtls.ssl.client.auth": "required",
            **tls.listener_overrides(tls.broker_keystore()),
        },
    ).start()
    try:
        result = healthcheck(str(broker.config_path))
        assert result.returncode == 0, result.stderr
        assert f"INTERNAL 127.0.0.1:{ports['INTERNAL']} (" in result.stdout
        assert f"MTLS 127.0.0.1:{ports['MTLS']} (" in result.stdout
        assert result.stdout.rstrip().endswith("and knows 1 live brokers")
        foreign = TlsFiles.make(tmp_path / "foreign")
        untrusting = healthcheck(
            str(broker.config_path),
            "--override",
            f"ssl.truststore.location={foreign.ca_file}",
        )
        assert_unhealthy(untrusting, f"broker on INTERNAL 127.0.0.1:{ports['INTERNAL']}: ")
    finally:
        assert broker.stop() == 0, broker.log()[-3000:]
