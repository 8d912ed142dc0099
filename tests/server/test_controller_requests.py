"""The controller's requests on the wire: what the controller builds reads back the same
on a broker, in the versions the controller sends and in the older ones a broker
accepts."""

import uuid

import pytest

from tidelog.controller.requests import (
    LEADER_AND_ISR_VERSION,
    LEADER_DURING_DELETE,
    STOP_REPLICA_VERSION,
    UPDATE_METADATA_VERSION,
    PartitionLeadership,
    ReplicaToStop,
    leader_and_isr_request,
    leader_and_isr_states,
    stop_replica_partitions,
    stop_replica_request,
    update_metadata_brokers,
    update_metadata_request,
    update_metadata_states,
)
from tidelog.controller.zk_data import BrokerRegistration
from tidelog.protocol import ApiKey, RequestHeader, decode_request, encode_request

ORDERS, AUDIT = uuid.uuid4(), uuid.uuid4()
STATES = [
    PartitionLeadership("orders", ORDERS, 0, 1, 4, (1, 2, 3), (1, 2), 7, 5, (3,)),
    PartitionLeadership("orders", ORDERS, 1, 2, 0, (2, 3, 1), (2, 3, 1), 7, 0),
    PartitionLeadership("audit", AUDIT, 0, LEADER_DURING_DELETE, 0, (3,), (), 8, 0),
]
BROKERS = {
    1: BrokerRegistration(
        1,
        (("PLAINTEXT", "h1", 9092), ("REPLICATION", "h1", 9093)),
        "a",
        protocols=(("PLAINTEXT", "PLAINTEXT"), ("REPLICATION", "SASL_SSL")),
    ),
    2: BrokerRegistration(
        2, (("PLAINTEXT", "h2", 9092),), None, protocols=(("PLAINTEXT", "PLAINTEXT"),)
    ),
}


def round_trip(api_key, version, body):
    header = RequestHeader(
        request_api_key=int(api_key),
        request_api_version=version,
        correlation_id=1,
        client_id="controller-1",
    )
    _, decoded = decode_request(encode_request(header, body))
    return decoded


def test_leader_and_isr_carries_every_partition_and_the_live_leaders():
    body = leader_and_isr_request(1, 9, STATES[:2], BROKERS, "REPLICATION")
    decoded = round_trip(ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, body)
    assert (decoded.controller_id, decoded.controller_epoch) == (1, 9)
    assert [
        (s.topic, s.topic_id, s.partition, s.leader, s.leader_epoch, s.replicas, s.isr)
        for s in leader_and_isr_states(decoded, LEADER_AND_ISR_VERSION)
    ] == [
        (s.topic, s.topic_id, s.partition, s.leader, s.leader_epoch, s.replicas, s.isr)
        for s in STATES[:2]
    ]
    assert [(b.broker_id, b.host_name, b.port) for b in decoded.live_leaders] == [(1, "h1", 9093)]


@pytest.mark.parametrize("version", [1, 4])
def test_leader_and_isr_of_older_versions_reads_without_topic_ids(version):
    state = {
        "partition_index": 3,
        "controller_epoch": 9,
        "leader": 2,
        "leader_epoch": 5,
        "isr": [2, 1],
        "partition_epoch": 4,
        "replicas": [1, 2],
    }
    body = {"controller_id": 1, "controller_epoch": 9}
    if version < 2:
        body["ungrouped_partition_states"] = [{"topic_name": "orders", **state}]
    else:
        body["topic_states"] = [{"topic_name": "orders", "partition_states": [state]}]
    decoded = round_trip(ApiKey.LEADER_AND_ISR, version, body)
    assert leader_and_isr_states(decoded, version) == [
        PartitionLeadership("orders", uuid.UUID(int=0), 3, 2, 5, (1, 2), (2, 1), 9, 4)
    ]


