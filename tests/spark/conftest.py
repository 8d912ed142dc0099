"""The pipeline's tests run against ``tidelog-local`` with 3 brokers (one cluster per
module, each test on its own topics and group) and Spark in ``local`` mode."""

from __future__ import annotations

import json
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.test_local import TIDELOG_LOCAL, free_port_run, wait_for
from tidelog_spark.session import spark_session


@dataclass(frozen=True)
class LocalCluster:
    bootstrap: str
    log_dirs: list[Path]


@pytest.fixture(scope="module")
def local_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    """``tidelog-local start`` with 3 brokers; SIGTERM stops it cleanly after the module."""
    base = tmp_path_factory.mktemp("local")
    first_port = free_port_run(4)
    process = subprocess.Popen(
        [
            *(TIDELOG_LOCAL, "start", "--dir", base),
            *("--zk-port", str(first_port), "--base-port", str(first_port + 1)),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    description = base / "cluster.json"
    try:
        wait_for(description, process, timeout=120)
        cluster = json.loads(description.read_text())
        yield LocalCluster(
            cluster["bootstrap"],
            [Path(d) for b in cluster["brokers"] for d in b["log_dirs"]],
        )
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
    assert process.returncode == 0, err


@pytest.fixture(scope="module")
def spark():
    """A local Spark session of the test process (reading what the pipeline wrote)."""
    session = spark_session("tidelog-tests", "local[2]")
    yield session
    session.stop()
