"""JBOD volumes added to or removed from a running Cluster: observations in, one action
out, pure (the shape of ``rolling.py``).

A volume is one claim template of the brokers' StatefulSet (claim ``data-<id>``, log dir
``.../data-<id>``) and one entry of every broker's ``log.dirs``. Claim templates cannot
change in place: the StatefulSet is deleted orphaning its pods and made anew, and the
roller then restarts the brokers onto the new pod template, one at a time, as for a
config change.

* **Added** (in the spec, not in the StatefulSet): mounted at once. A restarted broker
  has the new, empty dir among its ``log.dirs``, and its new partitions go there first
  (it has the fewest).
* **Removed** (in the StatefulSet, not in the spec): the volume stays while every broker
  that has its dir drains it (``drain``: ``log.dirs.draining``, the dir takes no new
  partition and the broker moves its replicas to its other dirs, seed 000). Once no
  broker holds a replica there (every broker live, so that none is left out), the
  StatefulSet loses it (``unmount``); the roll then restarts the brokers without it.
* Once no pod mounts it any more, the brokers' draining entries are rewritten without
  its dir (``clear``): a restarted broker ignores an entry of a dir it no longer has,
  but the entry would stay in ZooKeeper.

While the StatefulSet is being made anew, the pods' volumes stand for its templates, but
for those already unmounted (the StatefulSet is made anew without them: a broker down
meanwhile does not bring them back).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["VolumeAction", "VolumeDecision", "VolumeObservation", "decide_volumes"]


class VolumeAction(enum.Enum):
    NONE = "none"
    DRAIN = "drain"
    WAIT = "wait"
    UNMOUNT = "unmount"
    CLEAR = "clear"


@dataclass(frozen=True)
class VolumeObservation:
    desired: frozenset[int]  # the spec's volume ids
    statefulset: frozenset[int] | None  # its claim templates (None: being made anew)
    pods: frozenset[int]  # the volumes some broker pod mounts
    brokers: frozenset[int]  # the ids the StatefulSet runs
    # each live broker: the volumes among its log dirs, and those it drains
    holding: Mapping[int, frozenset[int]]
    draining: Mapping[int, frozenset[int]]
    replicas_in: Mapping[int, int]  # replicas held per volume, over the live brokers
    unmounted: frozenset[int] = frozenset()  # removed earlier, the roll under way


@dataclass(frozen=True)
class VolumeDecision:
    """``mount``: the volume ids the StatefulSet gets. ``action``: ``none`` (nothing to
    do but mount), ``drain`` (set the dirs of ``volumes`` draining on ``brokers``),
    ``wait`` (replicas are leaving the dirs of removed ``volumes``), ``unmount`` (the
    StatefulSet loses ``volumes``), ``clear`` (the draining entries of ``brokers`` lose
    the dirs of ``volumes``: the removal is done)."""

    action: VolumeAction
    mount: frozenset[int]
    volumes: tuple[int, ...] = ()
    brokers: tuple[int, ...] = ()
    reason: str = ""


def _dirs(volumes) -> str:
    return ", ".join(f"data-{v}" for v in volumes)


def decide_volumes(seen: VolumeObservation) -> VolumeDecision:
    mounted = seen.statefulset if seen.statefulset is not None else seen.pods - seen.unmounted
    removed = tuple(sorted(mounted - seen.desired))
    if removed:
        keep = seen.desired | mounted
        down = sorted(seen.brokers - set(seen.holding))
        if down:
            reason = f"brokers {down} must be live to drain {_dirs(removed)}"
            return VolumeDecision(VolumeAction.WAIT, keep, removed, reason=reason)
        undrained = tuple(
            b
            for b, held in sorted(seen.holding.items())
            if (held & set(removed)) - seen.draining.get(b, frozenset())
        )
        if undrained:
            reason = f"draining {_dirs(removed)} on brokers {list(undrained)} before removal"
            return VolumeDecision(VolumeAction.DRAIN, keep, removed, undrained, reason)
        left = {v: seen.replicas_in.get(v, 0) for v in removed if seen.replicas_in.get(v, 0)}
        if left:
            held = ", ".join(f"{n} in data-{v}" for v, n in left.items())
            return VolumeDecision(
                VolumeAction.WAIT, keep, removed, reason=f"replicas still to move: {held}"
            )
        reason = f"{_dirs(removed)} empty on every broker: the brokers restart without it"
        return VolumeDecision(VolumeAction.UNMOUNT, seen.desired, removed, reason=reason)
    leaving = tuple(sorted(seen.pods - seen.desired))
    if leaving:
        reason = f"the roll restarts the brokers without {_dirs(leaving)}"
        return VolumeDecision(VolumeAction.NONE, seen.desired, leaving, reason=reason)
    if seen.unmounted:
        volumes = tuple(sorted(seen.unmounted))
        reason = f"{_dirs(volumes)} gone from every broker"
        return VolumeDecision(
            VolumeAction.CLEAR, seen.desired, volumes, tuple(sorted(seen.holding)), reason
        )
    added = sorted(seen.desired - mounted)
    reason = f"mounting {_dirs(added)}" if added else ""
    return VolumeDecision(VolumeAction.NONE, seen.desired, reason=reason)
