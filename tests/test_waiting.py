"""The suite's wait helper: it returns what the condition found, and a timeout fails
naming what was awaited and what was last seen, never a silent False."""

from __future__ import annotations

import asyncio
import itertools

import pytest

from waiting import WaitTimeout, wait_until, wait_until_async


def test_returns_the_conditions_first_true_value() -> None:
    answers = iter([None, [], {"leader": 2}])
    assert wait_until(lambda: next(answers), "a leader", 5, interval=0) == {"leader": 2}


def test_a_timeout_raises_naming_what_and_the_last_value() -> None:
    counter = itertools.count()
    with pytest.raises(AssertionError) as raised:
        wait_until(lambda: next(counter) < 0, "a negative count", 0.05, interval=0.01)
    assert isinstance(raised.value, WaitTimeout)
    assert "waiting until a negative count; last: False" in str(raised.value)


def test_a_retried_exception_is_reported_as_the_last_thing_seen() -> None:
    def refused() -> bool:
        raise ConnectionRefusedError("port 9092")

    with pytest.raises(WaitTimeout) as raised:
        wait_until(refused, "the broker listening", 0.05, interval=0.01)
    assert isinstance(raised.value.last, ConnectionRefusedError)
    assert "port 9092" in str(raised.value)


def test_an_exception_not_retried_propagates_at_once() -> None:
    calls = []

    def broken() -> bool:
        calls.append(1)
        raise TypeError("a bug in the test")

    with pytest.raises(TypeError):
        wait_until(broken, "anything", 5)
    assert len(calls) == 1


def test_the_async_wait_lets_the_loop_run_until_the_condition_holds() -> None:
    async def scenario() -> str:
        state = {}

        async def later() -> None:
            await asyncio.sleep(0)
            state["done"] = "yes"

        task = asyncio.create_task(later())
        found = await wait_until_async(lambda: state.get("done"), "the task ran", 5)
        await task
        return found

    assert asyncio.run(scenario()) == "yes"


def test_the_async_wait_times_out_like_the_other() -> None:
    with pytest.raises(WaitTimeout, match="waiting until never; last: 0"):
        asyncio.run(wait_until_async(lambda: 0, "never", 0.05))
