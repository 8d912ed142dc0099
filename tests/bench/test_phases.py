"""Starts of repeated measurements spread over a timer's cycle (``bench/phases.py``)."""

from __future__ import annotations

import itertools
import random

import pytest


def test_one_start_in_each_slice_of_the_cycle_evenly_apart(phases):
    delays = phases.spread_over_cycle(random.Random(3), 8, 0.1)
    ordered = sorted(delays)
    assert [int(d // 0.0125) for d in ordered] == list(range(8))
    gaps = [b - a for a, b in itertools.pairwise(ordered)]
    assert gaps == pytest.approx([0.0125] * 7)
    assert 0 <= ordered[0] < 0.0125 and ordered[-1] < 0.1


def test_the_same_seed_gives_the_same_starts_in_the_same_order(phases):
    first = phases.spread_over_cycle(random.Random(1), 8, 0.1)
    again = phases.spread_over_cycle(random.Random(1), 8, 0.1)
    other = phases.spread_over_cycle(random.Random(2), 8, 0.1)
    assert first == again
    assert first != other
    assert first != sorted(first)  # drawn order: not slice by slice


def test_at_least_one_start(phases):
    assert len(phases.spread_over_cycle(random.Random(0), 1, 2.0)) == 1
    with pytest.raises(ValueError, match="at least 1"):
        phases.spread_over_cycle(random.Random(0), 0, 2.0)
