"""The local-disk step of a Cluster pass (pure): volumes made for the selected nodes
that lack them, a Released volume wiped by a pod on its node then freed, and, with
``replaceLostVolumes``, what a gone node held let go, claims before pods before volumes."""

from __future__ import annotations

from tidelog_operator.builders.storage import NODE_LABEL, local_volumes
from tidelog_operator.cluster.commands import ApplyObjects, CreatePod, DeleteObjects, FreeVolume
from tidelog_operator.cluster.local_step import LocalStorage, local_step
from tidelog_operator.spec import parse_cluster


def spec(replace_lost: bool = False):
    return parse_cluster(
        "events",
        "ns",
        {
            "brokers": {"replicas": 1},
            "storage": {
                "volumes": [{"id": 0, "size": "1Gi"}],
                "local": {
                    "disks": ["/mnt/disks/d0"],
                    "size": "1Gi",
                    "nodeSelector": {"disks": "yes"},
                },
                "replaceLostVolumes": replace_lost,
            },
        },
    )


def storage(volumes=(), nodes=None, claims=(), pods=(), wipes=None) -> LocalStorage:
    return LocalStorage(
        nodes=nodes if nodes is not None else {"w1": {"disks": "yes"}, "cp": {}},
        volumes=tuple(volumes),
        claims=frozenset(claims),
        broker_pods=tuple(pods),
        wipe_pods=wipes or {},
    )


def released(volume: dict, claim: str) -> dict:
    return {
        **volume,
        "spec": {**volume["spec"], "claimRef": {"name": claim, "namespace": "ns"}},
        "status": {"phase": "Released"},
    }


def test_the_selected_nodes_get_their_volumes_once():
    (made,) = local_step(storage(), spec()).commands
    assert isinstance(made, ApplyObjects)
    assert [v["metadata"]["labels"][NODE_LABEL] for v in made.objects] == ["w1"]
    existing = local_volumes(spec(), ["w1"])
    assert local_step(storage(existing), spec()).commands == ()


def test_a_released_volume_is_wiped_then_freed():
    (volume,) = local_volumes(spec(), ["w1"])
    gone = released(volume, "data-0-events-broker-0")
    (wipe,) = local_step(storage([gone]), spec()).commands
    assert isinstance(wipe, CreatePod) and wipe.pod["kind"] == "Pod"
    pod = wipe.pod["metadata"]["name"]
    assert local_step(storage([gone], wipes={pod: "Running"}), spec()).commands == ()
    step = local_step(storage([gone], wipes={pod: "Succeeded"}), spec())
    assert step.commands == (
        FreeVolume(volume["metadata"]["name"]),
        DeleteObjects("v1", "Pod", (pod,), "ns"),
    )
    assert step.recycled == (volume["metadata"]["name"],)


def test_a_gone_node_lets_go_of_claims_then_pods_then_volumes_only_when_allowed():
    (volume,) = local_volumes(spec(), ["w2"])
    bound = {
        **volume,
        "spec": {
            **volume["spec"],
            "claimRef": {"name": "data-0-events-broker-0", "namespace": "ns"},
        },
    }
    pod = {"metadata": {"name": "events-broker-0"}, "spec": {}, "status": {"phase": "Running"}}
    seen = storage([bound], claims=["data-0-events-broker-0"], pods=[pod])
    assert local_step(seen, spec()).commands == (
        ApplyObjects(tuple(local_volumes(spec(), ["w1"]))),
    )
    step = local_step(seen, spec(replace_lost=True))
    deletes = [c for c in step.commands if isinstance(c, DeleteObjects)]
    assert [(c.kind, c.names) for c in deletes] == [
        ("PersistentVolumeClaim", ("data-0-events-broker-0",)),
        ("Pod", ("events-broker-0",)),
        ("PersistentVolume", (volume["metadata"]["name"],)),
    ]
    assert step.lost
