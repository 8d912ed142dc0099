"""Partition leader election: who leads a partition, and with which ISR, once the set of
live brokers changed (seed 000, 003).

The leader is the first replica of the assignment that is alive and in the ISR.
Brokers that are gone leave the ISR, except that the ISR never empties: with no member
alive it stays as it was, so whichever member comes back first can lead without losing
committed records. Only ``unclean.leader.election.enable`` lets a live replica outside
the ISR lead (with an ISR of itself); without an eligible replica the partition is
offline (leader -1).

A replica that a broker should hold but does not (its disks were replaced, its log
directory failed, it crashed before creating the log) holds none of the records its ISR
membership vouches for: the broker takes it out of the ISR, and out of the leadership,
before it registers (:func:`without_lost_replica`). Where it was the last member, the ISR
empties and the controller recovers the partition from the live replica with the most
recent log (:func:`recovery_leader`; KIP-966's unclean recovery): since every committed
record was on every ISR member, the replica whose log reaches the latest leader epoch,
then the furthest offset, holds every committed record any surviving replica holds.

Two elections move a leader that is still alive: controlled shutdown (the first live
replica of the assignment in the ISR other than the brokers shutting down, which leave
the ISR) and preferred election (the first replica of the assignment, when it is live
and in the ISR).
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

__all__ = [
    "NO_LEADER",
    "controlled_shutdown_leadership",
    "next_leadership",
    "preferred_leadership",
    "recovery_leader",
    "without_lost_replica",
]

NO_LEADER = -1


def next_leadership(
    replicas: Sequence[int],
    leader: int,
    isr: Sequence[int],
    live: Collection[int],
    *,
    unclean_allowed: bool,
) -> tuple[int, list[int]]:
    """The (leader, ISR) of a partition given the brokers alive now."""
    live_isr = [b for b in isr if b in live]
    if leader != NO_LEADER and leader in live:
        return leader, live_isr  # only followers left
    in_sync = [b for b in replicas if b in live_isr]
    if in_sync:
        return in_sync[0], live_isr
    if unclean_allowed:
        out_of_sync = [b for b in replicas if b in live]
        if out_of_sync:
            return out_of_sync[0], [out_of_sync[0]]
    return NO_LEADER, live_isr or list(isr)


def controlled_shutdown_leadership(
    replicas: Sequence[int],
    leader: int,
    isr: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> tuple[int, list[int]] | None:
    """The (leader, ISR) once the brokers ``shutting_down`` leave the partition, or None
    when it leads and no other live in-sync replica can take over (it stays as it is)."""
    remaining_isr = [b for b in isr if b not in shutting_down]
    if leader not in shutting_down:
        return leader, remaining_isr
    eligible = [b for b in replicas if b in live and b in remaining_isr]
    if not eligible:
        return None
    return eligible[0], remaining_isr


def preferred_leadership(
    replicas: Sequence[int], isr: Sequence[int], live: Collection[int]
) -> int | None:
    """The preferred replica (the first of the assignment) when it may lead: live and in
    the ISR; else None."""
    preferred = replicas[0]
    return preferred if preferred in live and preferred in isr else None


def without_lost_replica(leader: int, isr: Sequence[int], broker: int) -> tuple[int, list[int]]:
    """The (leader, ISR) once ``broker`` lost its replica: it leaves the ISR and, where it
    led, the leadership (no leader until the controller elects one). The ISR may empty."""
    return (NO_LEADER if leader == broker else leader), [b for b in isr if b != broker]


def recovery_leader(replicas: Sequence[int], log_ends: Mapping[int, tuple[int, int]]) -> int | None:
    """The replica to lead a partition whose ISR emptied, given each replica's (latest
    leader epoch, log end offset): the most recent log, the first in the assignment among
    equals; None unless every replica answered (one not heard from may hold more)."""
    if not replicas or any(b not in log_ends for b in replicas):
        return None
    return max(replicas, key=lambda b: log_ends[b])
