"""The admin library and the tools install without the broker's extra (the operator's
and Spark's images have no kazoo): importing them must not reach the broker's ZooKeeper
client, however security (TLS, SASL) grows."""

from __future__ import annotations

import subprocess
import sys

import pytest

CLIENT_SIDE = [
    "tidelog.admin",
    "tidelog.security.client_security",
    "tidelog.security.sasl_client",
    "tidelog.cli.topics",
    "tidelog.cli.consumer_groups",
    "tidelog.cli.acls",
    "tidelog_operator.handlers",
    "tidelog_spark.pipeline",
]


@pytest.mark.parametrize("module", CLIENT_SIDE)
def test_imports_without_the_brokers_zookeeper_client(module):
    blocked = "import sys; sys.modules['kazoo'] = None; import " + module
    result = subprocess.run(
        [sys.executable, "-c", blocked], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr[-2000:]
