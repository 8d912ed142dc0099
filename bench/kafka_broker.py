"""Apache Kafka's broker (ZooKeeper mode) as a child process, for ``make bench`` only.

The same shape as :class:`tidelog.server.process.BrokerProcess` (``start``, ``stop``,
``bootstrap``, ``process``, ``log_dirs``) so that the harness drives both the same way.
It runs ``kafka.Kafka`` from the jars that ``make kafka-libs`` caches, with the heap that
``kafka-server-start.sh`` gives by default (1 GiB) and its logging at warn level.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

from tidelog.server.process import free_port

__all__ = ["KAFKA_HEAP", "KafkaBroker", "kafka_libs"]

# What kafka-server-start.sh uses when KAFKA_HEAP_OPTS is unset, plus its GC settings.
KAFKA_HEAP = ("-Xmx1G", "-Xms1G")
KAFKA_JVM_FLAGS = (
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-Djava.awt.headless=true",
    "-Dorg.slf4j.simpleLogger.defaultLogLevel=warn",
)


def kafka_libs() -> Path:
    """Kafka's jars: ``TIDELOG_KAFKA_LIBS`` (exported by the Makefile) or the default cache."""
    value = os.environ.get("TIDELOG_KAFKA_LIBS")
    if value:
        return Path(value)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tidelog"
    candidates = sorted(cache.glob("kafka-*/libs"))
    if not candidates:
        raise FileNotFoundError("Apache Kafka's jars are missing: run `make kafka-libs`")
    return candidates[-1]


def java() -> str:
    home = os.environ.get("JAVA_HOME")
    return str(Path(home, "bin", "java")) if home else (shutil.which("java") or "java")


class KafkaBroker:
    """One Apache Kafka broker with its own config file, log dirs and log file."""

    def __init__(
        self,
        directory: Path,
        zookeeper_connect: str,
        *,
        broker_id: int = 1,
        port: int | None = None,
        overrides: dict[str, str] | None = None,
    ):
        self.directory = Path(directory)
        self.directory.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.log_dirs = [self.directory / "data-0", self.directory / "data-1"]
        self.log_path = self.directory / "broker.log"
        properties = {
            "broker.id": str(broker_id),
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "log.dirs": ",".join(str(d) for d in self.log_dirs),
            "zookeeper.connect": zookeeper_connect,
            "zookeeper.session.timeout.ms": "6000",
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            **(overrides or {}),
        }
        self.config_path = self.directory / "server.properties"
        self.config_path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
        self.process: subprocess.Popen | None = None

    @property
    def bootstrap(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 60) -> KafkaBroker:
        command = [
            java(),
            *KAFKA_HEAP,
            *KAFKA_JVM_FLAGS,
            "-cp",
            f"{kafka_libs()}/*",
            "kafka.Kafka",
            str(self.config_path),
        ]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"Kafka exited with {self.process.returncode}:\n{self.log()}")
            if self._answers():
                return self
            time.sleep(0.1)
        self.stop()
        raise TimeoutError(f"Kafka did not start in {timeout} s:\n{self.log()}")

    def _answers(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                return True
        except OSError:
            return False

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def stop(self, timeout: float = 60) -> int:
        """SIGTERM (a controlled shutdown), SIGKILL after ``timeout``."""
        if self.process is None or self.process.poll() is not None:
            return self.process.returncode if self.process else 0
        self.process.send_signal(signal.SIGTERM)
        try:
            return self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            return self.process.wait()
