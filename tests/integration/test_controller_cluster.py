"""The controller driving a cluster of real broker processes over the Kafka protocol
(seed 000 集群成员关系 / 控制器, seed 003 四.4): every broker's metadata agrees,
the controller fails over to another broker with a higher epoch (before the killed
controller's ZooKeeper session expires), a deposed controller's requests are refused,
a dead leader's partitions move to a replica in the ISR before its ZooKeeper session
expires (while a live broker that only refused connections for a while comes back), a
restarted broker takes its replicas back, a partition with no in-sync replica left goes
offline unless unclean election is allowed, and a broker whose ZooKeeper session
expired registers again."""

from __future__ import annotations

import signal

import pytest

from integration.broker_process import BrokerProcess
from integration.clients import FrameProxy
from integration.cluster import TEST_DEFAULTS, Cluster
from tidelog.controller.assignment import assign_replicas
from tidelog.controller.requests import (
    LEADER_AND_ISR_VERSION,
    PartitionLeadership,
    leader_and_isr_request,
)
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.records.builder import build_batch
from waiting import wait_until

TOPIC = "orders"


def cluster_view(cluster: Cluster, broker_id: int) -> tuple:
    metadata = cluster.metadata(broker_id)
    brokers = sorted((b.node_id, b.host, b.port) for b in metadata.brokers)
    return brokers, metadata.controller_id


def led_by(leaders: dict, broker_id: int) -> list[int]:
    return sorted(p for p, (leader, _, _) in leaders.items() if leader == broker_id)


def leader_errors(cluster: Cluster, broker_id: int, partitions: list[int]) -> dict:
    """ListOffsets asked of a broker, per partition: NONE where it leads,
    NOT_LEADER_OR_FOLLOWER where it does not but the cluster has the partition,
    UNKNOWN_TOPIC_OR_PARTITION where the cluster has no such partition."""
    body = {
        "replica_id": -1,
        "isolation_level": 0,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": p, "current_leader_epoch": -1, "timestamp": -1}
                    for p in partitions
                ],
            }
        ],
    }
    with cluster.connect(broker_id) as connection:
        response = connection.request(ApiKey.LIST_OFFSETS, None, body)
    return {p.partition_index: p.error_code for t in response.topics for p in t.partitions}


def test_every_broker_reports_the_same_cluster_and_leaders(cluster):
    controller = cluster.controller_id()
    expected = (
        sorted((b, "127.0.0.1", cluster.brokers[b].port) for b in cluster.brokers),
        controller,
    )
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: cluster_view(cluster, b) == expected,
            f"broker {broker_id} lists 3 brokers and controller {controller}",
        )
    with cluster.connect(2) as connection:
        described = connection.request(
            ApiKey.DESCRIBE_CLUSTER, None, {"include_cluster_authorized_operations": False}
        )
    assert described.controller_id == controller
    assert sorted(b.broker_id for b in described.brokers) == [1, 2, 3]

    cluster.create_topic(TOPIC, partitions=6, replication_factor=3)
    assignment = cluster.assignment(TOPIC)
    start = [1, 2, 3].index(assignment[0][0])
    assert assignment in [
        assign_replicas(6, 3, [1, 2, 3], start_index=start, replica_shift=shift)
        for shift in range(3)
    ]
    leaders = cluster.leaders(cluster.controller_id(), TOPIC)
    # Round robin from a random start: each broker leads two partitions.
    assert [leaders[p][0] for p in range(6)] == [assignment[p][0] for p in range(6)]
    assert all(len(led_by(leaders, b)) == 2 for b in cluster.brokers)
    assert all(isr == [1, 2, 3] for _, _, isr in leaders.values())
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: cluster.leaders(b, TOPIC) == leaders,
            f"broker {broker_id} reports the controller's leaders and ISR",
        )


