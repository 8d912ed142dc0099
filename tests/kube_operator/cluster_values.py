"""Values of one Cluster pass for the pure tests of its status and its pace: a snapshot
of the ``events`` Cluster (its brokers' pods and what the brokers answered) and a
pass's outcome made of the steps a test names (by default: nothing to do)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tidelog_operator.broker_config import CheckedConfig
from tidelog_operator.cluster.disks import VolumeAction, VolumeDecision
from tidelog_operator.cluster.roll_step import RollStep
from tidelog_operator.cluster.rolling import RollAction, RollDecision
from tidelog_operator.cluster.scale_step import ScaleStep
from tidelog_operator.cluster.scaling import ScaleAction, ScaleDecision
from tidelog_operator.cluster.snapshot import (
    BrokerPod,
    BrokersView,
    ClusterSnapshot,
    LogDir,
    Partition,
    StatefulSetView,
)
from tidelog_operator.cluster.status import PassOutcome
from tidelog_operator.cluster.volume_step import VolumeStep
from tidelog_operator.spec import Volume, parse_cluster

SPEC = parse_cluster(
    "events", "ns", {"brokers": {"replicas": 2}, "storage": {"volumes": [{"id": 0, "size": "1Gi"}]}}
)
DATA_0 = "/var/lib/tidelog/data-0"


def partition(
    index: int, replicas=(0, 1), isr=None, leader: int | None = 0, topic: str = "orders"
) -> Partition:
    """A partition of ``topic``; its ISR is its replicas unless given."""
    replicas = tuple(replicas)
    in_sync = replicas if isr is None else tuple(isr)
    return Partition(topic, index, replicas, in_sync, leader, (), 1)


def answer(
    partitions: Iterable[Partition] = (),
    *,
    live: Iterable[int] = (0, 1),
    controller: int | None = 0,
    failed: Mapping[int, str] | None = None,
) -> BrokersView:
    """What the ``live`` brokers say: one log dir each (``data-0``), offline on a broker
    ``failed`` maps to the error's name."""
    partitions = tuple(partitions)
    failed = failed or {}
    log_dirs = {
        b: (
            LogDir(
                DATA_0,
                failed.get(b),
                1 << 30,
                {p.tp: 100 for p in partitions if b in p.replicas and b not in failed},
            ),
        )
        for b in live
    }
    return BrokersView({b: None for b in live}, controller, partitions, log_dirs, {})


def pod(broker: int, *, ready: bool = True) -> BrokerPod:
    return BrokerPod(
        id=broker,
        name=f"events-broker-{broker}",
        node=f"w{broker + 1}",
        ready=ready,
        running=True,
        started=True,
        revision="r1",
        claims={0: f"data-0-events-broker-{broker}"},
        going=False,
    )


def snapshot(
    brokers: BrokersView | None,
    *,
    running: int = 2,
    unready: Iterable[int] = (),
    zookeeper_ready: bool = True,
) -> ClusterSnapshot:
    """``running`` brokers on the current revision, ready but the ``unready``."""
    statefulset = StatefulSetView(running, "r1", {0: Volume(0, "1Gi")}, 1, "7")
    pods = tuple(pod(b, ready=b not in set(unready)) for b in range(running))
    unreachable = None if brokers is not None else "no answer"
    return ClusterSnapshot(
        statefulset, pods, zookeeper_ready, brokers=brokers, unreachable=unreachable
    )


HEALTHY_BROKERS = answer([partition(0), partition(1, (1, 0), leader=1)])
# a Cluster that was Ready before the pass (so no longer Creating)
READY = {"conditions": [{"type": "Ready", "status": "True", "reason": "AllBrokersReady"}]}
NOTHING_ROLLS = RollStep(RollDecision(RollAction.NOTHING))
NO_VOLUME_CHANGE = VolumeStep(VolumeDecision(VolumeAction.NONE, frozenset({0})))
NOTHING_SCALES = ScaleStep(ScaleDecision(ScaleAction.DONE))
VALID = CheckedConfig({})


def outcome(
    *,
    roll: RollStep = NOTHING_ROLLS,
    volumes: VolumeStep = NO_VOLUME_CHANGE,
    scale: ScaleStep = NOTHING_SCALES,
    config: CheckedConfig = VALID,
) -> PassOutcome:
    return PassOutcome(config, roll, volumes, scale)
