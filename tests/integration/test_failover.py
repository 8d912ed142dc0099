"""Nothing acknowledged is lost, nothing is duplicated: an idempotent acks=all producer
writes without pause while a seeded schedule kills partition leaders (-9), the
controller (-9) and stops brokers (SIGTERM), restarting each; then a consumer reads
every acknowledged record exactly once, at its acknowledged offset, in order."""

from __future__ import annotations

import os
import random

import pytest

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from integration.cluster import Cluster
from waiting import wait_until

pytestmark = pytest.mark.timeout(280)

TOPIC = "orders"
PARTITIONS = 3
ROUNDS = 3
FAULTS = ("kill the leader of a partition", "kill the controller", "stop a broker")


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
        with ContinuousProducer(bootstrap, TOPIC, PARTITIONS) as producer:
            for fault in schedule:
                producer.wait_for_more(200, "records acknowledged")
                target = inject(cluster, fault, rng)
                producer.wait_for_more(200, f"records acknowledged after '{fault}' ({context})")
                # A killed broker's registration lives until its session times out.
                wait_until(lambda t=target: t not in cluster.registered(), "the old session ended")
                cluster.brokers[target].start()
                wait_until(
                    lambda: fully_replicated(cluster), f"full ISR again ({context})", timeout=60
                )
        assert_acknowledged_records_kept(bootstrap, producer, f"({context})")