def test_controller_failover_raises_the_epoch_and_fences_the_old_controller(cluster):
    cluster.create_topic(TOPIC, partitions=6, replication_factor=3)
    old_controller, old_epoch = cluster.controller_id(), cluster.controller_epoch()
    cluster.brokers[old_controller].kill()
    survivors = [b for b in cluster.brokers if b != old_controller]

    new_controller = wait_until(
        lambda: cluster.controller_id() != old_controller and cluster.controller_id(),
        "another broker becomes the controller",
    )
    assert new_controller in survivors
    # Its endpoint refused the others: no waiting for its session to expire (6 s).
    assert old_controller in cluster.registered(), "elected only once the session expired"
    assert cluster.controller_epoch() > old_epoch
    expected_brokers = sorted((b, "127.0.0.1", cluster.brokers[b].port) for b in survivors)
    for broker_id in survivors:
        wait_until(
            lambda b=broker_id: cluster_view(cluster, b) == (expected_brokers, new_controller),
            f"broker {broker_id} reports controller {new_controller} and 2 live brokers",
        )

    # A request of the deposed controller's epoch, as it might still have had one in
    # flight: it would make the target lead a partition it follows.
    target = next(b for b in survivors if b != new_controller)
    (topic,) = cluster.metadata(target, [TOPIC]).topics
    leaders = cluster.leaders(target, TOPIC)
    followed = next(p for p, (leader, _, _) in leaders.items() if leader != target)
    stale = PartitionLeadership(
        TOPIC,
        topic.topic_id,
        followed,
        target,
        leaders[followed][1] + 10,
        tuple(cluster.assignment(TOPIC)[followed]),
        (target,),
        old_epoch,
    )
    request = leader_and_isr_request(old_controller, old_epoch, [stale], {}, None)
    with cluster.connect(target) as connection:
        response = connection.request(ApiKey.LEADER_AND_ISR, LEADER_AND_ISR_VERSION, request)
    assert response.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    ((error,),) = [t.partition_errors for t in response.topics]
    assert error.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    assert leader_errors(cluster, target, [followed]) == {
        followed: ErrorCode.NOT_LEADER_OR_FOLLOWER
    }


def test_a_dead_leaders_partitions_move_within_the_isr_and_it_takes_its_replicas_back(
    cluster,
):
    cluster.create_topic(TOPIC, partitions=6, replication_factor=3)
    victim = next(b for b in cluster.brokers if b != cluster.controller_id())
    survivors = [b for b in cluster.brokers if b != victim]
    before = cluster.leaders(victim, TOPIC)
    orphaned = led_by(before, victim)
    assert orphaned
    cluster.brokers[victim].kill()

    def moved(broker_id: int) -> dict | None:
        now = cluster.leaders(broker_id, TOPIC)
        done = all(victim not in isr for _, _, isr in now.values())
        return now if done else None

    after = {
        b: wait_until(lambda b=b: moved(b), f"broker {b} sees {victim} gone") for b in survivors
    }
    # Its endpoint refused the controller: no waiting for the session to expire (6 s).
    assert victim in cluster.registered(), "moved only once the killed broker's session expired"
    assert after[survivors[0]] == after[survivors[1]]
    after = after[survivors[0]]
    assignment = cluster.assignment(TOPIC)
    for partition, (leader, epoch, isr) in after.items():
        old_leader, old_epoch, old_isr = before[partition]
        assert epoch == old_epoch + 1  # the controller changed leader or ISR
        assert isr == sorted(b for b in old_isr if b != victim)
        if partition in orphaned:
            # The first replica of the assignment that is alive and in the ISR.
            assert leader == next(b for b in assignment[partition] if b in isr)
        else:
            assert leader == old_leader
        state = cluster.partition_state(TOPIC, partition)
        assert (state["leader"], state["leader_epoch"], sorted(state["isr"])) == (
            leader,
            epoch,
            isr,
        )
        assert state["controller_epoch"] == cluster.controller_epoch()

    cluster.brokers[victim].start()
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: victim in [n for (n, _, _) in cluster_view(cluster, b)[0]],
            f"broker {broker_id} lists broker {victim} again",
        )
    hosted = sorted(p for p, replicas in assignment.items() if victim in replicas)
    for partition in hosted:
        directories = [d / f"{TOPIC}-{partition}" for d in cluster.brokers[victim].log_dirs]
        assert any(d.is_dir() for d in directories)
    wait_until(
        lambda: all(victim in isr for _, _, isr in cluster.leaders(victim, TOPIC).values()),
        f"broker {victim} follows its replicas again, back in every ISR",
    )
    assert leader_errors(cluster, victim, hosted) == {
        p: ErrorCode.NOT_LEADER_OR_FOLLOWER for p in hosted
    }


def produce_errors(cluster: Cluster, broker_id: int, topic: str, partitions: list[int]) -> dict:
    """Produce (acks=1, one record) asked of a broker: the error per partition."""
    response = produce_one(cluster, broker_id, topic, partitions)
    return {p.index: p.error_code for t in response.responses for p in t.partition_responses}


def produce_one(cluster: Cluster, broker_id: int, topic: str, partitions: list[int]):
    """Produce (acks=1, one record to each partition, the highest version) asked of a
    broker: its response."""
    records = build_batch([(None, b"x")])
    body = {
        "transactional_id": None,
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": topic,
                "partition_data": [{"index": p, "records": records} for p in partitions],
            }
        ],
    }
    with cluster.connect(broker_id) as connection:
        return connection.request(ApiKey.PRODUCE, None, body)


