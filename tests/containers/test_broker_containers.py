"""The broker image as it will run on Kubernetes: ZooKeeper and three brokers as
containers on a private network, clients on the host through published ports, and the
faults a container platform causes (a killed container, a cut network)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from containers.docker_cluster import DockerCluster, broker_image
from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from tidelog.admin import AdminClient
from waiting import wait_until

pytestmark = pytest.mark.timeout(300)

BROKERS = [1, 2, 3]
CONFIG = {
    # Faults show within seconds rather than Kafka's 30 s and 18 s defaults.
    "replica.lag.time.max.ms": "3000",
    "zookeeper.session.timeout.ms": "6000",
    "controlled.shutdown.retry.backoff.ms": "100",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[DockerCluster]:
    containers = ["zookeeper", *(f"broker-{b}" for b in BROKERS)]
    with DockerCluster(broker_image(), size=len(BROKERS), config=CONFIG) as cluster:
        try:
            wait_until(lambda: registered(cluster) == BROKERS, "three brokers registered", 90)
            wait_until(
                lambda: all(cluster.state(c)["Health"]["Status"] == "healthy" for c in containers),
                "every container healthy (the image's health check)",
                90,
            )
        except AssertionError as error:
            logs = "\n".join(f"--- {c}\n{cluster.logs(c)[-2000:]}" for c in containers)
            raise AssertionError(f"{error}\n{logs}") from None
        yield cluster


def admin(cluster: DockerCluster) -> AdminClient:
    return AdminClient(cluster.bootstrap, timeout=10)


def registered(cluster: DockerCluster) -> list[int]:
    return sorted(broker.node_id for broker in admin(cluster).metadata([]).brokers)


def partitions(cluster: DockerCluster, topic: str) -> dict[int, tuple[int, list[int]]]:
    """Partition → (leader, ISR), as the cluster's Metadata says."""
    (found,) = admin(cluster).metadata([topic]).topics
    return {p.partition_index: (p.leader_id, sorted(p.isr_nodes)) for p in found.partitions}


def create_topic(cluster: DockerCluster, topic: str, count: int) -> None:
    """Create the topic and wait until Metadata shows each of its partitions with every
    broker in its ISR (a new topic can first come back with no partitions at all)."""
    admin(cluster).create_topic(topic, count, 3, {"min.insync.replicas": "2"})

    def replicated() -> bool:
        found = partitions(cluster, topic)
        return found.keys() == set(range(count)) and all(
            isr == BROKERS for _, isr in found.values()
        )

    wait_until(replicated, f"{topic} fully replicated")


def test_clients_produce_and_consume_through_the_published_ports(cluster: DockerCluster) -> None:
    create_topic(cluster, "greetings", 3)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    sent = [b"hello %d" % n for n in range(300)]
    for value in sent:
        producer.send("greetings", value)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, consumer_timeout_ms=10000)
    consumer.assign([TopicPartition("greetings", p) for p in range(3)])
    consumer.seek_to_beginning()
    received = [message.value for message in consumer]
    consumer.close()
    assert sorted(received) == sorted(sent)
    # Every broker serves clients at its own published port, not a container address.
    brokers = admin(cluster).metadata([]).brokers
    assert {(b.host, b.port) for b in brokers} == {
        ("127.0.0.1", port) for port in cluster.external_ports.values()
    }


def test_a_disconnected_follower_leaves_the_isr_and_rejoins(cluster: DockerCluster) -> None:
    create_topic(cluster, "ticks", 1)
    leader, _ = partitions(cluster, "ticks")[0]
    follower = next(b for b in BROKERS if b != leader)
    with ContinuousProducer(cluster.bootstrap, "ticks", 1) as producer:
        producer.wait_for_more(200, "records acknowledged")
        cluster.disconnect(follower)
        wait_until(
            lambda: follower not in partitions(cluster, "ticks")[0][1],
            f"broker {follower} out of the ISR",
        )
        producer.wait_for_more(200, "records acknowledged without the follower")
        cluster.reconnect(follower)
        wait_until(
            lambda: partitions(cluster, "ticks")[0][1] == BROKERS,
            f"broker {follower} back in the ISR",
            60,
        )
        producer.wait_for_more(200, "records acknowledged by the full ISR")
    assert_acknowledged_records_kept(cluster.bootstrap, producer)
    # If its ZooKeeper session expired while it was cut off, it registers again in a new
    # one. Fetching from the leader needs no session: the ISR can take it back first.
    wait_until(lambda: registered(cluster) == BROKERS, f"broker {follower} registered again", 60)


def test_killing_the_leaders_container_loses_no_acknowledged_record(
    cluster: DockerCluster,
) -> None:
    # One partition: every write after the kill waits for the new leader.
    create_topic(cluster, "payments", 1)
    leader, _ = partitions(cluster, "payments")[0]
    with ContinuousProducer(cluster.bootstrap, "payments", 1) as producer:
        producer.wait_for_more(300, "records acknowledged")
        cluster.kill(leader)
        producer.wait_for_more(300, f"records acknowledged after broker {leader} was killed")
        assert partitions(cluster, "payments")[0][0] != leader
        # A killed broker's registration lives until its ZooKeeper session times out.
        wait_until(lambda: leader not in registered(cluster), "the killed broker's session ends")
        cluster.start(leader)
        wait_until(
            lambda: all(isr == BROKERS for _, isr in partitions(cluster, "payments").values()),
            f"broker {leader} restarted from its volume and back in every ISR",
            60,
        )
    assert_acknowledged_records_kept(cluster.bootstrap, producer)
