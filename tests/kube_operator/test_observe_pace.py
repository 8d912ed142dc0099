"""How soon the operator looks at a Cluster again: ``run_pass`` says a pass is under way
(the daemon looks again soon) when it leaves the Progressing condition True, that is
exactly while a roll, a drain of volumes or a scaling is under way; a refused
scale-down or drain takes the condition (the user must act) while a drain of volumes
goes on. Pure: ``status.progress`` over the steps of one pass."""

from __future__ import annotations

import itertools

from kube_operator.cluster_values import HEALTHY_BROKERS, READY, outcome, snapshot
from tidelog_operator.cluster.disks import VolumeAction, VolumeDecision
from tidelog_operator.cluster.roll_step import RollStep
from tidelog_operator.cluster.rolling import RollAction, RollDecision
from tidelog_operator.cluster.scale_step import ScaleStep
from tidelog_operator.cluster.scaling import ScaleAction, ScaleDecision
from tidelog_operator.cluster.status import progress
from tidelog_operator.cluster.volume_step import VolumeStep
from tidelog_operator.conditions import Reason

ROLLS = [
    RollStep(RollDecision(RollAction.NOTHING)),
    RollStep(RollDecision(RollAction.WAIT, 1, "waiting for broker 1 to be ready")),
    RollStep(RollDecision(RollAction.RESTART, 2, "broker 2 runs an old revision")),
    RollStep(RollDecision(RollAction.ELECT_PREFERRED, 2, "broker 2 back in every ISR")),
]
VOLUME_STEPS = [
    VolumeStep(VolumeDecision(VolumeAction.NONE, frozenset({0, 1}))),
    VolumeStep(VolumeDecision(VolumeAction.DRAIN, frozenset({0, 1}), (1,), (0, 1), "draining 1")),
    VolumeStep(VolumeDecision(VolumeAction.WAIT, frozenset({0, 1}), (1,), (0, 1), "2 left")),
    VolumeStep(VolumeDecision(VolumeAction.UNMOUNT, frozenset({0}), (1,))),
    VolumeStep(VolumeDecision(VolumeAction.CLEAR, frozenset({0}), (1,), (0, 1))),
]
SCALE_STEPS = [
    ScaleStep(ScaleDecision(ScaleAction.DONE)),
    ScaleStep(ScaleDecision(ScaleAction.ELECT_LEADERS, reason="electing preferred leaders")),
    ScaleStep(ScaleDecision(ScaleAction.ADD_BROKERS, (2,), "spreading onto brokers 2", True)),
    ScaleStep(ScaleDecision(ScaleAction.WAIT, (2,), "waiting for brokers 2 to register", True)),
    ScaleStep(ScaleDecision(ScaleAction.FINISH, (), "the reassignment has completed", True)),
]
REFUSALS = [
    ScaleStep(ScaleDecision(ScaleAction.REFUSE_SCALE_DOWN, (1,), "topic orders has factor 2")),
    ScaleStep(ScaleDecision(ScaleAction.REFUSE_DRAIN, (1,), "add a broker")),
]
RUNNING = snapshot(HEALTHY_BROKERS)


def draining(volumes: VolumeStep) -> bool:
    decision = volumes.decision
    return decision.action in (VolumeAction.DRAIN, VolumeAction.WAIT) and bool(decision.volumes)


def test_progressing_holds_exactly_while_a_roll_a_drain_or_a_scaling_is_under_way():
    seen = set()
    for roll, volumes, scale in itertools.product(ROLLS, VOLUME_STEPS, SCALE_STEPS):
        under_way = (
            roll.decision.action is not RollAction.NOTHING
            or draining(volumes)
            or scale.decision.progressing
        )
        found = progress(outcome(roll=roll, volumes=volumes, scale=scale), RUNNING, READY)
        assert found.holds == under_way, (roll, volumes, scale, found)
        seen.add(found.reason)
    assert seen == {Reason.ROLLING_RESTART, Reason.DRAINING_VOLUMES, Reason.SCALING, Reason.IDLE}


def test_a_refusal_takes_the_condition_while_a_drain_goes_on():
    for refused, volumes in itertools.product(REFUSALS, VOLUME_STEPS):
        done = outcome(volumes=volumes, scale=refused)
        found = progress(done, RUNNING, READY)
        assert not found.holds, (refused, volumes)
        assert found.reason in (Reason.SCALE_DOWN_REFUSED, Reason.DRAIN_REFUSED)
        assert found.message == refused.decision.reason


def test_an_idle_cluster_is_looked_at_only_on_the_long_interval():
    idle = progress(outcome(), RUNNING, READY)
    assert (idle.holds, idle.reason) == (False, Reason.IDLE)
    assert progress(outcome(roll=ROLLS[1]), RUNNING, READY).holds
    assert progress(outcome(volumes=VOLUME_STEPS[1]), RUNNING, READY).holds
    assert progress(outcome(scale=SCALE_STEPS[2]), RUNNING, READY).holds


def test_a_roll_given_up_is_not_progressing_and_creating_is():
    stuck = RollStep(RollDecision(RollAction.GIVE_UP, 1, "broker 1 did not come back"))
    found = progress(outcome(roll=stuck), RUNNING, READY)
    assert (found.holds, found.reason) == (False, Reason.ROLLING_RESTART_STUCK)
    new = progress(outcome(), snapshot(None), {})
    assert (new.holds, new.reason) == (True, Reason.CREATING)
