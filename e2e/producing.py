"""A steady producer that e2e tests run while they disturb the example Cluster, and the
check that it lost nothing: an idempotent acks=all producer to ``orders`` (three
replicas, ``min.insync.replicas`` 2), 15 records a second, so that a broker below
``min.insync.replicas`` or a record lost or written twice shows in its result."""

from __future__ import annotations

import subprocess

from e2e.operator_deployment import OperatorDeployment

__all__ = ["assert_once_in_order", "nothing_lost", "steady_producer"]

PER_SECOND = 15


def steady_producer(
    deployment: OperatorDeployment, prefix: str, minutes: int = 10
) -> subprocess.Popen:
    """The producer, running while the test goes on until :func:`nothing_lost` stops it
    (or for ``minutes``), returned once its first record is acknowledged."""
    return deployment.producer_started(
        "--topic",
        "orders",
        "--count",
        str(PER_SECOND * 60 * minutes),
        "--per-second",
        str(PER_SECOND),
        "--prefix",
        prefix,
        "--idempotent",
    )


def nothing_lost(deployment: OperatorDeployment, producer: subprocess.Popen, prefix: str) -> None:
    """Stop the steady producer: every record it sent was acknowledged, and is in the
    topic once, in order."""
    produced = deployment.producer_stopped(producer)
    assert produced["failures"] == [], produced
    assert produced["acknowledged"] == produced["sent"] > 0, produced
    consumed = deployment.client(
        "consume", "--topic", "orders", "--expect", str(produced["sent"]), "--prefix", prefix
    )
    assert_once_in_order(consumed)


def assert_once_in_order(consumed: dict) -> None:
    """Every record an idempotent producer had acknowledged was read, once, in order."""
    assert (consumed["missing_count"], consumed["duplicates"], consumed["out_of_order"]) == (
        0,
        0,
        0,
    ), consumed
