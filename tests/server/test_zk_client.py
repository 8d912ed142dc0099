"""Kafka's znodes, written through the broker's ZooKeeper client to a real server."""

import json
import subprocess
import sys
import threading
from dataclasses import replace

import pytest
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, SessionExpiredError
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent

from tidelog.controller.zk_brokers import BrokerIdTakenError
from tidelog.controller.zk_client import KafkaZkClient, StalePartitionStateError, TopicExistsError
from tidelog.controller.zk_data import BrokerRegistration, PartitionState, TopicAssignment, new_uuid
from tidelog.controller.zk_session import until_answered, worth_handling


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


def waits_logged(caplog) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.getMessage().startswith("waiting for the previous registration of broker.id")
    ]


def test_broker_registration_is_ephemeral_and_unique(zk, zk_chroot, caplog):
    registration = BrokerRegistration(
        1,
        (("PLAINTEXT", "127.0.0.1", 9092), ("SECURE", "127.0.0.1", 9093)),
        rack="r1",
        protocols=(("PLAINTEXT", "PLAINTEXT"), ("SECURE", "SASL_SSL")),
    )
    zk.register_broker(registration)
    written = raw(zk_chroot, "/brokers/ids/1")
    assert written["endpoints"] == ["PLAINTEXT://127.0.0.1:9092", "SECURE://127.0.0.1:9093"]
    assert written["listener_security_protocol_map"] == {
        "PLAINTEXT": "PLAINTEXT",
        "SECURE": "SASL_SSL",
    }
    owner = f"0x{zk.session_id:x}"
    # The live owner keeps its node: the other waits its bound out, then gives up.
    other = KafkaZkClient(zk_chroot, session_timeout_ms=4000)
    other.start()
    with pytest.raises(BrokerIdTakenError, match="broker.id 1 is already registered") as taken:
        other.register_broker(registration)
    other.close()
    assert f"session {owner} still held it after 6 s" in str(taken.value)
    assert waits_logged(caplog) == [
        f"waiting for the previous registration of broker.id 1 (owner session {owner}) to "
        "expire: up to 6 s (1.5 x zookeeper.session.timeout.ms)"
    ]
    live = zk.live_brokers()[1]
    assert live.epoch > 0  # the znode's czxid, Kafka's broker epoch
    assert replace(live, epoch=-1) == registration
    zk.close()
    again = KafkaZkClient(zk_chroot)
    again.start()
    assert again.live_brokers() == {}  # the session went, so did the node
    again.close()


def test_a_registration_made_by_this_session_is_its_own(zk, zk_chroot, caplog):
    """A create that went through before a lost connection hid its answer: trying again
    finds this session's node and keeps it."""
    registration = BrokerRegistration(2, (("PLAINTEXT", "127.0.0.1", 9092),))
    zk.register_broker(registration)
    zk.register_broker(registration)
    assert zk.zk.exists("/brokers/ids/2").ephemeralOwner == zk.session_id
    assert waits_logged(caplog) == []


def test_a_persistent_node_takes_the_id_at_once(zk, caplog):
    zk.zk.create("/brokers/ids/3", b"{}")
    registration = BrokerRegistration(3, (("PLAINTEXT", "127.0.0.1", 9092),))
    with pytest.raises(BrokerIdTakenError, match="by a persistent znode /brokers/ids/3"):
        zk.register_broker(registration)
    assert waits_logged(caplog) == []


ABANDONED_REGISTRATION = """
import sys
import threading
from kazoo.client import KazooClient
from kazoo.exceptions import ConnectionLoss, SessionExpiredError
from kazoo.protocol.states import EventType, KeeperState, WatchedEvent
client = KazooClient(hosts=sys.argv[1], timeout=4)
client.start(timeout=10)
client.create("/brokers/ids/4", b"{}", ephemeral=True)
print(client.client_id[0], flush=True)
sys.stdin.read()
"""


