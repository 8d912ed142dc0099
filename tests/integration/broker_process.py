"""Broker processes for the integration tests (the class ``make run`` uses, configured
for tests)."""

import contextlib
from collections.abc import Iterator
from pathlib import Path

from kazoo.client import KazooClient

from tidelog.server import process
from tidelog.server.process import TIDELOG_SERVER, free_port

__all__ = [
    "TIDELOG_SERVER",
    "BrokerProcess",
    "free_port",
    "two_listener_broker",
    "uninformed_broker",
]


class BrokerProcess(process.BrokerProcess):
    """A broker that, alone, is a cluster of one: its offsets topic has one replica, as
    Kafka's single-broker quickstart configures it (the broker waits for
    ``offsets.topic.replication.factor`` alive brokers, 3 by default). A
    :class:`~integration.cluster.Cluster` overrides it with its size."""

    def extra_properties(self) -> dict[str, str]:
        return {**super().extra_properties(), "offsets.topic.replication.factor": "1"}


def two_listener_broker(
    directory: Path, zk_connect: str, name: str, overrides: dict[str, str]
) -> tuple[BrokerProcess, int]:
    """A broker, not started, with a PLAINTEXT listener on its own ``port`` and the
    listener ``name`` on another free port (returned), and ``overrides``."""
    plain, second = free_port(), free_port()
    listeners = f"PLAINTEXT://127.0.0.1:{plain},{name}://127.0.0.1:{second}"
    process = BrokerProcess(
        directory, zk_connect, port=plain, overrides={"listeners": listeners, **overrides}
    )
    return process, second


@contextlib.contextmanager
def uninformed_broker(directory: Path, zk_connect: str) -> Iterator[BrokerProcess]:
    """Broker 7, running, that never gets the controller's metadata: ``/controller``
    names broker 99, who is not there, so the broker knows no live broker (as one just
    started does until the controller reaches it). Must stop cleanly."""
    zk = KazooClient(hosts=zk_connect)
    zk.start()
    zk.create("/controller", b'{"version":1,"brokerid":99,"timestamp":"0"}', ephemeral=True)
    broker = BrokerProcess(directory, zk_connect, broker_id=7).start()
    try:
        yield broker
    finally:
        assert broker.stop() == 0
        zk.stop()
