"""The tick generator: a seeded stream is the same every time, prices move by at most
``MAX_STEP`` a tick, and the CLI refuses bad arguments with one line and exit 2."""

from __future__ import annotations

import json
import subprocess
import sys
from itertools import islice
from pathlib import Path

import pytest

from tidelog_spark.ticks import MAX_STEP, SYMBOLS, synthetic_clock, tick_stream

TICKS = Path(sys.executable).with_name("tidelog-ticks")


def test_a_seed_gives_the_same_ticks_and_synthetic_times_are_evenly_spaced():
    first = list(islice(tick_stream(synthetic_clock(1000, 250), seed=3), 500))
    again = list(islice(tick_stream(synthetic_clock(1000, 250), seed=3), 500))
    other = list(islice(tick_stream(synthetic_clock(1000, 250), seed=4), 500))
    assert first == again != other
    assert [t.time for t in first] == list(range(1000, 1000 + 500 * 250, 250))
    assert {t.symbol for t in first} == set(SYMBOLS)
    assert all(t.size % 100 == 0 and 100 <= t.size <= 1000 for t in first)


def test_prices_walk_by_small_steps():
    last: dict[str, float] = {}
    for tick in islice(tick_stream(synthetic_clock(0, 1), seed=1), 2000):
        before = last.get(tick.symbol, 100.0)
        assert abs(tick.price - before) <= before * MAX_STEP + 0.005
        last[tick.symbol] = tick.price


def test_a_tick_record_is_keyed_by_symbol_with_a_json_value():
    tick = next(tick_stream(synthetic_clock(42, 1), symbols=("ACME",)))
    key, value = tick.record()
    assert key == b"ACME"
    assert json.loads(value) == {
        "symbol": "ACME",
        "price": tick.price,
        "size": tick.size,
        "time": 42,
    }


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--rate", "-1"], "--rate must be 0 or more"),
        (["--count", "0"], "--count must be at least 1"),
        (["--spacing-ms", "0"], "--spacing-ms must be at least 1"),
        (["--symbols", "ACME,,BOLT"], "--symbols needs non-empty names"),
    ],
)
def test_bad_arguments_get_one_line_and_exit_2(arguments, message):
    done = subprocess.run(
        [TICKS, "--bootstrap-server", "127.0.0.1:1", *arguments], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert done.stderr.startswith(f"tidelog-ticks: {message}") and done.stderr.count("\n") == 1
