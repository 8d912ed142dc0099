"""The scaler against real brokers (ids 0..3, as the operator's pod ordinals), driven
pass after pass as the operator's timer drives it, while an idempotent acks=all producer
writes to a ``min.insync.replicas=2`` topic: a scale-up spreads the replicas onto the new
broker under a throttle that goes when done, a scale-down drains the leaving broker
before the StatefulSet shrinks, a scale-down below the replication factor moves
nothing, and every acknowledged record is kept."""

from __future__ import annotations

import time
from collections import Counter

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from integration.cluster import Cluster
from tidelog.admin import AdminClient
from tidelog.admin.moves import BROKER_THROTTLE_RATES, TOPIC_THROTTLED_REPLICAS
from tidelog.admin.topics import ConfigResourceType
from tidelog_operator.cluster.observe import scaling_status
from tidelog_operator.cluster.scaling_moves import scale_once
from tidelog_operator.spec import parse_cluster

TOPIC = "orders"
PARTITIONS = 8
THROTTLE = 2_000_000


def spec_with(brokers: int):
    return parse_cluster(
        "local",
        "default",
        {
            "brokers": {"replicas": brokers},
            "storage": {"volumes": [{"id": 0, "size": "1Gi"}]},
            "rebalance": {"throttleBytesPerSecond": THROTTLE},
        },
    )


class Driver:
    """The operator's timer: one ``scale_once`` per pass, its status kept between."""

    def __init__(self, cluster: Cluster):
        self.admin = AdminClient(cluster.bootstrap, timeout=10)
        self.status: dict = {}
        self.running = 0
        self.shrunk: list[int] = []
        self.actions: list[str] = []

    def shrink(self, brokers: int) -> None:
        self.shrunk.append(brokers)
        self.running = brokers

    def step(self, desired: int):
        step = scale_once(
            self.admin,
            spec_with(desired),
            self.status,
            running=self.running,
            now=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            shrink=self.shrink,
        )
        self.status = scaling_status(self.status, step, generation=1, now="now")
        self.actions.append(step.decision.action)
        return step

    def until(self, desired: int, action: str, timeout: float = 120) -> None:
        deadline = time.monotonic() + timeout
        while self.step(desired).decision.action != action:
            assert time.monotonic() < deadline, f"no {action} within {timeout} s: {self.actions}"
            time.sleep(0.3)


def replica_counts(admin: AdminClient) -> Counter:
    state = admin.cluster_state([TOPIC])
    return Counter(b for replicas in state.assignment.values() for b in replicas)


def throttles_set(admin: AdminClient) -> bool:
    topic = admin.describe_configs(ConfigResourceType.TOPIC, [TOPIC])[TOPIC]
    brokers = admin.describe_configs(ConfigResourceType.BROKER, ["0", "3"])
    return any(topic[name].value for name in TOPIC_THROTTLED_REPLICAS if name in topic) or any(
        broker[name].value
        for broker in brokers.values()
        for name in BROKER_THROTTLE_RATES
        if name in broker and not broker[name].is_default
    )


def test_scale_up_spreads_scale_down_drains_and_too_far_down_is_refused(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=4, first_id=0) as cluster:
        cluster.create_topic(
            TOPIC,
            assignment={p: [p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(PARTITIONS)},
            configs={"min.insync.replicas": "2"},
        )
        driver = Driver(cluster)
        driver.running = 3
        assert driver.step(3).decision.action == "done"
        assert driver.status["spreadBrokers"] == 3
        with ContinuousProducer(cluster.bootstrap, TOPIC, PARTITIONS) as producer:
            producer.wait_for_more(20_000, "records before the scale-up")

            # 3 → 4: the StatefulSet has grown, broker 3 registered; replicas spread.
            driver.running = 4
            assert driver.step(4).decision.action == "add-brokers"
            move = driver.status["rebalance"]
            assert move["state"] == "Running" and move["partitions"] > 0 and move["bytes"] > 0
            assert move["throttleBytesPerSecond"] == THROTTLE
            assert throttles_set(driver.admin), "the move started unthrottled"
            driver.until(4, "done")
            move = driver.status["rebalance"]
            assert move["state"] == "Done" and move["finishedAt"]
            assert (move["partitionsDone"], move["bytesDone"]) == (
                move["partitions"],
                move["bytes"],
            )
            assert driver.status["spreadBrokers"] == 4
            counts = replica_counts(driver.admin)
            assert set(counts) == {0, 1, 2, 3} and max(counts.values()) - min(counts.values()) <= 1
            leaders = Counter(leader for leader, _, _ in cluster.leaders(0, TOPIC).values())
            assert max(leaders.values()) - min(leaders.values()) <= 1, leaders
            assert not throttles_set(driver.admin), "the throttle outlived the move"
            producer.wait_for_more(2_000, "records after the scale-up")

            # 4 → 3: broker 3 is drained first, then the StatefulSet shrinks.
            driver.actions.clear()
            driver.until(3, "shrink")
            assert driver.actions[0] == "remove-brokers" and "finish" in driver.actions
            assert driver.shrunk == [3] and driver.status["spreadBrokers"] == 3
            assert 3 not in replica_counts(driver.admin)
            producer.wait_for_more(2_000, "records after the scale-down")

            # 3 → 2 with replication factor 3: refused, nothing moves.
            before = driver.admin.cluster_state([TOPIC]).assignment
            refused = driver.step(2)
            assert refused.decision.action == "refuse"
            assert "orders has replication factor 3" in refused.decision.reason
            assert driver.status["rebalance"]["state"] == "Refused"
            assert driver.admin.cluster_state([TOPIC]).assignment == before
            assert not driver.admin.list_reassignments() and driver.running == 3
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after scaling")
