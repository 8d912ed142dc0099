"""Client quotas enforced on real clients (confluent-kafka): a producer over its
``producer_byte_rate`` and a consumer over its ``consumer_byte_rate`` are held to the
quota over 20 s, measured as the bytes acknowledged (or consumed) over the client's own
clock after a warm-up; librdkafka reports the throttle times the broker's responses
carry; another client at the same time is never throttled and runs at several times the
quota.

A quota is a ceiling: the measured rate is at most 10% over it. It is also a rate the
client gets, not starved: at least three quarters of it. Not within 10% below: the test
runs beside other tests on two cores, and a client asking for as much as it may falls
behind when its process waits for a core (88.6% of the quota on a slow CI day); the
broker cannot give the lost time back, since its windows hold two seconds.

The broker measures over ``quota.window.num=2`` windows of one second. With more
windows Kafka's rates swing around the quota by more than 10% over 20 s: the default 11
let a new client send ten seconds of its quota at once, and again whenever the sample
holding that burst expires (``tests/security/test_quota_manager.py`` holds a client to
its quota over minutes with those defaults). The clients move a few kilobytes a request
(4 KiB batches, one batch a fetch): a throttled fetch is answered empty and its bytes
taken back, as by Kafka, and a consumer whose every fetch is as large as its quota
allows in one response gets about half of it, from Kafka as from tidelog.
"""

from __future__ import annotations

import json
import threading
import time

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from integration.cluster import Cluster
from kafka_reference.tools import run_kafka_tool
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.records.builder import build_batch
from waiting import wait_until

QUOTA = 100_000  # bytes a second
WARM_UP_S = 4
MEASURE_S = 20
VALUE = b"v" * 1000
BATCH_BYTES = 4096
# The other client's bytes, and how many times the quota it must reach on its own clock.
FREE_BYTES = 40 * QUOTA
FREE_FACTOR = 3


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, module_chroot):
    overrides = {"quota.window.num": "2", "quota.window.size.seconds": "1"}
    with Cluster(
        tmp_path_factory.mktemp("throttling"), module_chroot, size=1, overrides=overrides
    ) as running:
        yield running


def set_client_quota(cluster: Cluster, client_id: str, key: str, value: float) -> None:
    with cluster.connect(1) as connection:
        response = connection.request(
            ApiKey.ALTER_CLIENT_QUOTAS,
            None,
            {
                "entries": [
                    {
                        "entity": [{"entity_type": "client-id", "entity_name": client_id}],
                        "ops": [{"key": key, "value": value, "remove": False}],
                    }
                ],
                "validate_only": False,
            },
        )
    assert response.entries[0].error_code == 0


class ThrottleStats:
    """The largest throttle time librdkafka reported for any broker, and when it first
    reported one."""

    def __init__(self):
        self.max_ms = 0
        self.first_throttled_at: float | None = None

    def __call__(self, text: str) -> None:
        for broker in json.loads(text)["brokers"].values():
            self.max_ms = max(self.max_ms, broker["throttle"]["max"])
        if self.max_ms and self.first_throttled_at is None:
            self.first_throttled_at = time.monotonic()


def client_config(cluster: Cluster, client_id: str, stats: ThrottleStats) -> dict:
    return {
        "bootstrap.servers": cluster.bootstrap,
        "client.id": client_id,
        "statistics.interval.ms": 500,
        "stats_cb": stats,
    }


class Produced:
    """A producer's acknowledged value bytes, each with the time its ack was seen."""

    def __init__(self, cluster: Cluster, topic: str, client_id: str):
        self.stats = ThrottleStats()
        self.producer = Producer(
            {
                **client_config(cluster, client_id, self.stats),
                "linger.ms": 5,
                "batch.size": BATCH_BYTES,
                # what is queued when the time is up is acknowledged in a second or two
                "queue.buffering.max.kbytes": 200,
            }
        )
        self.topic = topic
        self.acks: list[tuple[float, int]] = []

    def _delivered(self, error, message) -> None:
        if error is not None:
            raise KafkaException(error)
        self.acks.append((time.monotonic(), len(message.value())))

    def produce(self, *, stop: threading.Event | None = None, total: int | None = None) -> None:
        """Produce as fast as the client lets, until stopped or a number of bytes."""
        sent = 0
        while (stop is None or not stop.is_set()) and (total is None or sent < total):
            try:
                self.producer.produce(self.topic, VALUE, on_delivery=self._delivered)
                sent += len(VALUE)
            except BufferError:
                self.producer.poll(0.01)
            self.producer.poll(0)
        assert self.producer.flush(120) == 0


