"""Runs ``KafkaProtocolReference.java`` (Apache Kafka's own serializers) once per session.

Jars and Java come from :mod:`kafka_reference` (``make kafka-libs``); missing ones are an
error, never a skip.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from kafka_reference import JVM_FLAGS, java_executable, kafka_libs

SOURCE = Path(__file__).resolve().parent / "KafkaProtocolReference.java"
TIMEOUT_S = 300


def run_kafka_reference(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """Kafka's serialization of ``samples`` plus its built messages and tables (see the
    Java file's header for the format)."""
    proc = subprocess.run(
        [java_executable(), *JVM_FLAGS, "-cp", f"{kafka_libs()}/*", str(SOURCE)],
        input=json.dumps({"samples": samples}),
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    if proc.returncode != 0:
        raise RuntimeError(
            f"KafkaProtocolReference failed (exit {proc.returncode}):\n{proc.stderr[-5000:]}"
        )
    return json.loads(proc.stdout)
