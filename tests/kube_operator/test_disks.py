"""decide_volumes: JBOD volumes added and removed on a running Cluster, table-driven."""

from __future__ import annotations

import pytest

from tidelog_operator.cluster.disks import VolumeAction, VolumeObservation, decide_volumes
from tidelog_operator.cluster.snapshot import volume_of

BROKERS = frozenset({0, 1, 2})


def seen(
    desired,
    statefulset,
    pods=None,
    holding=None,
    draining=None,
    replicas_in=None,
    unmounted=(),
    live=BROKERS,
):
    """Every live broker holds the StatefulSet's volumes and drains nothing, unless said."""
    mounted = frozenset(statefulset if statefulset is not None else pods)
    return VolumeObservation(
        desired=frozenset(desired),
        statefulset=None if statefulset is None else frozenset(statefulset),
        pods=frozenset(pods if pods is not None else statefulset),
        brokers=BROKERS,
        holding={b: frozenset(v) for b, v in (holding or {b: mounted for b in live}).items()},
        draining={b: frozenset(v) for b, v in (draining or {}).items()},
        replicas_in=replicas_in or {},
        unmounted=frozenset(unmounted),
    )


ALL_DRAIN_1 = {b: {1} for b in BROKERS}


@pytest.mark.parametrize(
    ("observation", "action", "mount", "volumes", "brokers"),
    [
        # nothing changes
        (seen({0, 1}, {0, 1}), "none", {0, 1}, (), ()),
        # an added volume is mounted at once
        (seen({0, 1, 2}, {0, 1}), "none", {0, 1, 2}, (), ()),
        # a removed one stays mounted while the brokers are told to drain it
        (seen({0}, {0, 1}, draining={1: {1}}), "drain", {0, 1}, (1,), (0, 2)),
        # ... and while its dir still holds replicas
        (
            seen({0}, {0, 1}, draining=ALL_DRAIN_1, replicas_in={0: 9, 1: 3}),
            "wait",
            {0, 1},
            (1,),
            (),
        ),
        # ... and while a broker that may hold some is not live to say
        (
            seen({0}, {0, 1}, draining=ALL_DRAIN_1, live={0, 1}),
            "wait",
            {0, 1},
            (1,),
            (),
        ),
        # drained everywhere: unmounted
        (seen({0}, {0, 1}, draining=ALL_DRAIN_1, replicas_in={0: 12}), "unmount", {0}, (1,), ()),
        # the StatefulSet being made anew: the pods' volumes stand for it
        (seen({0}, None, pods={0, 1}, draining=ALL_DRAIN_1), "unmount", {0}, (1,), ()),
        # removed and added in one change: the new one mounts with the old one draining
        (
            seen({0, 2}, {0, 1}, draining=ALL_DRAIN_1, replicas_in={1: 1}),
            "wait",
            {0, 1, 2},
            (1,),
            (),
        ),
        # unmounted, the roll under way: a broker restarted without the dir (its entry
        # ignored) is neither drained again nor is the volume mounted again
        (
            seen(
                {0},
                {0},
                pods={0, 1},
                holding={0: {0}, 1: {0, 1}, 2: {0, 1}},
                draining={1: {1}, 2: {1}},
                unmounted={1},
            ),
            "none",
            {0},
            (1,),
            (),
        ),
        # unmounted, the StatefulSet being made anew and a broker down: the pods that
        # still mount the volume do not stand for a template of it, nor is it drained again
        (
            seen({0}, None, pods={0, 1}, draining=ALL_DRAIN_1, unmounted={1}, live={0, 1}),
            "none",
            {0},
            (1,),
            (),
        ),
        # gone from every pod: the draining entries are rewritten without it, done
        (seen({0}, {0}, unmounted={1}), "clear", {0}, (1,), (0, 1, 2)),
    ],
)
def test_decide_volumes(observation, action, mount, volumes, brokers):
    decision = decide_volumes(observation)
    assert (decision.action, decision.mount, decision.volumes, decision.brokers) == (
        VolumeAction(action),
        frozenset(mount),
        volumes,
        brokers,
    )
    if action != "none" or volumes:
        assert decision.reason


def test_the_reasons_name_what_is_waited_for():
    down = decide_volumes(seen({0}, {0, 1}, draining=ALL_DRAIN_1, live={0, 1}))
    assert down.reason == "brokers [2] must be live to drain data-1"
    held = decide_volumes(seen({0}, {0, 1}, draining=ALL_DRAIN_1, replicas_in={1: 3}))
    assert held.reason == "replicas still to move: 3 in data-1"


@pytest.mark.parametrize(
    ("path", "volume"),
    [("/var/lib/tidelog/data-3", 3), ("/tmp/broker-1/data-12/", 12), ("/data/kafka", None)],
)
def test_a_log_dir_names_its_volume(path, volume):
    assert volume_of(path) == volume
