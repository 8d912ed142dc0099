"""A broker as a child process: ``tidelog-local`` (``make run``), the integration tests
and ``make bench`` run brokers this way, each with its own config file, log dirs and
log file. Subclasses change only the command and the properties (``make bench`` runs
Apache Kafka's broker through the same class)."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

__all__ = ["TIDELOG_SERVER", "BrokerProcess", "free_port"]

TIDELOG_SERVER = Path(sys.executable).with_name("tidelog-server")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class BrokerProcess:
    """One broker: its config file, log dirs and process; start, stop, kill, restart."""

    name = "broker"
    start_timeout = 30.0

    def __init__(
        self,
        directory: Path,
        zookeeper_connect: str,
        *,
        broker_id: int = 1,
        port: int | None = None,
        log_dirs: int = 2,
        overrides: dict[str, str] | None = None,
    ):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.broker_id = broker_id
        self.port = port or free_port()
        self.log_dirs = [self.directory / f"data-{i}" for i in range(log_dirs)]
        self.log_path = self.directory / "broker.log"
        properties = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": ",".join(str(d) for d in self.log_dirs),
            "zookeeper.connect": zookeeper_connect,
            "zookeeper.session.timeout.ms": "6000",
            **self.extra_properties(),
            **(overrides or {}),
        }
        self.config_path = self.directory / "server.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self.process: subprocess.Popen | None = None

    def extra_properties(self) -> dict[str, str]:
        # Small enough for several brokers on one machine.
        return {"log.cleaner.dedupe.buffer.size": str(4 * 1024 * 1024)}

    def command(self) -> list[str]:
        return [str(TIDELOG_SERVER), str(self.config_path)]

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float | None = None) -> BrokerProcess:
        timeout = self.start_timeout if timeout is None else timeout
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"{self.name} exited with {self.process.returncode}:\n{self.log()}"
                )
            if self._answers():
                return self
            time.sleep(0.05)
        self.kill()
        raise TimeoutError(f"{self.name} did not start in {timeout} s:\n{self.log()}")

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout: float | None = None) -> int:
        """SIGTERM and wait: a clean shutdown exits 0 (SIGKILL and an error after
        ``timeout``, by default as long as a start may take)."""
        timeout = self.start_timeout if timeout is None else timeout
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            raise

    def kill(self) -> None:
        """SIGKILL: the crash case."""
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait()

    def restart(self, timeout: float | None = None) -> BrokerProcess:
        self.stop()
        return self.start(timeout)
