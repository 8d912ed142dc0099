"""The Cluster pass's parts of a CA's renewal (pure): an event when a renewal starts,
moves on a step or ends, and none while it waits; each CA's record in
``status.certificates`` beside the other's; a spec whose maintenance window is not a
cron expression said in ConfigValid, the rest of the status left as it was."""

from __future__ import annotations

import datetime

from kube_operator.cluster_values import SPEC, outcome, snapshot
from tidelog_operator.cluster.ca_renewal import (
    CaRecord,
    Renewal,
    RenewalAction,
    RenewalPhase,
    RenewalStep,
    RenewalTrigger,
)
from tidelog_operator.cluster.certificate_commands import CaKind
from tidelog_operator.cluster.passes import renewal_events
from tidelog_operator.cluster.status import cluster_status, invalid_spec_status
from tidelog_operator.conditions import Reason

NOW = datetime.datetime(2026, 12, 7, tzinfo=datetime.UTC)
ENDS = NOW + datetime.timedelta(days=300)


def record(phase: RenewalPhase | None) -> CaRecord:
    renewal = None if phase is None else Renewal(2, phase, False, RenewalTrigger.FORCE_RENEW, NOW)
    return CaRecord(1, ENDS, renewal)


def step(phase: RenewalPhase | None, reason: str) -> RenewalStep:
    return RenewalStep(RenewalAction.NOTHING, (), record(phase), False, reason)


def events(before: RenewalPhase | None, after: RenewalPhase | None) -> list[tuple[str, str]]:
    recorded = {"clusterCa": record(before).as_status()}
    steps = {CaKind.CLUSTER: step(after, "why"), CaKind.CLIENTS: step(None, "quiet")}
    return [(e.reason, e.message) for e in renewal_events(steps, recorded)]


def test_an_event_when_a_renewal_starts_moves_on_or_ends_and_none_while_it_waits():
    trust, reissue, drop = RenewalPhase.TRUST, RenewalPhase.REISSUE, RenewalPhase.DROP
    said = [(Reason.CA_RENEWAL, "why")]
    assert events(None, trust) == said
    assert events(trust, reissue) == said
    assert events(reissue, drop) == said
    assert events(drop, None) == said
    assert events(trust, trust) == events(None, None) == []
    # a CA not made yet has no record: nothing to say
    nothing = RenewalStep(RenewalAction.NOTHING, (), None, False, "not made")
    assert renewal_events({CaKind.CLIENTS: nothing}, {}) == []


def test_each_cas_record_goes_under_status_certificates():
    clusters = {"clusterCa": record(RenewalPhase.TRUST).as_status()}
    done = outcome()
    with_records = type(done)(**{**vars(done), "certificates": clusters})
    status = cluster_status(
        {"certificates": {"clientsCa": {"generation": 0, "notAfter": "2027-01-01T00:00:00Z"}}},
        snapshot(None),
        SPEC,
        with_records,
        generation=1,
        now="t",
    )
    assert status["certificates"]["clusterCa"]["renewal"]["step"] == "Trust"
    assert status["certificates"]["clientsCa"]["generation"] == 0
    assert CaRecord.from_status(status["certificates"]["clusterCa"]) == record(RenewalPhase.TRUST)


def test_a_spec_that_cannot_be_read_is_said_in_config_valid_and_nothing_else_changes():
    current = {
        "readyBrokers": 3,
        "conditions": [
            {"type": "Ready", "status": "True", "reason": "AllBrokersReady", "message": "3"}
        ],
    }
    message = "spec.certificates.maintenanceWindows[0]: minute 61 is out of range"
    status = invalid_spec_status(current, message, generation=4, now="t")
    assert status["readyBrokers"] == 3 and status["conditions"][0] == current["conditions"][0]
    (valid,) = [c for c in status["conditions"] if c["type"] == "ConfigValid"]
    assert (valid["status"], valid["reason"], valid["message"]) == (
        "False",
        Reason.INVALID_CONFIG,
        message,
    )
    assert valid["observedGeneration"] == 4
