"""The first fetch a leader awaits from each follower in a new leader epoch.

A broker that takes the lead of a partition (or adds a replica to it) learns nothing of
the followers until each fetches the partition in the new epoch, and until then the high
watermark, and every acks=all write, waits for those in the ISR. A follower's LeaderAndIsr
reaches it about when the leader's reaches the leader, but its fetcher for this broker
may already be waiting here in a long poll of its other, idle partitions, begun before:
that poll would end only after ``replica.fetch.wait.max.ms`` (500 ms), and only then
would the follower ask for the new partition (S11 traced 119-375 ms at the end of its
unthrottled move, where the leader moved).

So while a follower owes such a first fetch, the leader wakes its waiting fetch and lets
its fetches wait at most :data:`OWED_POLL_S` for data, until it fetches the partition or
:data:`OWED_FOR_S` pass (a follower that never comes, such as one whose own LeaderAndIsr
failed, costs short polls for that long, never a busy loop).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

__all__ = ["OWED_FOR_S", "OWED_POLL_S", "FirstFetches", "wake_key"]

TopicPartition = tuple[str, int]

OWED_POLL_S = 0.01  # the longest a fetch of a follower that owes a first fetch waits
OWED_FOR_S = 1.0  # how long a leader awaits a follower's first fetch of an epoch


def wake_key(replica: int) -> TopicPartition:
    """The key under which a follower's waiting fetch also watches the ``appended``
    purgatory: no topic has an empty name, so it is no partition's key."""
    return ("", replica)


class FirstFetches:
    """Per follower, the partitions whose first fetch in this broker's current leader
    epoch it owes, each with the monotonic time after which it is no longer awaited."""

    def __init__(self, clock: Callable[[], float] = time.monotonic):
        self._owed: dict[int, dict[TopicPartition, float]] = {}
        self._clock = clock

    def expect(self, key: TopicPartition, replicas: Iterable[int]) -> None:
        """This broker leads ``key`` in a new epoch and has not heard from ``replicas``."""
        until = self._clock() + OWED_FOR_S
        for replica in replicas:
            self._owed.setdefault(replica, {})[key] = until

    def fetched(self, replica: int, key: TopicPartition) -> None:
        """``replica`` fetched ``key`` in the current epoch."""
        owed = self._owed.get(replica)
        if owed and owed.pop(key, None) is not None and not owed:
            del self._owed[replica]

    def owes(self, replica: int) -> bool:
        """Whether ``replica`` still owes a first fetch (forgetting those no longer
        awaited); one dictionary lookup for a follower that owes none."""
        owed = self._owed.get(replica)
        if not owed:
            return False
        now = self._clock()
        for key in [k for k, until in owed.items() if until <= now]:
            del owed[key]
        if not owed:
            del self._owed[replica]
        return bool(owed)