def measure_while_throttled(stats: ThrottleStats, run, other) -> tuple[float, float]:
    """Run ``run(stop=...)`` in a thread; once the broker has throttled it (its quota is
    in force) and a warm-up has passed, run ``other()`` beside it for the measured
    time; then stop it. The measured interval, on this process's clock."""
    stop = threading.Event()
    worker = threading.Thread(target=run, kwargs={"stop": stop})
    worker.start()
    try:
        wait_until(lambda: stats.first_throttled_at is not None, "the first throttled answer", 30)
        measured_from = stats.first_throttled_at + WARM_UP_S
        while time.monotonic() < measured_from:
            time.sleep(0.1)  # the warm-up, on the clock the measure is taken with
        other()
        measured_to = measured_from + MEASURE_S
        while time.monotonic() < measured_to + 1:
            time.sleep(0.1)
    finally:
        stop.set()
        worker.join()
    return measured_from, measured_to


def assert_held_to_the_quota(rate: float) -> None:
    """At most 10% over the quota and at least three quarters of it (the docstring)."""
    assert rate <= 1.1 * QUOTA, "over the quota"
    assert rate >= 0.75 * QUOTA, "starved below the quota"


def bytes_between(events: list[tuple[float, int]], start: float, end: float) -> int:
    return sum(size for at, size in events if start <= at < end)


def own_rate(events: list[tuple[float, int]], started: float) -> float:
    return sum(size for _, size in events) / (events[-1][0] - started)


def test_a_producer_is_held_to_its_byte_rate_and_another_is_not_slowed(cluster):
    cluster.create_topic("produced", partitions=1)
    set_client_quota(cluster, "throttled-producer", "producer_byte_rate", QUOTA)
    throttled = Produced(cluster, "produced", "throttled-producer")
    free = Produced(cluster, "produced", "free-producer")
    free_started: list[float] = []

    def produce_freely() -> None:
        free_started.append(time.monotonic())
        free.produce(total=FREE_BYTES)

    measured_from, measured_to = measure_while_throttled(
        throttled.stats, throttled.produce, produce_freely
    )
    rate = bytes_between(throttled.acks, measured_from, measured_to) / MEASURE_S
    assert_held_to_the_quota(rate)
    assert throttled.stats.max_ms > 0
    assert free.stats.max_ms == 0
    assert own_rate(free.acks, free_started[0]) > FREE_FACTOR * QUOTA


class ConsumedBytes:
    """A consumer's value bytes from the beginning of a partition, each with the time it
    was polled."""

    def __init__(self, cluster: Cluster, topic: str, client_id: str):
        self.stats = ThrottleStats()
        self.consumer = Consumer(
            {
                **client_config(cluster, client_id, self.stats),
                "group.id": client_id,
                "max.partition.fetch.bytes": BATCH_BYTES,
            }
        )
        self.consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        self.events: list[tuple[float, int]] = []

    def consume(self, *, stop: threading.Event | None = None, total: int | None = None) -> None:
        received = 0
        while (stop is None or not stop.is_set()) and (total is None or received < total):
            message = self.consumer.poll(0.2)
            if message is None:
                continue
            if message.error():
                raise KafkaException(message.error())
            self.events.append((time.monotonic(), len(message.value())))
            received += len(message.value())
        self.consumer.close()


def test_a_consumer_is_held_to_its_byte_rate_and_another_is_not_slowed(cluster):
    cluster.create_topic("consumed", partitions=1)
    filler = Produced(cluster, "consumed", "filler")
    filler.produce(total=(WARM_UP_S + MEASURE_S + 20) * QUOTA)
    set_client_quota(cluster, "throttled-consumer", "consumer_byte_rate", QUOTA)
    throttled = ConsumedBytes(cluster, "consumed", "throttled-consumer")
    free = ConsumedBytes(cluster, "consumed", "free-consumer")
    free_started: list[float] = []

    def consume_freely() -> None:
        free_started.append(time.monotonic())
        free.consume(total=FREE_BYTES)

    measured_from, measured_to = measure_while_throttled(
        throttled.stats, throttled.consume, consume_freely
    )
    rate = bytes_between(throttled.events, measured_from, measured_to) / MEASURE_S
    assert_held_to_the_quota(rate)
    assert throttled.stats.max_ms > 0
    assert free.stats.max_ms == 0
    assert own_rate(free.events, free_started[0]) > FREE_FACTOR * QUOTA


