"""The bars a known tick stream must give, computed without Spark: what the pipeline's
tests (``tests/spark``) and its run on kind (``e2e``) compare its output with."""

from __future__ import annotations

import time
from collections import defaultdict

from tidelog_spark.ticks import Tick, synthetic_clock, tick_stream

WATERMARK_MS = 10_000  # the pipeline's default watermark


def known_ticks(seed: int, start_ms: int, count: int, spacing_ms: int) -> list[Tick]:
    """What ``tidelog-ticks --seed S --start MS --spacing-ms SP --count N`` sends."""
    stream = tick_stream(synthetic_clock(start_ms, spacing_ms), seed=seed)
    return [next(stream) for _ in range(count)]


def expected_bars(ticks: list[Tick]) -> dict[str, dict]:
    """The bars that the watermark has closed, by key (``SYMBOL|minute``)."""
    closed_until = max(t.time for t in ticks) - WATERMARK_MS
    windows: dict[tuple[str, int], list[Tick]] = defaultdict(list)
    for tick in ticks:  # in event-time order
        windows[tick.symbol, tick.time - tick.time % 60_000].append(tick)
    bars = {}
    for (symbol, start), window in windows.items():
        if start + 60_000 > closed_until:
            continue
        minute = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(start / 1000))
        end = time.strftime("%Y-%m-%dT%H:%MZ", time.gmtime(start / 1000 + 60))
        prices = [t.price for t in window]
        bars[f"{symbol}|{minute}"] = {
            "symbol": symbol,
            "start": minute,
            "end": end,
            "open": prices[0],
            "high": max(prices),
            "low": min(prices),
            "close": prices[-1],
            "volume": sum(t.size for t in window),
            "trades": len(window),
        }
    return bars
