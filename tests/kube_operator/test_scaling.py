"""The scaler's decisions (pure): data moves before brokers go, after brokers come, never
while another move runs, and never below a topic's replication factor. Which staying
brokers hold no replica is read off the assignment each pass, so a broker that
registers late is filled all the same."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from kube_operator.cluster_values import HEALTHY_BROKERS, SPEC, outcome, snapshot
from tidelog_operator.cluster.balance import election_due, requested, spread, unknown_request
from tidelog_operator.cluster.commands import StartReassignment
from tidelog_operator.cluster.scale_step import ScaleStep, scale_step
from tidelog_operator.cluster.scaling import (
    ScaleAction,
    ScaleDecision,
    ScaleObservation,
    brokers_to_run,
    decide_scale,
)
from tidelog_operator.cluster.snapshot import BrokersView, Partition
from tidelog_operator.cluster.status import cluster_status
from tidelog_operator.spec import RebalanceSpec, parse_cluster

CRD = Path(__file__).resolve().parents[2] / "crds" / "cluster.yaml"

RF3_ON_0_1_2 = {("orders", 0): (0, 1, 2), ("orders", 1): (1, 2, 0)}
RF2_ON_ALL = {("orders", 0): (0, 3), ("orders", 1): (1, 2), ("events", 0): (2, 0)}
RF2_OFF_3 = {("orders", 0): (0, 1), ("orders", 1): (1, 2)}
RF2_ON_0_1 = {("orders", 0): (0, 1), ("orders", 1): (1, 0)}


def seen(**fields) -> ScaleObservation:
    base = dict(
        desired=3,
        running=3,
        live=frozenset({0, 1, 2}),
        assignment=RF3_ON_0_1_2,
        reassigning=0,
        ours_in_progress=False,
    )
    return ScaleObservation(**(base | fields))


@pytest.mark.parametrize(
    ("observation", "action", "brokers"),
    [
        pytest.param(seen(), ScaleAction.DONE, (), id="steady"),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 1, 2})),
            ScaleAction.WAIT,
            (3,),
            id="scale-up waits for the new broker to register",
        ),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 1, 2, 3})),
            ScaleAction.ADD_BROKERS,
            (3,),
            id="scale-up spreads onto the new broker once it registered",
        ),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 1, 2, 3}), assignment={}),
            ScaleAction.DONE,
            (),
            id="scale-up without partitions moves nothing",
        ),
        pytest.param(
            seen(desired=3, running=4, live=frozenset({0, 1, 2, 3}), assignment=RF2_ON_ALL),
            ScaleAction.REMOVE_BROKERS,
            (3,),
            id="scale-down drains the leaving broker",
        ),
        pytest.param(
            seen(desired=3, running=4, assignment=RF2_OFF_3),
            ScaleAction.SHRINK,
            (3,),
            id="scale-down shrinks once drained",
        ),
        pytest.param(
            seen(desired=2, running=3, assignment=RF3_ON_0_1_2),
            ScaleAction.REFUSE_SCALE_DOWN,
            (2,),
            id="scale-down below a replication factor is refused",
        ),
        pytest.param(
            seen(desired=2, running=4, assignment=RF2_ON_ALL),
            ScaleAction.REMOVE_BROKERS,
            (2, 3),
            id="two leave at once",
        ),
        pytest.param(
            seen(desired=3, running=4, assignment=RF2_ON_ALL, reassigning=1),
            ScaleAction.WAIT,
            (),
            id="no scale-down while another move runs",
        ),
        pytest.param(
            seen(reassigning=2, ours_in_progress=True),
            ScaleAction.WAIT,
            (),
            id="our move in progress",
        ),
        pytest.param(
            seen(ours_in_progress=True), ScaleAction.FINISH, (), id="our move has completed"
        ),
        pytest.param(
            seen(requested="replicas"),
            ScaleAction.REBALANCE_REPLICAS,
            (),
            id="a replica rebalance asked",
        ),
        pytest.param(
            seen(requested="leaders"), ScaleAction.ELECT_LEADERS, (), id="an election asked"
        ),
        pytest.param(seen(election_due=True), ScaleAction.ELECT_LEADERS, (), id="an election due"),
        pytest.param(
            seen(election_due=True, reassigning=3),
            ScaleAction.WAIT,
            (),
            id="no election during a move",
        ),
        pytest.param(
            seen(requested="replicas", desired=4, running=4, live=frozenset({0, 1, 2, 3})),
            ScaleAction.ADD_BROKERS,
            (3,),
            id="scaling before balancing",
        ),
        pytest.param(
            seen(lost={("orders", 0): frozenset({1}), ("orders", 1): frozenset({1, 2})}),
            ScaleAction.REPLACE_LOST_REPLICAS,
            (1, 2),
            id="replicas on failed log dirs are copied elsewhere",
        ),
        pytest.param(
            seen(desired=2, lost={("orders", 0): frozenset({1})}),
            ScaleAction.REPLACE_LOST_REPLICAS,
            (1,),
            id="lost replicas before a scale-down, even a refused one",
        ),
        pytest.param(
            seen(lost={("orders", 0): frozenset({1})}, reassigning=1),
            ScaleAction.WAIT,
            (),
            id="lost replicas wait for a move in progress",
        ),
        pytest.param(
            seen(stranded={("orders", 0): frozenset({1})}),
            ScaleAction.REFUSE_DRAIN,
            (1,),
            id="lost replicas with no other broker to go to are refused",
        ),
        pytest.param(
            seen(
                stranded={("orders", 0): frozenset({1})},
                desired=4,
                running=4,
                live=frozenset({0, 1, 2, 3}),
            ),
            ScaleAction.ADD_BROKERS,
            (3,),
            id="a broker added while lost replicas wait for one",
        ),
        pytest.param(
            seen(stranded={("orders", 0): frozenset({1})}, election_due=True),
            ScaleAction.ELECT_LEADERS,
            (),
            id="a refused copy holds no election back",
        ),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 1, 2, 3}), failed_dirs=("broker 1: d",)),
            ScaleAction.WAIT,
            (3,),
            id="no replica moves onto a broker with a failed dir",
        ),
        pytest.param(
            seen(
                lost={("orders", 0): frozenset({1})},
                desired=4,
                running=4,
                live=frozenset({0, 1, 2, 3}),
                failed_dirs=("broker 1: d",),
            ),
            ScaleAction.REPLACE_LOST_REPLICAS,
            (1,),
            id="but the lost replicas are copied",
        ),
        pytest.param(
            seen(election_due=True, failed_dirs=("broker 1: d",)),
            ScaleAction.ELECT_LEADERS,
            (),
            id="and leaders are elected",
        ),
        pytest.param(
            seen(assignment=RF2_ON_0_1, live=frozenset({0, 1})),
            ScaleAction.WAIT,
            (2,),
            id="a staying broker not yet registered and empty is waited for",
        ),
        pytest.param(
            seen(assignment=RF2_ON_0_1),
            ScaleAction.ADD_BROKERS,
            (2,),
            id="and filled once registered, however long after its start",
        ),
        pytest.param(
            seen(live=frozenset({0, 1})),
            ScaleAction.DONE,
            (),
            id="a staying broker not registered but holding replicas is no scaling",
        ),
        pytest.param(
            seen(desired=3, running=4, live=frozenset({0, 1, 2, 3}), assignment=RF2_OFF_3),
            ScaleAction.SHRINK,
            (3,),
            id="a leaving broker that holds nothing is not filled",
        ),
        pytest.param(
            seen(requested="replicas", live=frozenset({0, 2})),
            ScaleAction.WAIT,
            (),
            id="a rebalance waits for a staying broker that is down (its plan would empty it)",
        ),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 2, 3})),
            ScaleAction.WAIT,
            (3,),
            id="so does a spread onto a new broker",
        ),
    ],
)
def test_the_scaler_decides(observation, action, brokers):
    decision = decide_scale(observation)
    assert (decision.action, decision.brokers) == (action, brokers), decision.reason


def test_a_refusal_names_the_topic_and_its_factor():
    decision = decide_scale(seen(desired=2, assignment=RF3_ON_0_1_2 | {("logs", 0): (0, 1)}))
    assert "orders has replication factor 3" in decision.reason


def test_the_statefulset_never_shrinks_before_the_scaler_says_so():
    assert brokers_to_run(3, None) == 3
    assert brokers_to_run(5, 3) == 5
    assert brokers_to_run(3, 5) == 5


def test_the_status_shows_progress_and_refusal():
    move = {
        "operation": "AddBrokers",
        "state": "Running",
        "partitions": 10,
        "partitionsDone": 4,
        "bytes": 1000,
        "bytesDone": 400,
    }
    seen = snapshot(HEALTHY_BROKERS)
    running = ScaleStep(
        ScaleDecision(ScaleAction.WAIT, reason="6 partitions being reassigned", progressing=True),
        status={"rebalance": move},
    )
    status = cluster_status(
        {}, seen, SPEC, outcome(scale=running), generation=2, now="2026-11-24T00:00:00Z"
    )
    progressing = condition(status, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("True", "Scaling")
    assert progressing["message"].endswith("4/10 partitions, 400/1000 bytes")

    refused = ScaleStep(
        ScaleDecision(ScaleAction.REFUSE_SCALE_DOWN, (2,), "topic orders has replication factor 3")
    )
    status = cluster_status(
        status, seen, SPEC, outcome(scale=refused), generation=3, now="2026-11-24T00:00:10Z"
    )
    progressing = condition(status, "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("False", "ScaleDownRefused")

    withdrawn = ScaleStep(ScaleDecision(ScaleAction.DONE), status={"rebalance": None})
    status = cluster_status(status, seen, SPEC, outcome(scale=withdrawn), generation=4, now="x")
    assert "rebalance" not in status


def condition(status: dict, type_: str) -> dict:
    (found,) = [c for c in status["conditions"] if c["type"] == type_]
    return found


NOW = datetime.datetime(2026, 12, 7, 12, 0, tzinfo=datetime.UTC)


def brokers_view(live, assignment) -> BrokersView:
    """The ``live`` brokers' answer: ``assignment``, every replica in sync, no log dirs."""
    partitions = tuple(
        Partition(topic, index, tuple(replicas), tuple(replicas), replicas[0], (), 1)
        for (topic, index), replicas in sorted(assignment.items())
    )
    return BrokersView(dict.fromkeys(live), 0, partitions, {}, {})


