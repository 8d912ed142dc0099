"""The SASL_SSL cluster that the replication and reassignment tests also run on is what
they take it for: each broker registers a SASL_SSL endpoint and nothing else (so the
controller's requests and the replica fetchers use it too), a client without TLS gets
no answer, a client with TLS but without the cluster's password cannot log in, and the
ACL authorizer is on (the tests' user is a super user)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from integration.cluster import Cluster
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.sasl_client import SaslAuthenticationFailed
from waiting import wait_until

pytestmark = pytest.mark.timeout(120)


def test_a_sasl_ssl_cluster_has_no_other_way_in(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=2, security="sasl_ssl") as cluster:
        for broker_id, broker in cluster.brokers.items():
            registration = json.loads(cluster.zk.get(f"/brokers/ids/{broker_id}")[0])
            assert registration["endpoints"] == [f"SASL_SSL://127.0.0.1:{broker.port}"]

        port = cluster.brokers[1].port
        with pytest.raises(ConnectionError):
            BrokerConnection("127.0.0.1", port, timeout=10)
        wrong = replace(cluster.admin_security(), sasl_password="not-the-password")
        with pytest.raises(SaslAuthenticationFailed):
            BrokerConnection("127.0.0.1", port, timeout=10, security=wrong)

        assert sorted(b.node_id for b in cluster.metadata(1, []).brokers) == [1, 2]
        with cluster.connect(1) as connection:
            acls = connection.request(
                ApiKey.DESCRIBE_ACLS,
                3,
                {
                    "resource_type_filter": 1,  # any
                    "pattern_type_filter": 1,  # any
                    "operation": 1,  # any
                    "permission_type": 1,  # any
                },
            )
        assert acls.error_code == ErrorCode.NONE, acls.error_message


def read(cluster: Cluster, topic: str, start: int, count: int) -> list[int]:
    consumer = Consumer({**cluster.client_config(), "group.id": "unused"})
    consumer.assign([TopicPartition(topic, 0, start)])
    numbers: list[int] = []
    try:
        wait_until(
            lambda: numbers.extend(int(m.value()) for m in consumer.consume(1000, 0.5))
            or len(numbers) >= count,
            f"{count} records read from offset {start}",
        )
    finally:
        consumer.close()
    return numbers


def test_a_partition_read_from_its_start_after_a_read_from_its_middle(tmp_path, zk_chroot):
    """Through TLS an answer with more of a segment than the broker copies inline cannot
    go by sendfile and is read from the segment by the broker: each answer must hold the
    bytes at its own position in the segment, whatever another answer read before."""
    with Cluster(tmp_path, zk_chroot, size=1, security="sasl_ssl") as cluster:
        cluster.create_topic("reread", partitions=1, replication_factor=1)
        producer = Producer({**cluster.client_config(), "linger.ms": 5})
        for number in range(20000):
            producer.produce("reread", b"%0100d" % number, partition=0)
            producer.poll(0)
        assert producer.flush(30) == 0
        assert read(cluster, "reread", 10000, 10000) == list(range(10000, 20000))
        assert read(cluster, "reread", 0, 20000) == list(range(20000))
