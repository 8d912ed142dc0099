"""Apache Kafka's own ``__consumer_offsets`` keys and values, written and read through
``KafkaOffsetsRecordTool.java`` (one JVM launch per call; see that file for the jobs)."""

from __future__ import annotations

import json
from collections.abc import Sequence

from . import HERE, _java

__all__ = ["run_offsets_record_jobs"]

TOOL_SOURCE = HERE / "KafkaOffsetsRecordTool.java"


def run_offsets_record_jobs(jobs: Sequence[dict]) -> list[dict]:
    """Each job's answer, in order."""
    proc = _java([str(TOOL_SOURCE)], stdin=json.dumps(list(jobs)))
    if proc.returncode != 0:
        raise RuntimeError(
            f"KafkaOffsetsRecordTool failed (exit {proc.returncode}):\n{proc.stderr}\n{proc.stdout}"
        )
    return json.loads(proc.stdout.strip().splitlines()[-1])
