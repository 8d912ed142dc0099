"""The broker's event loop: it polls for a moment before it sleeps.

A loop that blocks in ``epoll_wait`` as soon as it has nothing to do gives its core
back; when a client's next request comes a moment later, the kernel (and on a virtual
machine the hypervisor) must first wake that core and the loop's thread. For a client
that waits for each answer before it asks again (a sync offset commit, a producer with
one request in flight) that wake-up is a large part of every round trip. Measured on
the 2-core bench machine with S10's sync commits (``bench/groupload.py commit``, tidelog
alone, alternating starts; ``bench/results/README.md``): 1,490-2,170 commits/s when the
broker sleeps between requests, 2,520-3,200/s when it polls 200 µs first and
2,800-3,245/s at 500 µs, the default. librdkafka takes about 0.2 ms from an answer to
its next commit, so a 200 µs window often ran out just before the request came.
Seastar's reactor, under the Kafka-compatible Redpanda, polls the same way before it
sleeps (its ``--idle-poll-time-us``).

``socket.idle.poll.us`` (tidelog's own, read-only; 0 turns polling off) is the window.
Polling costs a core only where it pays:

- only after a wait that was shorter than the window (the loop is serving a client that
  keeps coming back): after a wait that was longer (an idle broker, long polls, ZooKeeper
  pings) the loop sleeps at once until a wait is short again, so an idle broker never
  spins, and a stream of requests that ends costs one window;
- between two polls the loop yields its core (``sched_yield``) to any thread that wants
  it: the clients, the broker's own worker threads and other brokers on the machine run
  as they would if the loop slept;
- a wait that asyncio bounds by its next timer polls until that timer at most.
"""

from __future__ import annotations

import asyncio
import os
import selectors
import time
from collections.abc import Callable

__all__ = ["IdlePollingSelector", "new_event_loop"]


class IdlePollingSelector(selectors.EpollSelector):
    """An epoll selector whose waits poll for up to ``window_s`` before they block."""

    def __init__(self, window_s: float, clock: Callable[[], float] = time.monotonic):
        super().__init__()
        self._window = window_s
        self._clock = clock
        self._poll_next = True

    @property
    def polls_next(self) -> bool:
        """Whether the next wait polls before it blocks: the last wait was short."""
        return self._poll_next

    def select(self, timeout: float | None = None) -> list:
        if timeout is not None and timeout <= 0:
            return super().select(timeout)  # asyncio has work ready: no wait at all
        start = self._clock()
        if self._poll_next:
            limit = self._window if timeout is None else min(self._window, timeout)
            while True:
                ready = super().select(0)
                if ready:
                    return ready
                if self._clock() - start >= limit:
                    break
                os.sched_yield()
            if limit < self._window:
                return []  # the next timer is due: the gap is not known to be long
            self._poll_next = False
            return super().select(None if timeout is None else timeout - limit)
        ready = super().select(timeout)
        self._poll_next = self._clock() - start < self._window
        return ready


def new_event_loop(idle_poll_us: int) -> asyncio.AbstractEventLoop:
    """The broker's event loop: asyncio's own on an :class:`IdlePollingSelector`, or
    plain asyncio's with ``idle_poll_us`` 0."""
    if idle_poll_us <= 0:
        return asyncio.new_event_loop()
    return asyncio.SelectorEventLoop(IdlePollingSelector(idle_poll_us / 1_000_000))
