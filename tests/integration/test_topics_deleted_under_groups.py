"""A consumer group subscribed to topics that are deleted, and deleted and created again,
while it consumes (librdkafka's own test 0107-topic_recreate does this): the group goes
on consuming what is left and what is new, and every broker answers ApiVersions on a new
connection throughout, within a second, as Apache Kafka's do. (The hang of issue 19
item 5, `Connection setup timed out in state APIVERSION_QUERY`, was not reproduced
here; the probe keeps watching for it.)"""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from confluent_kafka import Consumer, ConsumerGroupTopicPartitions, Producer
from confluent_kafka.admin import AdminClient, NewTopic

from integration.cluster import Cluster
from tidelog.protocol import ApiKey, encode_request
from waiting import wait_until

PROBE_TIMEOUT_S = 1.0
GROUP = "through-deletions"


@pytest.fixture
def cluster(tmp_path, zk_chroot):
    overrides = {"group.initial.rebalance.delay.ms": "0"}
    with Cluster(tmp_path, zk_chroot, size=3, overrides=overrides) as running:
        yield running


class ApiVersionsProbe(threading.Thread):
    """Asks every broker ApiVersions on a new connection, over and over; keeps the
    answers that did not come within PROBE_TIMEOUT_S."""

    def __init__(self, addresses: list[tuple[str, int]]):
        super().__init__(daemon=True)
        self.addresses = addresses
        self.failures: list[str] = []
        self.probes = 0
        self._stopping = threading.Event()

    def run(self) -> None:
        header = {
            "request_api_key": int(ApiKey.API_VERSIONS),
            "request_api_version": 3,
            "correlation_id": 1,
            "client_id": "probe",
        }
        body = {"client_software_name": "probe", "client_software_version": "1"}
        frame = encode_request(header, body)
        while not self._stopping.wait(0.1):
            for host, port in self.addresses:
                started = time.monotonic()
                try:
                    with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_S) as s:
                        s.settimeout(PROBE_TIMEOUT_S)
                        s.sendall(struct.pack(">i", len(frame)) + frame)
                        if len(s.recv(4)) != 4:
                            raise OSError("closed")
                    self.probes += 1
                except OSError as error:
                    self.failures.append(
                        f"{port}: {error!r} after {time.monotonic() - started:.1f} s"
                    )

    def stop(self) -> None:
        self._stopping.set()
        self.join()


def produce(bootstrap: str, topic: str, values: list[bytes]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for value in values:
        producer.produce(topic, value)
    assert producer.flush(30) == 0


def committed(admin: AdminClient) -> set[tuple[str, int]]:
    """The partitions the group has committed offsets for."""
    request = ConsumerGroupTopicPartitions(GROUP)
    (future,) = admin.list_consumer_group_offsets([request]).values()
    return {(tp.topic, tp.partition) for tp in future.result(30).topic_partitions}


def test_a_group_goes_on_through_deletions_and_a_recreation(cluster):
    bootstrap = cluster.bootstrap
    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics(
        [NewTopic(t, 3, 2) for t in ("kept", "doomed", "reborn")]
    ).values():
        future.result(30)
    for topic in ("kept", "doomed", "reborn"):
        produce(bootstrap, topic, [b"%s-before-%d" % (topic.encode(), i) for i in range(10)])

    probe = ApiVersionsProbe([("127.0.0.1", b.port) for b in cluster.brokers.values()])
    probe.start()
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": GROUP,
            "auto.offset.reset": "earliest",
            "topic.metadata.refresh.interval.ms": 1000,
        }
    )
    seen: set[bytes] = set()

    def consume_until(wanted: set[bytes], *, any_of: bool = False) -> None:
        """Poll until every record of ``wanted`` (or one, ``any_of``) was read."""

        def read_them() -> bool:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                seen.add(message.value())
            assert (
                wanted & seen if any_of else wanted <= seen
            ), f"missing {sorted(wanted - seen)[:5]}"
            return True

        wait_until(read_them, "the wanted records read", 60, interval=0)

    try:
        consumer.subscribe(["kept", "doomed", "reborn"])
        consume_until(
            {b"%s-before-%d" % (t, i) for t in (b"kept", b"doomed", b"reborn") for i in range(10)}
        )

        consumer.commit(asynchronous=False)
        assert {"kept", "doomed", "reborn"} == {t for t, _ in committed(admin)}

        for future in admin.delete_topics(["doomed", "reborn"], operation_timeout=30).values():
            future.result(30)
        wait_until(
            lambda: not {"doomed", "reborn"} & set(admin.list_topics(timeout=10).topics),
            "the topics gone",
        )
        # The coordinator forgets the deleted topics' offsets, as Kafka's does.
        wait_until(lambda: {t for t, _ in committed(admin)} == {"kept"}, "offsets dropped")
        admin.create_topics([NewTopic("reborn", 3, 2)])["reborn"].result(30)
        produce(bootstrap, "kept", [b"kept-after-%d" % i for i in range(10)])
        # Three times what the old topic held: wherever the group starts in the new one
        # (below), some partition then holds records past that point.
        reborn = [b"reborn-after-%d" % i for i in range(30)]
        produce(bootstrap, "reborn", reborn)
        consume_until({b"kept-after-%d" % i for i in range(10)})
        # The new topic is consumed too; from where depends on timing, with Kafka as
        # here: on the rebalance the recreation causes, librdkafka commits the
        # positions it had in the old topic, which the new one then starts from. With
        # as many records as the old topic had, each partition could end exactly there
        # (the records land on random partitions) and leave nothing to read.
        consume_until(set(reborn), any_of=True)
    finally:
        consumer.close()
        probe.stop()
    assert probe.probes > 0
    assert probe.failures == []
