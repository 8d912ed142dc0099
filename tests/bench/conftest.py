"""The harness of ``make bench`` (``bench/compare.py``) imported as a module."""

from __future__ import annotations

from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


@pytest.fixture
def compare(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import compare

    return compare


@pytest.fixture
def phases(monkeypatch):
    monkeypatch.syspath_prepend(str(BENCH))
    import phases

    return phases
