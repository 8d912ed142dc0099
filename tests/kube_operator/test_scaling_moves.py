"""The scaler against real brokers (ids from 0, as the operator's pod ordinals), driven
pass after pass as the operator drives it, while an idempotent acks=all producer
writes to a ``min.insync.replicas=2`` topic: a scale-up spreads the replicas onto the new
broker under a throttle that goes when done (also when its start goes unanswered, with or
without effect), a scale-down drains the leaving broker
before the StatefulSet shrinks, a scale-down below the replication factor moves
nothing, a requested replica rebalance evens out a skewed topic, preferred leaders come
back on schedule or when asked, the replicas of a failed log dir are copied to another
broker, and every acknowledged record is kept."""

from __future__ import annotations

import datetime
import time
from collections import Counter

from integration.acked_writes import ContinuousProducer, assert_acknowledged_records_kept
from integration.cluster import Cluster
from tidelog.admin import AdminClient
from tidelog.admin.moves import BROKER_THROTTLE_RATES, TOPIC_THROTTLED_REPLICAS
from tidelog.admin.topics import ConfigResourceType
from tidelog_operator.cluster.commands import Context, ElectPreferredLeaders, carry_out
from tidelog_operator.cluster.scale_step import LEADERS, ScaleStep, election_record, scale_step
from tidelog_operator.cluster.scaling import ScaleAction
from tidelog_operator.cluster.snapshot import ask_brokers
from tidelog_operator.spec import parse_cluster
from waiting import wait_until

TOPIC = "orders"
PARTITIONS = 8
THROTTLE = 2_000_000


def spec_with(brokers: int, leaders_every: int = 0, drain: bool = False):
    return parse_cluster(
        "local",
        "default",
        {
            "brokers": {"replicas": brokers},
            "storage": {"volumes": [{"id": 0, "size": "1Gi"}], "drainFailedDirs": drain},
            "rebalance": {
                "throttleBytesPerSecond": THROTTLE,
                "leaders": {"intervalSeconds": leaders_every},
            },
        },
    )


class Driver:
    """The operator's passes as far as the scaler goes: each asks the brokers, takes the
    scale step, carries out its commands (none of them touches Kubernetes), shrinks the
    StatefulSet when the step says so and keeps the status keys the step sets (and the
    record of an election it ran) for the next pass."""

    def __init__(self, cluster: Cluster):
        self.admin = AdminClient(cluster.bootstrap, timeout=10)
        self.status: dict = {}
        self.running = 0
        self.shrunk: list[int] = []
        self.actions: list[ScaleAction] = []

    def step(
        self,
        desired: int,
        requested: str | None = None,
        leaders_every: int = 0,
        drain: bool = False,
    ) -> ScaleStep:
        now = datetime.datetime.now(datetime.UTC)
        brokers = ask_brokers(self.admin, draining=False)
        step = scale_step(
            brokers,
            spec_with(desired, leaders_every, drain),
            self.status,
            running=self.running,
            requested=requested,
            now=now,
        )
        context = Context(api=None, namespace="default", cluster="local", admin=lambda: self.admin)
        updates = dict(step.status)
        for command in step.commands:
            outcome = carry_out(command, context)
            if isinstance(command, ElectPreferredLeaders):
                stamp = now.strftime("%Y-%m-%dT%H:%M:%SZ")
                updates[LEADERS] = election_record(brokers, command.trigger, outcome, stamp)
        if step.shrink_to is not None:
            self.shrunk.append(step.shrink_to)
            self.running = step.shrink_to
        self.status = {k: v for k, v in {**self.status, **updates}.items() if v is not None}
        self.actions.append(step.decision.action)
        return step

    def until(self, desired: int, action: ScaleAction, timeout: float = 120, **options) -> None:
        deadline = time.monotonic() + timeout
        while self.step(desired, **options).decision.action is not action:
            assert time.monotonic() < deadline, f"no {action} within {timeout} s: {self.actions}"
            time.sleep(0.3)


class LostOnTheWay:
    """The admin client, but the reassignment request is lost: before the controller gets
    it (``arrives=False``), or after, with its answer lost (a timeout either way)."""

    def __init__(self, admin: AdminClient, arrives: bool):
        self._admin, self._arrives = admin, arrives

    def __getattr__(self, name: str):
        return getattr(self._admin, name)

    def alter_partition_reassignments(self, moves):
        if self._arrives:
            self._admin.alter_partition_reassignments(moves)
        raise TimeoutError("no answer")


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


def create_rf3_topic_on_0_1_2(cluster: Cluster) -> None:
    cluster.create_topic(
        TOPIC,
        assignment={p: [p % 3, (p + 1) % 3, (p + 2) % 3] for p in range(PARTITIONS)},
        configs={"min.insync.replicas": "2"},
    )


