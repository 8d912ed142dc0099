"""``__consumer_offsets`` is created with ``offsets.topic.replication.factor`` replicas
only once that many brokers are alive, as in Kafka: a broker alone answers
FindCoordinator with COORDINATOR_NOT_AVAILABLE and says why, instead of creating the
topic with too few replicas for good."""

from __future__ import annotations

from integration.broker_process import BrokerProcess
from tidelog.admin import AdminClient
from tidelog.admin.connection import BrokerConnection
from tidelog.coordinator.group_coordinator import OFFSETS_TOPIC
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

REPLICAS = {"offsets.topic.replication.factor": "2"}


def find_coordinator(broker: BrokerProcess):
    with BrokerConnection("127.0.0.1", broker.port, timeout=10) as connection:
        return connection.request(ApiKey.FIND_COORDINATOR, 3, {"key": "readers", "key_type": 0})


def test_the_offsets_topic_waits_for_its_replication_factor_in_alive_brokers(tmp_path, zk_chroot):
    first = BrokerProcess(tmp_path / "b1", zk_chroot, broker_id=1, overrides=REPLICAS).start()
    second = BrokerProcess(tmp_path / "b2", zk_chroot, broker_id=2, overrides=REPLICAS)
    try:
        alone = find_coordinator(first)
        assert alone.error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
        assert "needs 2 alive brokers" in alone.error_message, alone.error_message
        admin = AdminClient(first.bootstrap, timeout=10)
        assert OFFSETS_TOPIC not in admin.list_topics()

        second.start()
        found = wait_until(
            lambda: (answer := find_coordinator(first)).error_code == ErrorCode.NONE and answer,
            "a coordinator once two brokers are alive",
        )
        assert found.node_id in (1, 2)
        partitions = admin.describe_topics([OFFSETS_TOPIC])[OFFSETS_TOPIC].partitions
        assert {len(p.replicas) for p in partitions} == {2}
    finally:
        for broker in (second, first):
            if broker.process is not None:
                assert broker.stop() == 0, broker.log()[-3000:]
