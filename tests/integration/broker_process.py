"""Broker processes for the integration tests (the class ``make run`` uses, configured
for tests)."""

from tidelog.server import process
from tidelog.server.process import TIDELOG_SERVER, free_port

__all__ = ["TIDELOG_SERVER", "BrokerProcess", "free_port"]


class BrokerProcess(process.BrokerProcess):
    """A broker that, alone, is a cluster of one: its offsets topic has one replica, as
    Kafka's single-broker quickstart configures it (the broker waits for
    ``offsets.topic.replication.factor`` alive brokers, 3 by default). A
    :class:`~integration.cluster.Cluster` overrides it with its size."""

    def extra_properties(self) -> dict[str, str]:
        return {**super().extra_properties(), "offsets.topic.replication.factor": "1"}
