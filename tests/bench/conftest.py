"""The harness of ``make bench`` (``bench/``) imported as modules."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"


def _bench_module(monkeypatch, name: str):
    monkeypatch.syspath_prepend(str(BENCH))
    return importlib.import_module(name)


@pytest.fixture
def measure(monkeypatch):
    return _bench_module(monkeypatch, "measure")


@pytest.fixture
def phases(monkeypatch):
    return _bench_module(monkeypatch, "phases")


@pytest.fixture
def plots(monkeypatch):
    return _bench_module(monkeypatch, "plots")


@pytest.fixture
def report(monkeypatch):
    return _bench_module(monkeypatch, "report")


@pytest.fixture
def settings(monkeypatch):
    return _bench_module(monkeypatch, "settings")


@pytest.fixture
def throughput(monkeypatch):
    return _bench_module(monkeypatch, "throughput")


@pytest.fixture
def wide_fetch(monkeypatch):
    return _bench_module(monkeypatch, "wide_fetch")