def test_a_client_that_ignores_throttle_times_is_held_by_its_muted_connection(cluster):
    """A raw client sends Produce after Produce without waiting out the throttle_time_ms
    its answers carry: the broker reads its next request only once the throttle has
    passed (KIP-219), so from its first throttled answer on it is held to the quota."""
    cluster.create_topic("raw-throttled", partitions=1)
    quota = 50_000
    set_client_quota(cluster, "raw", "producer_byte_rate", quota)
    batch = build_batch([(None, b"x" * 10_000)])
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {"name": "raw-throttled", "partition_data": [{"index": 0, "records": batch}]}
        ],
    }
    broker = cluster.brokers[1]
    with BrokerConnection("127.0.0.1", broker.port, client_id="raw", timeout=30) as connection:

        def throttled() -> bool:
            return connection.request(ApiKey.PRODUCE, None, body).throttle_time_ms > 0

        wait_until(throttled, "a Produce of client id raw throttled", 30)
        held = [time.monotonic()]
        for _ in range(40):
            connection.request(ApiKey.PRODUCE, None, body)
            held.append(time.monotonic())
    rate = 40 * len(batch) / (held[-1] - held[0])
    assert rate < quota * 1.1


def test_a_client_over_its_request_percentage_is_throttled_and_another_is_not(cluster):
    """``request_percentage`` 0.1: a millisecond of the broker's handling a second."""
    set_client_quota(cluster, "busy", "request_percentage", 0.1)
    metadata = {"topics": None, "allow_auto_topic_creation": False}
    port = cluster.brokers[1].port
    with (
        BrokerConnection("127.0.0.1", port, client_id="busy", timeout=30) as busy,
        BrokerConnection("127.0.0.1", port, client_id="idle", timeout=30) as idle,
    ):

        def throttled() -> bool:
            answers = [busy.request(ApiKey.METADATA, None, metadata) for _ in range(50)]
            return any(answer.throttle_time_ms > 0 for answer in answers)

        wait_until(throttled, "a Metadata of client id busy throttled", 60)
        assert all(
            idle.request(ApiKey.METADATA, None, metadata).throttle_time_ms == 0 for _ in range(50)
        )


def test_kafka_producer_perf_test_is_held_to_its_byte_rate(cluster):
    """Kafka's own Java producer (``kafka-producer-perf-test.sh``), which waits out the
    throttle times it is told: its records a second, over its whole run, at the quota."""
    cluster.create_topic("java-produced", partitions=1)
    set_client_quota(cluster, "java-throttled", "producer_byte_rate", QUOTA)
    # the quota in force (its notification read) before the run starts
    body = {
        "acks": 1,
        "timeout_ms": 5000,
        "topic_data": [
            {
                "name": "java-produced",
                "partition_data": [
                    {"index": 0, "records": build_batch([(None, b"x" * 2 * QUOTA)])}
                ],
            }
        ],
    }
    port = cluster.brokers[1].port
    with BrokerConnection("127.0.0.1", port, client_id="java-throttled", timeout=30) as probe:
        wait_until(
            lambda: probe.request(ApiKey.PRODUCE, None, body).throttle_time_ms > 0,
            "the quota of java-throttled in force",
        )
    records = 25 * QUOTA // len(VALUE)
    result = run_kafka_tool(
        "kafka-producer-perf-test",
        *("--topic", "java-produced", "--num-records", str(records)),
        *("--record-size", str(len(VALUE)), "--throughput", "-1"),
        "--producer-props",
        f"bootstrap.servers={cluster.bootstrap}",
        "client.id=java-throttled",
        f"batch.size={BATCH_BYTES}",
        timeout=180,
    )
    assert result.returncode == 0, result.stderr
    summary = result.stdout.strip().splitlines()[-1]
    per_second = float(summary.split(" records sent, ")[1].split(" records/sec")[0])
    print(summary)
    assert_held_to_the_quota(per_second * len(VALUE))
