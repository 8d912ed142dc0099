"""The suite's one way to wait for something: poll a condition until it returns a true
value, or fail saying what was awaited and what was last seen.

A wait never returns False: a timeout raises ``WaitTimeout`` (an ``AssertionError``, so
pytest reports it as a failed expectation), whose message names ``what`` and the
condition's last value, or the last exception it raised. Importable from ``tests/`` and
``e2e/`` as ``waiting`` (pyproject's ``pythonpath = ["tests"]``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["RETRIED", "WaitTimeout", "wait_until", "wait_until_async"]

T = TypeVar("T")

# What a condition may raise while the thing it looks at is not there yet (a broker not
# listening, a key not written, an assertion inside the condition) and is asked again.
# Anything else is a bug in the test and propagates at once.
RETRIED: tuple[type[BaseException], ...] = (AssertionError, OSError, KeyError)


class WaitTimeout(AssertionError):
    """A condition still false (or still raising) when its time ran out."""

    def __init__(self, what: str, timeout: float, last: object):
        super().__init__(f"timed out after {timeout:g} s waiting until {what}; last: {last!r}")
        self.what = what
        self.last = last


def wait_until(
    condition: Callable[[], T],
    what: str,
    timeout: float = 30.0,
    *,
    interval: float = 0.1,
    retry_on: tuple[type[BaseException], ...] = RETRIED,
) -> T:
    """Call ``condition`` every ``interval`` seconds until it returns a true value, and
    return that value. An exception of a ``retry_on`` type counts as not yet; after
    ``timeout`` seconds, ``WaitTimeout`` names ``what`` and the last value or exception.
    The condition is always asked at least once, and once more after the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        past_deadline = time.monotonic() > deadline
        done, seen = _ask(condition, retry_on)
        if done:
            return seen
        if past_deadline:
            raise WaitTimeout(what, timeout, seen)
        time.sleep(interval)


async def wait_until_async(
    condition: Callable[[], T],
    what: str,
    timeout: float = 10.0,
    *,
    interval: float = 0.01,
    retry_on: tuple[type[BaseException], ...] = RETRIED,
) -> T:
    """``wait_until`` for a test on an event loop: the loop runs while it waits (the
    condition reads state that tasks on that loop change)."""
    deadline = time.monotonic() + timeout
    while True:
        past_deadline = time.monotonic() > deadline
        done, seen = _ask(condition, retry_on)
        if done:
            return seen
        if past_deadline:
            raise WaitTimeout(what, timeout, seen)
        await asyncio.sleep(interval)


def _ask(condition: Callable[[], T], retry_on: tuple[type[BaseException], ...]) -> tuple[bool, T]:
    """(True, the value) when the condition holds, else (False, what it returned or raised)."""
    try:
        value = condition()
    except retry_on as error:
        return False, error
    return bool(value), value
