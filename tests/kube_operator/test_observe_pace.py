"""How soon the operator looks at a Cluster again: soon (``STEP_INTERVAL_S``) exactly
when the pass leaves the Progressing condition True, that is while a roll, a drain of
volumes or a scaling is under way (a refused scale-down takes the condition, a drain
goes on); otherwise after ``OBSERVE_INTERVAL_S``. Pure: the
decisions of one pass in, as the Cluster's handler combines them."""

from __future__ import annotations

import itertools

from tidelog_operator.cluster.disks import VolumeDecision
from tidelog_operator.cluster.observe import (
    rolling_status,
    scaling_status,
    under_way,
    volume_status,
)
from tidelog_operator.cluster.rolling import RollDecision
from tidelog_operator.cluster.scaling import ScaleDecision
from tidelog_operator.cluster.scaling_moves import ScaleStep
from tidelog_operator.cluster.volume_moves import VolumeStep

ROLLS = [
    RollDecision("done"),
    RollDecision("wait", 1, "waiting for broker 1 to be ready"),
    RollDecision("restart", 2, "broker 2 runs an old revision"),
]
VOLUME_STEPS = [
    VolumeStep(VolumeDecision("none", frozenset({0, 1}))),
    VolumeStep(VolumeDecision("drain", frozenset({0, 1}), (1,), (0, 1, 2), "draining 1")),
    VolumeStep(VolumeDecision("wait", frozenset({0, 1}), (1,), (0, 1, 2), "2 replicas left")),
    VolumeStep(VolumeDecision("unmount", frozenset({0}), (1,))),
]
SCALE_STEPS = [
    ScaleStep(ScaleDecision("done")),
    ScaleStep(ScaleDecision("elect-leaders", reason="electing preferred leaders, on schedule")),
    ScaleStep(ScaleDecision("add-brokers", (3,), "spreading replicas onto brokers 3", True)),
    ScaleStep(ScaleDecision("wait", (3,), "waiting for brokers 3 to register", True)),
    ScaleStep(ScaleDecision("refuse", (2,), "topic orders has replication factor 3")),
]


def _progressing(roll, volumes, step) -> bool:
    status = rolling_status({}, roll, generation=1, now="now")
    status = volume_status(status, volumes, generation=1, now="now")
    status = scaling_status(status, step, generation=1, now="now")
    (condition,) = [c for c in status["conditions"] if c["type"] == "Progressing"]
    return condition["status"] == "True"


def test_a_pass_is_under_way_exactly_when_it_leaves_progressing_true():
    seen = set()
    for roll, volumes, step in itertools.product(ROLLS, VOLUME_STEPS, SCALE_STEPS):
        if step.decision.action == "refuse":
            continue
        expected = _progressing(roll, volumes, step)
        assert under_way(roll, volumes, step) == expected, (roll, volumes, step)
        seen.add(expected)
    assert seen == {True, False}


def test_a_refused_scale_down_takes_the_condition_but_a_drain_goes_on():
    refused = SCALE_STEPS[-1]
    for volumes in VOLUME_STEPS:
        assert not _progressing(ROLLS[0], volumes, refused)
        draining = volumes.decision.action in ("drain", "wait")
        assert under_way(ROLLS[0], volumes, refused) == draining, volumes


def test_an_idle_cluster_is_looked_at_only_on_the_long_interval():
    idle = (ROLLS[0], VOLUME_STEPS[0], SCALE_STEPS[0])
    assert not under_way(*idle)
    assert under_way(ROLLS[1], VOLUME_STEPS[0], SCALE_STEPS[0])
    assert under_way(ROLLS[0], VOLUME_STEPS[1], SCALE_STEPS[0])
    assert under_way(ROLLS[0], VOLUME_STEPS[0], SCALE_STEPS[2])