def test_scale_up_spreads_scale_down_drains_and_too_far_down_is_refused(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=4, first_id=0) as cluster:
        create_rf3_topic_on_0_1_2(cluster)
        driver = Driver(cluster)
        driver.running = 3
        assert driver.step(3).decision.action is ScaleAction.DONE
        assert set(replica_counts(driver.admin)) == {0, 1, 2}  # broker 3 not in the set
        with ContinuousProducer(cluster.bootstrap, TOPIC, PARTITIONS) as producer:
            producer.wait_for_more(20_000, "records before the scale-up")

            # 3 → 4: the StatefulSet has grown, broker 3 registered. The first try's
            # request never reaches the controller: recorded and throttled all the same,
            # then finished with the throttles cleared, nothing spread, and tried again.
            driver.running = 4
            admin = driver.admin
            driver.admin = LostOnTheWay(admin, arrives=False)
            assert driver.step(4).decision.action is ScaleAction.ADD_BROKERS
            driver.admin = admin
            assert driver.status["rebalance"]["state"] == "Running" and throttles_set(admin)
            assert driver.step(4).decision.action is ScaleAction.FINISH
            assert not throttles_set(admin) and 3 not in replica_counts(admin)
            # replicas spread
            assert driver.step(4).decision.action is ScaleAction.ADD_BROKERS
            move = driver.status["rebalance"]
            assert move["state"] == "Running" and move["partitions"] > 0 and move["bytes"] > 0
            assert move["throttleBytesPerSecond"] == THROTTLE
            assert throttles_set(driver.admin), "the move started unthrottled"
            driver.until(4, ScaleAction.DONE)
            move = driver.status["rebalance"]
            assert move["state"] == "Done" and move["finishedAt"]
            assert (move["partitionsDone"], move["bytesDone"]) == (
                move["partitions"],
                move["bytes"],
            )
            counts = replica_counts(driver.admin)
            assert set(counts) == {0, 1, 2, 3} and max(counts.values()) - min(counts.values()) <= 1
            leaders = Counter(leader for leader, _, _ in cluster.leaders(0, TOPIC).values())
            assert max(leaders.values()) - min(leaders.values()) <= 1, leaders
            assert not throttles_set(driver.admin), "the throttle outlived the move"
            producer.wait_for_more(2_000, "records after the scale-up")

            # 4 → 3: broker 3 is drained first, then the StatefulSet shrinks. The start's
            # answer is lost: the move is ours all the same, finished and recorded.
            driver.actions.clear()
            driver.admin = LostOnTheWay(admin, arrives=True)
            assert driver.step(3).decision.action is ScaleAction.REMOVE_BROKERS
            driver.admin = admin
            driver.until(3, ScaleAction.SHRINK)
            assert (
                driver.actions[0] is ScaleAction.REMOVE_BROKERS
                and ScaleAction.FINISH in driver.actions
            )
            move = driver.status["rebalance"]
            assert (move["operation"], move["state"]) == ("RemoveBrokers", "Done"), move
            assert not throttles_set(admin), "the throttle outlived the move"
            assert driver.shrunk == [3]
            assert 3 not in replica_counts(driver.admin)
            producer.wait_for_more(2_000, "records after the scale-down")

            # 3 → 2 with replication factor 3: refused, nothing moves.
            before = driver.admin.cluster_state([TOPIC]).assignment
            refused = driver.step(2)
            assert refused.decision.action is ScaleAction.REFUSE_SCALE_DOWN
            assert "orders has replication factor 3" in refused.decision.reason
            assert driver.status["rebalance"]["state"] == "Refused"
            assert driver.admin.cluster_state([TOPIC]).assignment == before
            assert not driver.admin.list_reassignments() and driver.running == 3
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after scaling")


def in_sync(cluster: Cluster, broker: int) -> bool:
    assignment = cluster.assignment(TOPIC)
    return all(
        broker in isr
        for partition, (_, _, isr) in cluster.leaders(0, TOPIC).items()
        if broker in assignment[partition]
    )


def leader_spread(cluster: Cluster, brokers) -> int:
    leaders = Counter(leader for leader, _, _ in cluster.leaders(0, TOPIC).values())
    return max(leaders.get(b, 0) for b in brokers) - min(leaders.get(b, 0) for b in brokers)