def sent_to(answer) -> tuple:
    """A partition's answer: its error, and the leader and leader epoch it names."""
    return answer.error_code, answer.current_leader.leader_id, answer.current_leader.leader_epoch


def endpoints(response) -> list[tuple]:
    """A response's NodeEndpoints, as (id, host, port, rack)."""
    return [(n.node_id, n.host, n.port, n.rack) for n in response.node_endpoints]


def fetch_one(cluster: Cluster, broker_id: int, topic: str, partition: int):
    """A consumer's Fetch (the highest version, by topic id) of one partition from
    offset 0, asked of a broker: its response."""
    (found,) = cluster.metadata(broker_id, [topic]).topics
    body = {
        "replica_id": -1,
        "max_wait_ms": 0,
        "min_bytes": 0,
        "max_bytes": 1 << 20,
        "isolation_level": 0,
        "session_id": 0,
        "session_epoch": -1,
        "topics": [
            {
                "topic_id": found.topic_id,
                "partitions": [
                    {
                        "partition": partition,
                        "current_leader_epoch": -1,
                        "fetch_offset": 0,
                        "log_start_offset": -1,
                        "partition_max_bytes": 1 << 20,
                    }
                ],
            }
        ],
        "forgotten_topics_data": [],
        "rack_id": "",
    }
    with cluster.connect(broker_id) as connection:
        return connection.request(ApiKey.FETCH, None, body)