def test_the_registration_of_a_killed_session_is_taken_over_once_it_expires(zk, zk_chroot, caplog):
    """A broker killed with -9 leaves its node until ZooKeeper expires its session; the
    broker started again waits for that instead of failing."""
    killed = subprocess.Popen(
        [sys.executable, "-c", ABANDONED_REGISTRATION, zk_chroot],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        old_session = int(killed.stdout.readline())
    finally:
        killed.kill()
        killed.wait()
    registration = BrokerRegistration(4, (("PLAINTEXT", "127.0.0.1", 9092),))
    zk.register_broker(registration)
    assert zk.zk.exists("/brokers/ids/4").ephemeralOwner == zk.session_id
    assert raw(zk_chroot, "/brokers/ids/4")["endpoints"] == ["PLAINTEXT://127.0.0.1:9092"]
    (waited,) = waits_logged(caplog)
    assert f"broker.id 4 (owner session 0x{old_session:x})" in waited


def test_cluster_id_is_created_once(zk, zk_chroot):
    first = zk.get_or_create_cluster_id()
    assert len(first) == 22 and zk.get_or_create_cluster_id() == first
    assert raw(zk_chroot, "/cluster/id") == {"version": "1", "id": first}


def test_controller_election_bumps_the_epoch(zk):
    assert zk.try_become_controller(1) == 1
    assert zk.try_become_controller(2) is None
    assert zk.controller_id() == 1


def test_a_call_is_made_again_while_the_connection_drops_but_not_once_the_session_ends():
    outcomes = [ConnectionLoss(), ConnectionLoss(), "answer"]

    def call(path: str) -> str:
        outcome = outcomes.pop(0)
        if isinstance(outcome, Exception):
            raise outcome
        return f"{outcome} for {path}"

    assert until_answered(call, "/brokers/ids") == "answer for /brokers/ids"
    outcomes[:] = [ConnectionLoss(), SessionExpiredError(), "never asked"]
    with pytest.raises(SessionExpiredError):
        until_answered(call, "/brokers/ids")
    assert outcomes == ["never asked"]


@pytest.mark.parametrize(
    ("event", "handled"),
    [
        (WatchedEvent(EventType.CHILD, KeeperState.CONNECTED, "/brokers/ids"), True),
        (WatchedEvent(EventType.DELETED, KeeperState.CONNECTED, "/controller"), True),
        (WatchedEvent(EventType.NONE, KeeperState.CONNECTING, None), True),
        (WatchedEvent(EventType.NONE, KeeperState.EXPIRED_SESSION, None), False),
        (WatchedEvent(EventType.NONE, KeeperState.CLOSED, None), False),
    ],
)
def test_a_watch_is_handled_when_its_node_changed_or_the_connection_dropped(event, handled):
    """kazoo forgets its watches when the connection drops: the handler must run to arm
    its watch again. A session that ended is the broker's to handle."""
    assert worth_handling(event) is handled


def test_an_election_made_again_after_a_lost_answer_finds_its_own_win(zk, zk_chroot):
    """A retried election (the first answer lost with the connection) is this session's
    win, not another broker's; another session's /controller is not."""
    assert zk.try_become_controller(1) == 1
    assert zk.try_become_controller(1) == 1
    other = KafkaZkClient(zk_chroot, session_timeout_ms=6000)
    other.start()
    try:
        assert other.try_become_controller(1) is None
    finally:
        other.close()


def test_a_state_written_again_after_a_lost_answer_is_taken_as_written(zk):
    """The conditional write of a partition state, made again with the old version after
    the connection lost its answer, finds its own data: the new version, not a conflict.
    A different state on that old version still conflicts."""
    zk.create_topic(TopicAssignment("orders", new_uuid(), {0: [1, 2]}), {})
    zk.create_partition_states("orders", {0: PartitionState(1, 0, [1, 2], 1)})
    written = PartitionState(2, 1, [2], 1, zk_version=0)
    assert zk.update_partition_state("orders", 0, written) == 1
    assert zk.update_partition_state("orders", 0, written) == 1
    with pytest.raises(StalePartitionStateError):
        zk.update_partition_state("orders", 0, replace(written, isr=[1, 2]))


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
    zk.create_partition_states("orders", {0: PartitionState(1, 0, [1], 1)})
    state = zk.partition_state("orders", 0)
    assert (state.leader, state.isr, state.zk_version) == (1, [1], 0)
    zk.update_partition_state("orders", 0, PartitionState(1, 1, [1], 1, state.zk_version))
    assert zk.partition_state("orders", 0).leader_epoch == 1
    zk.mark_topic_for_deletion("orders")
    assert zk.topics_marked_for_deletion() == ["orders"]
    zk.delete_topic_znodes("orders")
    assert zk.topics() == [] and zk.topics_marked_for_deletion() == []


def test_partition_states_are_created_at_once_and_existing_ones_kept(zk):
    """Many states in one call; one an earlier controller wrote is returned as it is."""
    partitions = {p: [1, 2] for p in range(300)}
    zk.create_topic(TopicAssignment("many", new_uuid(), partitions), {})
    earlier = zk.create_partition_states("many", {7: PartitionState(2, 3, [2], 1)})
    created = zk.create_partition_states(
        "many", {p: PartitionState(1, 0, [1, 2], 1) for p in partitions}
    )
    assert earlier == {7: PartitionState(2, 3, [2], 1, zk_version=0)}
    assert created[7] == PartitionState(2, 3, [2], 1, zk_version=0)
    assert all(
        created[p] == PartitionState(1, 0, [1, 2], 1, zk_version=0) for p in partitions if p != 7
    )
    assert zk.partition_state("many", 299) == created[299]


def test_partition_states_are_updated_at_once_each_on_its_own_version(zk):
    """Many conditional writes in one call: a state written since its version was read
    is not overwritten (None), the others get their new versions."""
    partitions = {p: [1, 2] for p in range(50)}
    zk.create_topic(TopicAssignment("isrs", new_uuid(), partitions), {})
    created = zk.create_partition_states(
        "isrs", {p: PartitionState(1, 0, [1], 1) for p in partitions}
    )
    zk.update_partition_state("isrs", 3, replace(created[3], isr=[1, 2]))  # moves it to v1
    wanted = {("isrs", p): replace(created[p], isr=[1, 2]) for p in partitions}
    wanted[("isrs", 3)] = replace(created[3], isr=[2])  # still on version 0: stale
    versions = zk.update_partition_states(wanted)
    assert versions[("isrs", 3)] is None
    assert all(versions[("isrs", p)] == 1 for p in partitions if p != 3)
    assert zk.partition_state("isrs", 3).isr == [1, 2]
    assert zk.partition_state("isrs", 49).isr == [1, 2]


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


def test_a_moving_topic_keeps_its_adding_and_removing_replicas(zk, zk_chroot):
    moving = TopicAssignment(
        "moving", new_uuid(), {0: [3, 1, 2], 1: [2]}, adding={0: [3]}, removing={0: [2]}
    )
    zk.create_topic(TopicAssignment("moving", moving.topic_id, {0: [1, 2], 1: [2]}), {})
    zk.set_topic_assignment(moving)
    assert zk.topic_assignment("moving") == moving
    raw = json.loads(zk.zk.get("/brokers/topics/moving")[0])
    assert raw["partitions"] == {"0": [3, 1, 2], "1": [2]}
    assert raw["adding_replicas"] == {"0": [3]} and raw["removing_replicas"] == {"0": [2]}


def test_the_reassign_partitions_znode(zk, zk_chroot):
    fired = threading.Event()
    assert zk.zk_reassignments(lambda _event: fired.set()) == {}
    zk.zk.create(
        "/admin/reassign_partitions",
        b'{"version":1,"partitions":[{"topic":"t","partition":1,"replicas":[2,3]}]}',
        makepath=True,
    )
    assert fired.wait(10), "the watch fires on creation"
    assert zk.zk_reassignments() == {("t", 1): [2, 3]}
    zk.set_zk_reassignments({("t", 1): [3]})
    assert json.loads(zk.zk.get("/admin/reassign_partitions")[0]) == {
        "version": 1,
        "partitions": [{"topic": "t", "partition": 1, "replicas": [3]}],
    }
    zk.set_zk_reassignments({})
    assert zk.zk.exists("/admin/reassign_partitions") is None
    zk.zk.create("/admin/reassign_partitions", b'{"version":1}')
    assert zk.zk_reassignments() == {}, "a document that is not Kafka's is dropped"
    assert zk.zk.exists("/admin/reassign_partitions") is None
