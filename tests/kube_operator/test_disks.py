"""decide_volumes: JBOD volumes added and removed on a running Cluster, table-driven."""

from __future__ import annotations

import pytest

from tidelog_operator.cluster.disks import VolumeObservation, decide_volumes, volume_of

BROKERS = frozenset({0, 1, 2})


def seen(desired, mounted, draining=None, replicas_in=None, brokers=BROKERS):
    return VolumeObservation(
        desired=frozenset(desired),
        mounted=frozenset(mounted),
        brokers=brokers,
        draining={b: frozenset(d) for b, d in (draining or {b: () for b in brokers}).items()},
        replicas_in=replicas_in or {},
    )


@pytest.mark.parametrize(
    ("observation", "action", "mount", "volumes", "brokers"),
    [
        # nothing changes
        (seen({0, 1}, {0, 1}), "none", {0, 1}, (), ()),
        # an added volume is mounted at once
        (seen({0, 1, 2}, {0, 1}), "none", {0, 1, 2}, (), ()),
        # a removed one stays mounted while the brokers are told to drain it
        (seen({0}, {0, 1}, {0: (), 1: (1,), 2: ()}), "drain", {0, 1}, (1,), (0, 2)),
        # ... and while its dir still holds replicas
        (
            seen({0}, {0, 1}, {b: (1,) for b in BROKERS}, {0: 9, 1: 3}),
            "wait",
            {0, 1},
            (1,),
            (),
        ),
        # ... and while a broker that may hold some is not live to say
        (seen({0}, {0, 1}, {0: (1,), 1: (1,)}), "wait", {0, 1}, (1,), ()),
        # drained everywhere: unmounted
        (seen({0}, {0, 1}, {b: (1,) for b in BROKERS}, {0: 12}), "none", {0}, (), ()),
        # removed and added in one change: the new one mounts with the old one draining
        (seen({0, 2}, {0, 1}, {b: (1,) for b in BROKERS}, {1: 1}), "wait", {0, 1, 2}, (1,), ()),
        # gone from every pod: the draining entries of its dir are withdrawn, a user's
        # draining of a dir still in use stays
        (
            seen({0, 1}, {0, 1}, {0: (2,), 1: (2, 0), 2: (0,)}),
            "clear",
            {0, 1},
            (2,),
            (0, 1),
        ),
        (seen({0, 1}, {0, 1}, {0: (0,), 1: (), 2: ()}), "none", {0, 1}, (), ()),
    ],
)
def test_decide_volumes(observation, action, mount, volumes, brokers):
    decision = decide_volumes(observation)
    assert (decision.action, decision.mount, decision.volumes, decision.brokers) == (
        action,
        frozenset(mount),
        volumes,
        brokers,
    )
    if action != "none" or mount != observation.mounted:
        assert decision.reason


def test_the_reasons_name_what_is_waited_for():
    assert decide_volumes(seen({0}, {0, 1}, {0: (1,), 1: (1,)})).reason == (
        "brokers [2] must be live to drain data-1"
    )
    held = decide_volumes(seen({0}, {0, 1}, {b: (1,) for b in BROKERS}, {1: 3}))
    assert held.reason == "replicas still to move: 3 in data-1"


@pytest.mark.parametrize(
    ("path", "volume"),
    [("/var/lib/tidelog/data-3", 3), ("/tmp/broker-1/data-12/", 12), ("/data/kafka", None)],
)
def test_a_log_dir_names_its_volume(path, volume):
    assert volume_of(path) == volume
