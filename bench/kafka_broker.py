"""Apache Kafka's broker (ZooKeeper mode) as a child process, for ``make bench`` only.

A :class:`tidelog.server.process.BrokerProcess` with Kafka's command and properties, so
that the harness drives both brokers the same way.
It runs ``kafka.Kafka`` from the jars that ``make kafka-libs`` caches, with the heap that
``kafka-server-start.sh`` gives by default (1 GiB) and its logging at warn level.
"""

from __future__ import annotations

import os
from pathlib import Path

from tidelog.server.process import BrokerProcess
from tidelog.zookeeper import find_java

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


class KafkaBroker(BrokerProcess):
    """One Apache Kafka broker with its own config file, log dirs and log file."""

    name = "Kafka"
    start_timeout = 60.0

    def extra_properties(self) -> dict[str, str]:
        # A single broker: the internal topics must fit on it.
        return {
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
        }

    def command(self) -> list[str]:
        return [
            find_java(),
            *KAFKA_HEAP,
            *KAFKA_JVM_FLAGS,
            "-cp",
            f"{kafka_libs()}/*",
            "kafka.Kafka",
            str(self.config_path),
        ]
