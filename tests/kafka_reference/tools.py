"""Apache Kafka's own command-line tools, run from the Maven Central artefacts.

Each ``kafka-*.sh`` script is a thin wrapper around one main class; running the class
with Kafka's jars on the class path is what the script does.
"""

from __future__ import annotations

import subprocess

from . import JVM_FLAGS, java_executable, kafka_libs

__all__ = ["TOOLS", "run_kafka_tool"]

TOOLS = {
    "kafka-topics": "org.apache.kafka.tools.TopicCommand",
    "kafka-console-producer": "kafka.tools.ConsoleProducer",
    "kafka-console-consumer": "org.apache.kafka.tools.consumer.ConsoleConsumer",
    "kafka-configs": "kafka.admin.ConfigCommand",
    "kafka-log-dirs": "org.apache.kafka.tools.LogDirsCommand",
    "kafka-reassign-partitions": "org.apache.kafka.tools.reassign.ReassignPartitionsCommand",
    "kafka-get-offsets": "org.apache.kafka.tools.GetOffsetShell",
    "kafka-leader-election": "org.apache.kafka.tools.LeaderElectionCommand",
    "kafka-producer-perf-test": "org.apache.kafka.tools.ProducerPerformance",
    "kafka-consumer-perf-test": "org.apache.kafka.tools.ConsumerPerformance",
    "kafka-consumer-groups": "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand",
    "kafka-acls": "kafka.admin.AclCommand",
    "kafka-delegation-tokens": "org.apache.kafka.tools.DelegationTokenCommand",
}


def run_kafka_tool(
    tool: str, *args: str, stdin: str | None = None, timeout: float = 120
) -> subprocess.CompletedProcess:
    """Run ``tool`` (a key of TOOLS) with ``args``; output captured as text."""
    command = [java_executable(), *JVM_FLAGS, "-cp", f"{kafka_libs()}/*", TOOLS[tool], *args]
    return subprocess.run(
        command, input=stdin, capture_output=True, text=True, timeout=timeout, check=False
    )