def test_a_fourth_broker_registering_after_the_statefulset_grew_gets_replicas():
    """The issue's report: a new 3-broker Cluster scaled to 4, and no replica ever moved
    to broker 4. The StatefulSet had 4 replicas before broker 3 registered; a status
    that says the data is spread over 4 already (the ``spreadBrokers`` of an operator
    before) changes nothing: broker 3 holds no replica, so it is waited for, then
    filled."""
    four = parse_cluster("events", "ns", {"brokers": {"replicas": 4}})
    status = {"spreadBrokers": 4}
    early = scale_step(
        brokers_view({0, 1, 2}, RF3_ON_0_1_2), four, status, running=4, requested=None, now=NOW
    )
    assert (early.decision.action, early.decision.brokers) == (ScaleAction.WAIT, (3,))
    assert early.decision.progressing and not early.commands
    late = scale_step(
        brokers_view({0, 1, 2, 3}, RF3_ON_0_1_2), four, status, running=4, requested=None, now=NOW
    )
    assert (late.decision.action, late.decision.brokers) == (ScaleAction.ADD_BROKERS, (3,))
    (start,) = late.commands
    assert isinstance(start, StartReassignment)
    assert any(3 in replicas for replicas in start.moves.values()), start.moves
    record = late.status["rebalance"]
    assert (record["operation"], record["brokers"], record["state"]) == (
        "AddBrokers",
        [3],
        "Running",
    )


