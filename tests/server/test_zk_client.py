"""Kafka's znodes, written through the broker's ZooKeeper client to a real server."""

import json
from dataclasses import replace

import pytest
from kazoo.client import KazooClient

from tidelog.controller.zk_client import BrokerIdTakenError, KafkaZkClient, TopicExistsError
from tidelog.controller.zk_data import BrokerRegistration, PartitionState, TopicAssignment, new_uuid


@pytest.fixture
def zk(zk_chroot):
    client = KafkaZkClient(zk_chroot, session_timeout_ms=6000)
    client.start()
    yield client
    client.close()


def raw(zk_chroot, path):
    viewer = KazooClient(hosts=zk_chroot)
    viewer.start()
    try:
        data, _ = viewer.get(path)
        return json.loads(data)
    finally:
        viewer.stop()


def test_broker_registration_is_ephemeral_and_unique(zk, zk_chroot):
    registration = BrokerRegistration(1, (("PLAINTEXT", "127.0.0.1", 9092),), rack="r1")
    zk.register_broker(registration)
    assert raw(zk_chroot, "/brokers/ids/1")["endpoints"] == ["PLAINTEXT://127.0.0.1:9092"]
    other = KafkaZkClient(zk_chroot)
    other.start()
    with pytest.raises(BrokerIdTakenError, match="broker.id 1 is already registered"):
        other.register_broker(registration)
    other.close()
    live = zk.live_brokers()[1]
    assert live.epoch > 0  # the znode's czxid, Kafka's broker epoch
    assert replace(live, epoch=-1) == registration
    zk.close()
    again = KafkaZkClient(zk_chroot)
    again.start()
    assert again.live_brokers() == {}  # the session went, so did the node
    again.close()


def test_cluster_id_is_created_once(zk, zk_chroot):
    first = zk.get_or_create_cluster_id()
    assert len(first) == 22 and zk.get_or_create_cluster_id() == first
    assert raw(zk_chroot, "/cluster/id") == {"version": "1", "id": first}


def test_controller_election_bumps_the_epoch(zk):
    assert zk.try_become_controller(1) == 1
    assert zk.try_become_controller(2) is None
    assert zk.controller_id() == 1


def test_topics_configs_and_states(zk, zk_chroot):
    assignment = TopicAssignment("orders", new_uuid(), {0: [1], 1: [1]})
    zk.create_topic(assignment, {"cleanup.policy": "compact"})
    with pytest.raises(TopicExistsError):
        zk.create_topic(assignment, {})
    assert zk.topics() == ["orders"]
    assert zk.topic_assignment("orders") == assignment
    assert raw(zk_chroot, "/config/topics/orders") == {
        "version": 1,
        "config": {"cleanup.policy": "compact"},
    }
    zk.create_partition_state("orders", 0, PartitionState(1, 0, [1], 1))
    state = zk.partition_state("orders", 0)
    assert (state.leader, state.isr, state.zk_version) == (1, [1], 0)
    zk.update_partition_state("orders", 0, PartitionState(1, 1, [1], 1, state.zk_version))
    assert zk.partition_state("orders", 0).leader_epoch == 1
    zk.mark_topic_for_deletion("orders")
    assert zk.topics_marked_for_deletion() == ["orders"]
    zk.delete_topic_znodes("orders")
    assert zk.topics() == [] and zk.topics_marked_for_deletion() == []


def test_producer_id_blocks_do_not_overlap(zk, zk_chroot):
    other = KafkaZkClient(zk_chroot)
    other.start()
    blocks = [
        zk.allocate_producer_id_block(1),
        other.allocate_producer_id_block(2),
        zk.allocate_producer_id_block(1),
    ]
    other.close()
    assert blocks == [(0, 999), (1000, 1999), (2000, 2999)]
    assert raw(zk_chroot, "/latest_producer_id_block")["block_end"] == "2999"


def test_dynamic_broker_configs_and_change_notifications(zk):
    zk.set_entity_config("brokers", "<default>", {"log.retention.ms": "1000"})
    zk.set_entity_config("brokers", "1", {"log.retention.ms": "2000"})
    assert zk.broker_configs(1) == ({"log.retention.ms": "1000"}, {"log.retention.ms": "2000"})
    assert len(zk.zk.get_children("/config/changes")) == 2
