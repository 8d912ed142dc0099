"""Waiting in purgatory: a change of a watched partition ends the wait, a timeout ends it
otherwise, and no way out leaves a watch behind."""

from __future__ import annotations

import asyncio

import pytest

from tidelog.replication.purgatory import Purgatory

WATCHED = [("t", 0), ("t", 1)]
LONG_S = 30.0


async def _resumed_after(purgatory: Purgatory, change: tuple[str, int]) -> bool:
    """Whether a waiter on WATCHED resumed in the loop's turns right after ``change``."""
    waiter = asyncio.create_task(purgatory.wait(WATCHED, LONG_S))
    await asyncio.sleep(0)  # the waiter watches
    purgatory.notify(change)
    for _ in range(3):
        await asyncio.sleep(0)
    resumed = waiter.done()
    waiter.cancel()
    await asyncio.gather(waiter, return_exceptions=True)
    return resumed


def test_a_change_of_a_watched_partition_ends_the_wait_at_once_others_do_not():
    async def scenario():
        purgatory = Purgatory()
        assert await _resumed_after(purgatory, ("t", 1))
        assert not await _resumed_after(purgatory, ("other", 0))
        assert purgatory.waiting == 0

    asyncio.run(scenario())


def test_the_wait_ends_at_its_timeout_and_forgets_its_watch():
    async def scenario():
        purgatory = Purgatory()
        loop = asyncio.get_running_loop()
        started = loop.time()
        await purgatory.wait(WATCHED, 0.05)
        assert loop.time() - started >= 0.05
        assert purgatory.waiting == 0

    asyncio.run(scenario())


def test_a_cancelled_waiter_is_cancelled_and_forgets_its_watch():
    async def scenario():
        purgatory = Purgatory()
        waiter = asyncio.create_task(purgatory.wait(WATCHED, LONG_S))
        await asyncio.sleep(0)
        assert purgatory.waiting == len(WATCHED)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert purgatory.waiting == 0

    asyncio.run(scenario())
