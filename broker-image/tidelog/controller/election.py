"""Partition leader election: who leads a partition, and with which ISR, once the set of
live brokers changed (seed 000, 003).

The leader is the first replica of the assignment that is alive and in the ISR.
Brokers that are gone leave the ISR, except that the ISR never empties: with no member
alive it stays as it was, so whichever member comes back first can lead without losing
committed records. Only ``unclean.leader.election.enable`` lets a live replica outside
the ISR lead (with an ISR of itself); without an eligible replica the partition is
offline (leader -1).
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

__all__ = ["NO_LEADER", "next_leadership"]

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