def test_the_default_throttle_is_the_crds():
    schema = yaml.safe_load(CRD.read_text())["spec"]["versions"][0]["schema"]
    rebalance = schema["openAPIV3Schema"]["properties"]["spec"]["properties"]["rebalance"]
    default = rebalance["properties"]["throttleBytesPerSecond"]["default"]
    assert default == RebalanceSpec().throttle_bytes_per_second


def test_balancing_is_asked_by_annotation_or_due_by_schedule():
    assert requested({"tidelog.dev/rebalance": "leaders"}) == "leaders"
    assert requested({"tidelog.dev/rebalance": "everything"}) is None
    assert requested(None) is None
    assert unknown_request({"tidelog.dev/rebalance": "everything"}) == "everything"
    assert unknown_request({"tidelog.dev/rebalance": "replicas"}) is None
    now = datetime.datetime(2026, 11, 24, 12, 0, tzinfo=datetime.UTC)
    assert not election_due(None, 0, now)
    assert election_due(None, 300, now)
    assert not election_due("2026-11-24T11:56:00Z", 300, now)
    assert election_due("2026-11-24T11:55:00Z", 300, now)
    assert spread([0, 0, 1], [0, 1, 2]) == 2


def test_a_move_waiting_for_a_broker_says_which():
    waiting = decide_scale(seen(requested="replicas", live=frozenset({0, 2})))
    assert waiting.progressing
    assert waiting.reason == (
        "balancing replicas, as asked once brokers 1 are back: a plan made without them "
        "would move their replicas away"
    )
