"""Requests waiting for something to happen to a partition ("purgatory", seed 000).

A long-poll Fetch waits until enough bytes arrived or its ``max.wait.ms`` passed; later
an acks=all Produce waits until the ISR has its batch. Waiters register futures per
partition; an append (or a high-watermark move) wakes every waiter of that partition,
which then re-checks its own condition.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

__all__ = ["Purgatory"]

TopicPartition = tuple[str, int]


class Purgatory:
    def __init__(self):
        self._waiters: dict[TopicPartition, set[asyncio.Future]] = {}
        self.woken = 0  # waiters :meth:`notify` has woken so far

    async def wait(self, partitions: Iterable[TopicPartition], timeout: float) -> None:
        """Until the next change of any of ``partitions`` (returns early then), at most
        ``timeout`` seconds. Watches before it first yields: a change after the caller's
        last check, without an await between, is not missed.

        The caller awaits the future itself, with a timer that completes it: it resumes
        in the loop's next turn after :meth:`notify`, where ``asyncio.wait`` would take
        two (its own waiter future first), on every long-poll Fetch and acks=all answer.
        No timeout scope: handlers call this in their first step, which runs outside a
        task (:mod:`tidelog.server.network`)."""
        wake = self._watch(partitions)
        timer = asyncio.get_running_loop().call_later(timeout, _settle, wake)
        try:
            await wake
        finally:
            timer.cancel()

    def _watch(self, partitions: Iterable[TopicPartition]) -> asyncio.Future:
        """A future completed at the next change of any of ``partitions``."""
        future = asyncio.get_running_loop().create_future()
        keys = list(partitions)
        for key in keys:
            self._waiters.setdefault(key, set()).add(future)

        def forget(_: asyncio.Future) -> None:
            for key in keys:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(future)
                    if not waiters:
                        del self._waiters[key]

        future.add_done_callback(forget)
        return future

    def notify(self, partition: TopicPartition) -> None:
        for future in list(self._waiters.get(partition, ())):
            if not future.done():
                future.set_result(None)
                self.woken += 1

    @property
    def waiting(self) -> int:
        return sum(len(w) for w in self._waiters.values())


def _settle(future: asyncio.Future) -> None:
    """The wait of ``future`` is over (its timeout): complete it, watch forgotten."""
    if not future.done():
        future.set_result(None)