def update_metadata_of_version(body, version: int):
    """The controller's UpdateMetadata body in an older version's shape (a broker
    accepts every version): fields the version lacks hold their defaults."""
    cls = type(body)

    def partition(topic, p):
        return cls.UpdateMetadataPartitionState(
            topic_name=topic.topic_name if version < 5 else "",
            partition_index=p.partition_index,
            controller_epoch=p.controller_epoch,
            leader=p.leader,
            leader_epoch=p.leader_epoch,
            isr=p.isr,
            zk_version=p.zk_version,
            replicas=p.replicas,
            offline_replicas=p.offline_replicas if version >= 4 else [],
        )

    def endpoint(e):
        return cls.UpdateMetadataEndpoint(
            port=e.port,
            host=e.host,
            listener=e.listener if version >= 3 else "",
            security_protocol=e.security_protocol,
        )

    brokers = [
        cls.UpdateMetadataBroker(
            id=b.id,
            v0_host=b.endpoints[0].host if version == 0 else "",
            v0_port=b.endpoints[0].port if version == 0 else 0,
            endpoints=[endpoint(e) for e in b.endpoints] if version > 0 else [],
            rack=b.rack if version >= 2 else None,
        )
        for b in body.live_brokers
    ]
    if version < 5:
        return cls(
            controller_id=body.controller_id,
            controller_epoch=body.controller_epoch,
            ungrouped_partition_states=[
                partition(t, p) for t in body.topic_states for p in t.partition_states
            ],
            live_brokers=brokers,
        )
    topics = [
        cls.UpdateMetadataTopicState(
            topic_name=t.topic_name,
            topic_id=t.topic_id if version >= 7 else uuid.UUID(int=0),
            partition_states=[partition(t, p) for p in t.partition_states],
        )
        for t in body.topic_states
    ]
    return cls(
        controller_id=body.controller_id,
        controller_epoch=body.controller_epoch,
        topic_states=topics,
        live_brokers=brokers,
    )


@pytest.mark.parametrize("version", [0, 1, 3, 4, 5, 7, UPDATE_METADATA_VERSION])
def test_update_metadata_reads_back_in_old_and_new_versions(version):
    body = update_metadata_request(3, 9, STATES, BROKERS)
    if version < UPDATE_METADATA_VERSION:
        body = update_metadata_of_version(body, version)
    decoded = round_trip(ApiKey.UPDATE_METADATA, version, body)
    states = update_metadata_states(decoded, version)
    assert [(s.topic, s.partition, s.leader, s.isr, s.deleted) for s in states] == [
        (s.topic, s.partition, s.leader, s.isr, s.deleted) for s in STATES
    ]
    assert [s.topic_id for s in states] == [
        s.topic_id if version >= 7 else uuid.UUID(int=0) for s in STATES
    ]
    assert states[0].offline_replicas == ((3,) if version >= 4 else ())
    brokers = update_metadata_brokers(decoded, version)
    if version >= 3:
        assert brokers == BROKERS
    else:
        assert brokers[1].endpoints[0] == ("PLAINTEXT", "h1", 9092)
        assert brokers[2].endpoints == (("PLAINTEXT", "h2", 9092),)


def test_stop_replica_reads_back_with_each_partitions_delete_flag():
    replicas = [ReplicaToStop("orders", 0, True), ReplicaToStop("orders", 1, False)]
    decoded = round_trip(
        ApiKey.STOP_REPLICA, STOP_REPLICA_VERSION, stop_replica_request(1, 9, replicas)
    )
    assert stop_replica_partitions(decoded, STOP_REPLICA_VERSION) == replicas


@pytest.mark.parametrize("version", [0, 1, 2])
def test_stop_replica_before_v3_has_one_delete_flag(version):
    body = {"controller_id": 1, "controller_epoch": 9, "delete_partitions": True}
    if version == 0:
        body["ungrouped_partitions"] = [{"topic_name": "orders", "partition_index": 2}]
    else:
        body["topics"] = [{"name": "orders", "partition_indexes": [2]}]
    decoded = round_trip(ApiKey.STOP_REPLICA, version, body)
    assert stop_replica_partitions(decoded, version) == [ReplicaToStop("orders", 2, True)]
