"""Where in a timer's cycle the repeats of a measurement start.

Some figures of ``make bench`` are mostly a wait for a periodic timer outside the broker:
S9's joins and leaves wait for the old members' next heartbeat, whose timers restart with
every rebalance. Where in that cycle a repeat starts moves its figure by up to a whole
period, so with independent random starts a median of 8 repeats is left to the draw (S9's
cooperative leave median moved by ±20 ms between sessions of one system, on a 100 ms
heartbeat interval, in bench/results/README.md). Starts spread evenly over the cycle give
every session the whole cycle; their offset and order are drawn from a seed, so that two
systems given the same seed get the same starts.
"""

from __future__ import annotations

import random

__all__ = ["spread_over_cycle"]


def spread_over_cycle(draws: random.Random, count: int, period: float) -> list[float]:
    """``count`` delays in ``[0, period)``, one in each of ``count`` equal slices of it
    and the same distance apart (the first drawn within the first slice), in a drawn
    order."""
    if count < 1:
        raise ValueError(f"count must be at least 1, not {count}")
    first = draws.uniform(0, period / count)
    delays = [first + k * period / count for k in range(count)]
    draws.shuffle(delays)
    return delays
