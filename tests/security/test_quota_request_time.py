"""The handler time ``request_percentage`` measures: the time a handler's steps run on
the event loop, not the time it waits between them; a cancellation reaches the handler."""

import asyncio
import time

import pytest

from tidelog.server.request_quotas import Timed


async def busy(seconds: float) -> None:
    until = time.perf_counter() + seconds
    while time.perf_counter() < until:
        pass


def test_only_the_steps_are_timed_not_the_waits():
    async def scenario():
        released, waiting = asyncio.Event(), asyncio.Event()
        steps: list[float] = []

        async def handler():
            started = time.perf_counter()
            await busy(0.02)
            steps.append(time.perf_counter() - started)
            waiting.set()
            await released.wait()
            started = time.perf_counter()
            await busy(0.01)
            steps.append(time.perf_counter() - started)
            return "answer"

        timed = Timed(handler())
        task = asyncio.ensure_future(timed)
        await waiting.wait()  # the first step ran; the handler waits
        waited_from = time.perf_counter()
        while time.perf_counter() - waited_from < 0.2:
            await asyncio.sleep(0.01)
        released.set()
        assert await task == "answer"
        return timed.seconds, sum(steps)

    seconds, stepped = asyncio.run(scenario())
    # the 0.2 s the handler waited are not in its time
    assert stepped <= seconds < 0.2


def test_a_cancellation_is_thrown_into_the_handler():
    async def scenario():
        cancelled = []
        waiting = asyncio.Event()

        async def handler():
            try:
                waiting.set()
                await asyncio.Event().wait()
            except asyncio.CancelledError:
                cancelled.append(True)
                raise

        task = asyncio.ensure_future(Timed(handler()))
        await waiting.wait()
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return cancelled

    assert asyncio.run(scenario()) == [True]
