"""The scaler's decisions (pure): data moves before brokers go, after brokers come, never
while another move runs, and never below a topic's replication factor."""

from __future__ import annotations

import datetime
from pathlib import Path

import pytest
import yaml

from tidelog_operator.cluster.balance import election_due, requested, spread, unknown_request
from tidelog_operator.cluster.observe import scaling_status
from tidelog_operator.cluster.scaling import (
    ScaleDecision,
    ScaleObservation,
    brokers_to_run,
    decide_scale,
)
from tidelog_operator.cluster.scaling_moves import ScaleStep
from tidelog_operator.spec import RebalanceSpec

CRD = Path(__file__).resolve().parents[2] / "crds" / "cluster.yaml"

RF3_ON_0_1_2 = {("orders", 0): (0, 1, 2), ("orders", 1): (1, 2, 0)}
RF2_ON_ALL = {("orders", 0): (0, 3), ("orders", 1): (1, 2), ("events", 0): (2, 0)}
RF2_OFF_3 = {("orders", 0): (0, 1), ("orders", 1): (1, 2)}


def seen(**fields) -> ScaleObservation:
    base = dict(
        desired=3,
        running=3,
        spread=3,
        live=frozenset({0, 1, 2}),
        assignment=RF3_ON_0_1_2,
        reassigning=0,
        ours_in_progress=False,
    )
    return ScaleObservation(**(base | fields))


@pytest.mark.parametrize(
    ("observation", "action", "brokers"),
    [
        pytest.param(seen(), "done", (), id="steady"),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 1, 2})),
            "wait",
            (3,),
            id="scale-up waits for the new broker to register",
        ),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 1, 2, 3})),
            "add-brokers",
            (3,),
            id="scale-up spreads onto the new broker",
        ),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 1, 2, 3}), assignment={}),
            "done",
            (),
            id="scale-up without partitions moves nothing",
        ),
        pytest.param(
            seen(
                desired=3, running=4, spread=4, live=frozenset({0, 1, 2, 3}), assignment=RF2_ON_ALL
            ),
            "remove-brokers",
            (3,),
            id="scale-down drains the leaving broker",
        ),
        pytest.param(
            seen(desired=3, running=4, spread=4, assignment=RF2_OFF_3),
            "shrink",
            (3,),
            id="scale-down shrinks once drained",
        ),
        pytest.param(
            seen(desired=2, running=3, assignment=RF3_ON_0_1_2),
            "refuse",
            (2,),
            id="scale-down below a replication factor is refused",
        ),
        pytest.param(
            seen(desired=2, running=4, spread=4, assignment=RF2_ON_ALL),
            "remove-brokers",
            (2, 3),
            id="two leave at once",
        ),
        pytest.param(
            seen(desired=3, running=4, spread=4, assignment=RF2_ON_ALL, reassigning=1),
            "wait",
            (),
            id="no scale-down while another move runs",
        ),
        pytest.param(
            seen(reassigning=2, ours_in_progress=True), "wait", (), id="our move in progress"
        ),
        pytest.param(seen(ours_in_progress=True), "finish", (), id="our move has completed"),
        pytest.param(
            seen(requested="replicas"), "rebalance-replicas", (), id="a replica rebalance asked"
        ),
        pytest.param(seen(requested="leaders"), "elect-leaders", (), id="an election asked"),
        pytest.param(seen(election_due=True), "elect-leaders", (), id="an election due"),
        pytest.param(
            seen(election_due=True, reassigning=3), "wait", (), id="no election during a move"
        ),
        pytest.param(
            seen(requested="replicas", desired=4, running=4, live=frozenset({0, 1, 2, 3})),
            "add-brokers",
            (3,),
            id="scaling before balancing",
        ),
        pytest.param(
            seen(lost={("orders", 0): frozenset({1}), ("orders", 1): frozenset({1, 2})}),
            "replace-lost-replicas",
            (1, 2),
            id="replicas on failed log dirs are copied elsewhere",
        ),
        pytest.param(
            seen(desired=2, lost={("orders", 0): frozenset({1})}),
            "replace-lost-replicas",
            (1,),
            id="lost replicas before a scale-down, even a refused one",
        ),
        pytest.param(
            seen(lost={("orders", 0): frozenset({1})}, reassigning=1),
            "wait",
            (),
            id="lost replicas wait for a move in progress",
        ),
        pytest.param(
            seen(stranded={("orders", 0): frozenset({1})}),
            "refuse-drain",
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
            "add-brokers",
            (3,),
            id="a broker added while lost replicas wait for one",
        ),
        pytest.param(
            seen(stranded={("orders", 0): frozenset({1})}, election_due=True),
            "elect-leaders",
            (),
            id="a refused copy holds no election back",
        ),
        pytest.param(
            seen(desired=4, running=4, live=frozenset({0, 1, 2, 3}), failed_dirs=("broker 1: d",)),
            "wait",
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
            "replace-lost-replicas",
            (1,),
            id="but the lost replicas are copied",
        ),
        pytest.param(
            seen(election_due=True, failed_dirs=("broker 1: d",)),
            "elect-leaders",
            (),
            id="and leaders are elected",
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
    running = ScaleStep(
        ScaleDecision("wait", reason="6 partitions being reassigned", progressing=True),
        {"rebalance": move},
    )
    status = scaling_status({}, running, generation=2, now="2026-11-24T00:00:00Z")
    (progressing,) = status["conditions"]
    assert (progressing["status"], progressing["reason"]) == ("True", "Scaling")
    assert progressing["message"].endswith("4/10 partitions, 400/1000 bytes")

    refused = ScaleStep(ScaleDecision("refuse", (2,), "topic orders has replication factor 3"))
    status = scaling_status(status, refused, generation=3, now="2026-11-24T00:00:10Z")
    (progressing,) = status["conditions"]
    assert (progressing["status"], progressing["reason"]) == ("False", "ScaleDownRefused")

    withdrawn = ScaleStep(ScaleDecision("done"), {"rebalance": None, "spreadBrokers": 3})
    assert "rebalance" not in scaling_status(status, withdrawn, generation=4, now="x")


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
