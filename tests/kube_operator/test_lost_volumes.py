"""What the operator lets go when a node is gone with a broker's local disks (pure)."""

from __future__ import annotations

from tidelog_operator.cluster.lost_volumes import lost_volumes

TEMPLATES = ["data-0", "data-1"]


def volume(name: str, node: str, claim: str | None = None, namespace: str = "prod") -> dict:
    spec = {"claimRef": {"name": claim, "namespace": namespace}} if claim else {}
    return {"metadata": {"name": name, "labels": {"tidelog.dev/node": node}}, "spec": spec}


def pod(name: str, phase: str, *claims: str) -> dict:
    volumes = [{"name": c, "persistentVolumeClaim": {"claimName": c}} for c in claims]
    return {"metadata": {"name": name}, "status": {"phase": phase}, "spec": {"volumes": volumes}}


VOLUMES = [
    volume("pv-a-0", "node-a", "data-0-events-broker-0"),
    volume("pv-a-1", "node-a", "data-1-events-broker-0"),
    volume("pv-b-0", "node-b", "data-0-events-broker-1"),
    volume("pv-b-1", "node-b", "data-1-events-broker-1"),
    volume("pv-c-0", "node-c"),
]
CLAIMS = {f"data-{d}-events-broker-{b}" for d in (0, 1) for b in (0, 1)}
BROKER_0 = ("data-0-events-broker-0", "data-1-events-broker-0")
BROKER_1 = ("data-0-events-broker-1", "data-1-events-broker-1")
PODS = [pod("events-broker-0", "Pending", *BROKER_0), pod("events-broker-1", "Running", *BROKER_1)]


def lost(nodes, volumes=VOLUMES, claims=CLAIMS, pods=PODS):
    return lost_volumes(
        nodes=nodes,
        volumes=volumes,
        claims=claims,
        pods=pods,
        namespace="prod",
        templates=TEMPLATES,
    )


def test_nothing_is_lost_while_every_node_is_there():
    assert not lost({"node-a", "node-b", "node-c"})


def test_a_gone_node_takes_its_claims_volumes_and_the_pod_that_waits_for_them():
    found = lost({"node-b", "node-c"})
    assert found.claims == BROKER_0
    assert found.pods == ("events-broker-0",)
    assert found.volumes == ("pv-a-0", "pv-a-1")
    assert "events-broker-0" in found.message()


def test_a_pod_pending_on_a_claim_that_no_longer_exists_is_made_again():
    found = lost({"node-a", "node-b", "node-c"}, claims=CLAIMS - {"data-1-events-broker-0"})
    assert found.pods == ("events-broker-0",) and not found.claims and not found.volumes


def test_claims_of_another_namespace_and_an_empty_node_list_are_left_alone():
    other = [volume("pv-a-0", "node-a", "data-0-events-broker-0", namespace="dev")]
    assert lost({"node-b"}, volumes=other).claims == ()
    assert not lost(set())
