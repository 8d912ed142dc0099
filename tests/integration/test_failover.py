"""Nothing acknowledged is lost, nothing is duplicated: an idempotent acks=all producer
writes without pause while a seeded schedule kills partition leaders (-9), the
controller (-9) and stops brokers (SIGTERM), restarting each; then a consumer reads
every acknowledged record exactly once, at its acknowledged offset, in order."""

from __future__ import annotations

import os
import random
import threading

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from integration.cluster import Cluster, wait_until

pytestmark = pytest.mark.timeout(280)

TOPIC = "orders"
PARTITIONS = 3
ROUNDS = 3
FAULTS = ("kill the leader of a partition", "kill the controller", "stop a broker")


class ContinuousProducer:
    """Writes numbered records round-robin over the partitions until stopped; remembers
    what was acknowledged and where."""

    def __init__(self, bootstrap: str):
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": 120000,
                "retry.backoff.ms": 50,
            }
        )
        self.acked: dict[int, dict[int, bytes]] = {p: {} for p in range(PARTITIONS)}
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, error, message) -> None:
        if error is not None:
            self.failed.append(str(error))
        else:
            self.acked[message.partition()][message.offset()] = message.value()

    def _run(self) -> None:
        number = 0
        while not self._stop.is_set():
            partition = number % PARTITIONS
            try:
                self.producer.produce(
                    TOPIC, b"%d" % number, partition=partition, on_delivery=self._delivered
                )
                number += 1
            except BufferError:
                pass
            self.producer.poll(0.001 if number % 20 == 0 else 0)

    def count(self) -> int:
        return sum(len(a) for a in self.acked.values())

    def __enter__(self) -> ContinuousProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        left = self.producer.flush(120)
        assert left == 0, f"{left} records never acknowledged nor failed"


def read_everything(bootstrap: str, expected: dict[int, int]) -> dict[int, list]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(TOPIC, p, 0) for p in range(PARTITIONS)])
    found: dict[int, list] = {p: [] for p in range(PARTITIONS)}

    def done() -> bool:
        for message in consumer.consume(1000, 0.5):
            if not message.error():
                found[message.partition()].append((message.offset(), message.value()))
        return all(len(found[p]) >= expected[p] for p in range(PARTITIONS))

    try:
        wait_until(done, "every acknowledged record consumed", timeout=90)
    finally:
        consumer.close()
    return found


def inject(cluster: Cluster, fault: str, rng: random.Random) -> int:
    """Apply one fault; returns the broker it hit (to be started again)."""
    if fault == "kill the leader of a partition":
        partition = rng.randrange(PARTITIONS)
        target = cluster.leaders(cluster.running[0], TOPIC)[partition][0]
        cluster.brokers[target].kill()
    elif fault == "kill the controller":
        target = wait_until(cluster.controller_id, "a controller")
        cluster.brokers[target].kill()
    else:
        target = rng.choice(cluster.running)
        assert cluster.brokers[target].stop() == 0
    return target


def fully_replicated(cluster: Cluster) -> bool:
    return all(
        isr == [1, 2, 3] and leader >= 0
        for broker_id in cluster.running
        for leader, _, isr in cluster.leaders(broker_id, TOPIC).values()
    )


def test_no_acknowledged_record_is_lost_or_duplicated_through_failures(tmp_path, zk_chroot):
    seed = int(os.environ.get("TIDELOG_FAULT_SEED", random.randrange(1 << 32)))
    rng = random.Random(seed)
    schedule = [rng.choice(FAULTS) for _ in range(ROUNDS)]
    context = f"seed {seed} (TIDELOG_FAULT_SEED={seed} repeats it), schedule {schedule}"
    overrides = {"replica.lag.time.max.ms": "3000"}
    with Cluster(tmp_path, zk_chroot, size=3, overrides=overrides) as cluster:
        cluster.create_topic(
            TOPIC,
            partitions=PARTITIONS,
            replication_factor=3,
            configs={"min.insync.replicas": "2"},
        )
        bootstrap = cluster.bootstrap
        with ContinuousProducer(bootstrap) as producer:
            for fault in schedule:
                before = producer.count()
                wait_until(lambda b=before: producer.count() > b + 200, "records acknowledged")
                target = inject(cluster, fault, rng)
                after = producer.count()
                wait_until(
                    lambda b=after: producer.count() > b + 200,
                    f"records acknowledged after '{fault}' ({context})",
                    timeout=60,
                )
                # A killed broker's registration lives until its session times out.
                wait_until(lambda t=target: t not in cluster.registered(), "the old session ended")
                cluster.brokers[target].start()
                wait_until(
                    lambda: fully_replicated(cluster), f"full ISR again ({context})", timeout=60
                )
        assert not producer.failed, f"{producer.failed[:5]} ({context})"

        acked = producer.acked
        found = read_everything(bootstrap, {p: max(acked[p], default=-1) + 1 for p in acked})
    for partition in range(PARTITIONS):
        offsets = [offset for offset, _ in found[partition]]
        assert offsets == sorted(set(offsets)), f"partition {partition} repeats ({context})"
        log = dict(found[partition])
        lost = {o: v for o, v in acked[partition].items() if log.get(o) != v}
        assert not lost, f"partition {partition} lost {len(lost)} acked records ({context})"
        numbers = [int(value) for _, value in found[partition]]
        assert numbers == sorted(set(numbers)), f"partition {partition} disordered ({context})"
