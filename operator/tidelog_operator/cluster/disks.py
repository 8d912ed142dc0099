"""JBOD volumes added to or removed from a running Cluster: observations in, one action
out, pure (the shape of ``rolling.py``).

A volume is one claim template of the brokers' StatefulSet (claim ``data-<id>``, log dir
``/var/lib/tidelog/data-<id>``) and one entry of every broker's ``log.dirs``. Claim
templates cannot change in place: the StatefulSet is deleted orphaning its pods and
made anew, and the roller then restarts the brokers onto the new pod template, one at a
time, as for a config change.

* **Added** (in the spec, not mounted): mounted at once. A restarted broker has the new,
  empty dir among its ``log.dirs``, and its new partitions go there first (fewest
  partitions).
* **Removed** (mounted, not in the spec): the volume stays mounted while every broker
  drains its dir (``log.dirs.draining``: the dir takes no new partition and the broker
  moves its replicas to its other dirs, seed 000). Once no broker holds a replica there
  (every broker live, so that none is left out), it is unmounted; the roll restarts the
  brokers without it.
* Once no pod mounts a removed volume any more, the brokers' draining entries of its dir
  are withdrawn (``clear``).

A volume is mounted when the StatefulSet's claim templates or any broker pod name it
(an orphaned pod keeps its volumes until the roll restarts it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["VolumeDecision", "VolumeObservation", "decide_volumes", "volume_of"]

_LOG_DIR = re.compile(r".*/data-(\d+)/?")


def volume_of(log_dir: str) -> int | None:
    """The volume whose log dir this is (``.../data-<id>``), None for another dir."""
    match = _LOG_DIR.fullmatch(log_dir)
    return int(match.group(1)) if match else None


@dataclass(frozen=True)
class VolumeObservation:
    desired: frozenset[int]  # the spec's volume ids
    mounted: frozenset[int]  # the ids the StatefulSet or a broker pod mounts
    brokers: frozenset[int]  # the ids the StatefulSet runs
    # each live broker's draining volumes (log.dirs.draining); replicas held per volume
    draining: Mapping[int, frozenset[int]]
    replicas_in: Mapping[int, int]


@dataclass(frozen=True)
class VolumeDecision:
    """``mount``: the volume ids the StatefulSet gets. ``action``: ``none`` (nothing to
    do but mount), ``drain`` (set the dirs of ``volumes`` draining on ``brokers``),
    ``wait`` (replicas are leaving the dirs of removed ``volumes``), ``clear`` (withdraw
    the dirs of ``volumes`` from the draining entries of ``brokers``)."""

    action: str
    mount: frozenset[int]
    volumes: tuple[int, ...] = ()
    brokers: tuple[int, ...] = ()
    reason: str = ""


def _dirs(volumes) -> str:
    return ", ".join(f"data-{v}" for v in volumes)


def decide_volumes(seen: VolumeObservation) -> VolumeDecision:
    removed = tuple(sorted(seen.mounted - seen.desired))
    if removed:
        keep = seen.desired | seen.mounted
        down = sorted(seen.brokers - set(seen.draining))
        if down:
            reason = f"brokers {down} must be live to drain {_dirs(removed)}"
            return VolumeDecision("wait", keep, removed, reason=reason)
        undrained = tuple(b for b, v in sorted(seen.draining.items()) if not v.issuperset(removed))
        if undrained:
            reason = f"draining {_dirs(removed)} on brokers {list(undrained)} before removal"
            return VolumeDecision("drain", keep, removed, undrained, reason)
        left = {v: seen.replicas_in.get(v, 0) for v in removed if seen.replicas_in.get(v, 0)}
        if left:
            held = ", ".join(f"{n} in data-{v}" for v, n in left.items())
            return VolumeDecision("wait", keep, removed, reason=f"replicas still to move: {held}")
        return VolumeDecision(
            "none", seen.desired, reason=f"{_dirs(removed)} empty on every broker: unmounted"
        )
    stale = tuple(sorted({v for vs in seen.draining.values() for v in vs} - seen.desired))
    holders = tuple(b for b, v in sorted(seen.draining.items()) if v & set(stale))
    if holders:
        reason = f"{_dirs(stale)} removed: withdrawn from the draining dirs"
        return VolumeDecision("clear", seen.desired, stale, holders, reason)
    added = sorted(seen.desired - seen.mounted)
    reason = f"mounting {_dirs(added)}" if added else ""
    return VolumeDecision("none", seen.desired, reason=reason)
