"""The ZooKeeper operations behind CreatePartitions and the config change notifications,
against a real server."""

import json

import pytest
from kazoo.client import KazooClient

from tidelog.controller.zk_client import (
    KafkaZkClient,
    PartitionsChangedError,
    ReassignmentInProgressError,
)
from tidelog.controller.zk_configs import config_change_number
from tidelog.controller.zk_data import TopicAssignment, new_uuid


@pytest.fixture
def zk(zk_chroot):
    client = KafkaZkClient(zk_chroot, session_timeout_ms=6000)
    client.start()
    yield client
    client.close()


@pytest.fixture
def raw(zk_chroot):
    client = KazooClient(hosts=zk_chroot)
    client.start()
    yield client
    client.stop()
    client.close()


def test_adding_partitions_keeps_the_topic_id_and_checks_the_count(zk, raw):
    topic_id = new_uuid()
    zk.create_topic(TopicAssignment("grow", topic_id, {0: [1], 1: [2]}), {})
    updated = zk.add_topic_partitions("grow", {2: [1], 3: [2]})
    assert updated == TopicAssignment("grow", topic_id, {0: [1], 1: [2], 2: [1], 3: [2]})
    assert zk.topic_assignment("grow") == updated
    with pytest.raises(PartitionsChangedError):  # partition 4 was expected next
        zk.add_topic_partitions("grow", {5: [1]})
    document = json.loads(raw.get("/brokers/topics/grow")[0])
    document["adding_replicas"] = {"0": [2]}
    raw.set("/brokers/topics/grow", json.dumps(document).encode())
    with pytest.raises(ReassignmentInProgressError):
        zk.add_topic_partitions("grow", {4: [1]})


def test_config_change_notifications(zk, raw):
    zk.set_entity_config("topics", "orders", {"retention.ms": "1"})
    zk.set_entity_config("brokers", "<default>", {"log.retention.ms": "2"})
    raw.create(
        "/config/changes/config_change_",
        b'{"version":1,"entity_type":"topics","entity_name":"legacy"}',
        sequence=True,
    )
    raw.create("/config/changes/config_change_", b"not json", sequence=True)
    names = zk.config_changes()
    assert [config_change_number(n) for n in names] == [0, 1, 2, 3]
    assert [zk.config_change(n) for n in names] == [
        ("topics", "orders"),
        ("brokers", "<default>"),
        ("topics", "legacy"),
        None,
    ]
    zk.purge_config_changes(names, now_ms=0)  # all young: nothing goes
    assert zk.config_changes() == names
    zk.purge_config_changes(names, now_ms=2**62)
    assert zk.config_changes() == []