def test_a_broker_without_a_replica_sends_clients_to_the_leader_and_knows_what_is_missing(
    cluster,
):
    """Kafka's answer for a partition not hosted here (a reassignment took it away while
    the request was on its way): NOT_LEADER_OR_FOLLOWER when the cluster has it, so the
    client looks up the leader again; UNKNOWN_TOPIC_OR_PARTITION when it does not."""
    host, elsewhere = sorted(cluster.brokers)[:2]
    cluster.create_topic(TOPIC, assignment={0: [host]})
    wait_until(lambda: cluster.leaders(elsewhere, TOPIC), f"broker {elsewhere} knows {TOPIC}")
    assert produce_errors(cluster, host, TOPIC, [0]) == {0: ErrorCode.NONE}
    assert produce_errors(cluster, elsewhere, TOPIC, [0, 1]) == {
        0: ErrorCode.NOT_LEADER_OR_FOLLOWER,
        1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert leader_errors(cluster, elsewhere, [0, 1]) == {
        0: ErrorCode.NOT_LEADER_OR_FOLLOWER,
        1: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert produce_errors(cluster, elsewhere, "never-created", [0]) == {
        0: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    }


def test_a_client_sent_away_is_told_the_leader_its_epoch_and_its_address(cluster):
    """KIP-951: Produce (v10+) and Fetch (v16+) answered NOT_LEADER_OR_FOLLOWER name the
    partition's leader and leader epoch, and the response gives the leader's endpoint, so
    that the client goes there without asking for metadata first."""
    leader, follower = sorted(cluster.brokers)[:2]
    cluster.create_topic(TOPIC, assignment={0: [leader, follower]})
    wait_until(lambda: cluster.leaders(follower, TOPIC), f"broker {follower} knows {TOPIC}")
    leader_epoch = cluster.partition_state(TOPIC, 0)["leader_epoch"]
    endpoint = (leader, "127.0.0.1", cluster.brokers[leader].port, None)  # id, host, port, rack

    away = (ErrorCode.NOT_LEADER_OR_FOLLOWER, leader, leader_epoch)
    produced = produce_one(cluster, follower, TOPIC, [0])
    assert sent_to(produced.responses[0].partition_responses[0]) == away
    assert endpoints(produced) == [endpoint]
    fetched = fetch_one(cluster, follower, TOPIC, 0)
    assert sent_to(fetched.responses[0].partitions[0]) == away
    assert endpoints(fetched) == [endpoint]

    # Where the request went to the leader, nothing is named.
    assert fetch_one(cluster, leader, TOPIC, 0).node_endpoints == []
    produced = produce_one(cluster, leader, TOPIC, [0])
    assert produced.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    assert produced.node_endpoints == []


@pytest.mark.parametrize("unclean", [False, True], ids=["clean-only", "unclean-allowed"])
def test_with_no_in_sync_replica_alive_the_partition_is_offline_unless_unclean(cluster, unclean):
    """Replicas on the two brokers that are not the controller: the first stops (the
    second leads alone), then the second dies; the first comes back, out of sync."""
    first, second = [b for b in cluster.brokers if b != cluster.controller_id()]
    configs = {"unclean.leader.election.enable": "true"} if unclean else {}
    cluster.create_topic(TOPIC, assignment={0: [first, second]}, configs=configs)
    controller = cluster.controller_id()
    assert cluster.brokers[first].stop() == 0  # its session ends at once: no waiting
    wait_until(
        lambda: cluster.leaders(controller, TOPIC)[0][::2] == (second, [second]),
        f"{second} leads alone",
    )
    cluster.brokers[second].kill()
    wait_until(lambda: cluster.leaders(controller, TOPIC)[0][0] == -1, "the partition is offline")
    (partition,) = cluster.metadata(controller, [TOPIC]).topics[0].partitions
    assert partition.error_code == ErrorCode.LEADER_NOT_AVAILABLE
    assert cluster.partition_state(TOPIC, 0)["isr"] == [second]  # kept for a clean return

    cluster.brokers[first].start()
    wait_until(
        lambda: first in [b.node_id for b in cluster.metadata(controller).brokers],
        f"broker {first} is back",
    )
    if unclean:
        wait_until(
            lambda: cluster.leaders(controller, TOPIC)[0][::2] == (first, [first]),
            f"the out-of-sync replica on {first} leads",
        )
    else:
        leader, _, isr = cluster.leaders(controller, TOPIC)[0]
        assert (leader, isr) == (-1, [second])


def test_a_broker_whose_session_expired_registers_again_and_follows_the_new_controller(
    cluster,
):
    """SIGSTOP longer than the ZooKeeper session: the paused controller's session
    expires, another broker takes over; resumed, it registers anew, gives up the role
    and serves the new controller's metadata."""
    paused = cluster.controller_id()
    process = cluster.brokers[paused].process
    process.send_signal(signal.SIGSTOP)
    try:
        new_controller = wait_until(
            lambda: cluster.controller_id() not in (None, paused) and cluster.controller_id(),
            "the paused controller's session expires and another broker takes over",
        )
        wait_until(lambda: paused not in cluster.registered(), f"broker {paused} is gone")
    finally:
        process.send_signal(signal.SIGCONT)
    wait_until(lambda: paused in cluster.registered(), f"broker {paused} registers again")
    expected = (
        sorted((b, "127.0.0.1", cluster.brokers[b].port) for b in cluster.brokers),
        new_controller,
    )
    for broker_id in cluster.brokers:
        wait_until(
            lambda b=broker_id: cluster_view(cluster, b) == expected,
            f"broker {broker_id} lists all 3 brokers and controller {new_controller}",
        )
    assert cluster.controller_id() == new_controller


def test_a_live_broker_that_refused_connections_for_a_while_comes_back(tmp_path, zk_chroot):
    """Broker 3 is reached through a proxy (it advertises the proxy's port). With the
    proxy gone its endpoint refuses: the controller takes it out of the cluster at once,
    though its process and ZooKeeper session live. Once the registration has outlived
    the bound a dead session's would not (1.5 x 6 s) and the endpoint answers again,
    broker 3 rejoins: listed, and back in the ISR of the partition it led."""
    proxy = FrameProxy()
    cluster = Cluster(tmp_path, zk_chroot, size=3)
    cluster.brokers[3] = BrokerProcess(
        tmp_path / "broker-3",
        zk_chroot,
        broker_id=3,
        overrides={
            **TEST_DEFAULTS,
            "offsets.topic.replication.factor": "3",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}",
        },
    )
    proxy.start(cluster.brokers[3].port)
    with cluster:
        controller = cluster.controller_id()
        assert controller != 3, "broker 3 started last"
        cluster.create_topic(TOPIC, assignment={0: [3, 1, 2]})
        wait_until(lambda: cluster.leaders(controller, TOPIC)[0][2] == [1, 2, 3], "a full ISR")

        def listed() -> list[int]:
            return sorted(b.node_id for b in cluster.metadata(controller).brokers)

        proxy.close()
        wait_until(lambda: listed() == [1, 2], "broker 3 taken out")
        leader, _, isr = cluster.leaders(controller, TOPIC)[0]
        assert leader != 3 and 3 not in isr
        assert cluster.is_running(3) and 3 in cluster.registered()

        back = FrameProxy(proxy.port).start(cluster.brokers[3].port)
        try:
            wait_until(lambda: listed() == [1, 2, 3], "broker 3 rejoins", timeout=60)
            wait_until(
                lambda: cluster.leaders(controller, TOPIC)[0][2] == [1, 2, 3],
                "broker 3 back in the ISR",
            )
        finally:
            back.close()