def test_rebalances_even_out_replicas_and_leaders(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=3, first_id=0) as cluster:
        # Skewed: broker 0 holds and prefers every partition, broker 2 holds one.
        skewed = {p: [0, 1] for p in range(PARTITIONS - 1)} | {PARTITIONS - 1: [0, 2]}
        cluster.create_topic(TOPIC, assignment=skewed, configs={"min.insync.replicas": "1"})
        driver = Driver(cluster)
        driver.running = 3
        assert driver.step(3).decision.action is ScaleAction.DONE  # nothing due, nothing asked
        with ContinuousProducer(cluster.bootstrap, TOPIC, PARTITIONS) as producer:
            producer.wait_for_more(2_000, "records before the rebalance")
            rebalance = driver.step(3, requested="replicas")
            assert rebalance.decision.action is ScaleAction.REBALANCE_REPLICAS and rebalance.handled
            driver.until(3, ScaleAction.DONE)
            move = driver.status["rebalance"]
            assert move["operation"] == "Rebalance" and move["state"] == "Done"
            assert move["replicas"] > 0 and move["imbalanceBefore"] > 1
            assert move["imbalanceAfter"] <= 1
            counts = replica_counts(driver.admin)
            assert max(counts.values()) - min(counts.values()) <= 1, counts
            assert leader_spread(cluster, range(3)) <= 1

            # Broker 1 restarts: its leaderships go to the others and stay there.
            cluster.brokers[1].stop()
            cluster.brokers[1].start()
            wait_until(lambda: in_sync(cluster, 1), "broker 1 back in every ISR")
            assert leader_spread(cluster, range(3)) > 1
            elected = driver.step(3, requested="leaders")
            assert elected.decision.action is ScaleAction.ELECT_LEADERS and elected.handled
            election = driver.status["leaderElection"]
            assert election["trigger"] == "Request" and election["leadersMoved"] > 0
            assert election["imbalanceBefore"] > 1 >= election["imbalanceAfter"]
            assert leader_spread(cluster, range(3)) <= 1

            # On a schedule: due once the interval has passed since the last, not before.
            assert driver.step(3, leaders_every=3600).decision.action is ScaleAction.DONE
            time.sleep(1.1)
            scheduled = driver.step(3, leaders_every=1)
            assert scheduled.decision.action is ScaleAction.ELECT_LEADERS and not scheduled.handled
            assert driver.status["leaderElection"]["trigger"] == "Schedule"
            producer.wait_for_more(1_000, "records after the rebalances")
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after rebalancing")


def test_the_replicas_of_a_failed_log_dir_are_copied_to_another_broker(tmp_path, zk_chroot):
    with Cluster(tmp_path, zk_chroot, size=4, first_id=0) as cluster:
        # spread over the 4 brokers: none of them is empty, one lacks each partition
        spread = {p: [p % 4, (p + 1) % 4, (p + 2) % 4] for p in range(PARTITIONS)}
        cluster.create_topic(TOPIC, assignment=spread, configs={"min.insync.replicas": "2"})
        driver = Driver(cluster)
        driver.running = 4
        failing = cluster.brokers[1].log_dirs[0]
        lost = {int(d.name.rsplit("-", 1)[1]) for d in failing.glob(f"{TOPIC}-*")}
        assert lost, "broker 1's first dir holds some partitions"
        with ContinuousProducer(cluster.bootstrap, TOPIC, PARTITIONS, 2000) as producer:
            producer.wait_for_more(2_000, "records before the failure")
            # nothing lost yet
            assert driver.step(4, drain=True).decision.action is ScaleAction.DONE
            failing.rename(failing.with_name("failed-disk"))
            failing.touch()  # every write to that dir fails from now on
            wait_until(
                lambda: all(
                    1 not in isr
                    for p, (_, _, isr) in cluster.leaders(0, TOPIC).items()
                    if p in lost
                ),
                "broker 1's lost replicas out of their ISRs",
                60,
            )
            # Without drainFailedDirs the operator only reports it (Degraded).
            assert driver.step(4).decision.action is ScaleAction.DONE
            drained = driver.step(4, drain=True)
            assert drained.decision.action is ScaleAction.REPLACE_LOST_REPLICAS
            assert drained.decision.brokers == (1,)
            driver.until(4, ScaleAction.DONE, drain=True)
            producer.wait_for_more(2_000, "records after the drain")
        move = driver.status["rebalance"]
        assert (move["operation"], move["state"]) == ("DrainFailedDirs", "Done")
        assert move["replicas"] == len(lost)
        assignment = cluster.assignment(TOPIC)
        for partition, (_, _, isr) in cluster.leaders(0, TOPIC).items():
            replicas = assignment[partition]
            kept = 1 in spread[partition] and partition not in lost
            assert (1 in replicas) == kept, (partition, replicas)
            assert len(replicas) == 3 and sorted(isr) == sorted(replicas), (partition, isr)
        assert_acknowledged_records_kept(cluster.bootstrap, producer, "after the drain")
