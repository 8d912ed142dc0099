"""The suite in two parts, as ``make test`` runs them: the light tests, shared between
pytest-xdist's workers (``TEST_WORKERS``, two by default), then the heavy ones alone.

Most tests wait more than they compute (brokers, ZooKeeper and an API server answering,
sessions expiring), so two of them at a time fill the two cores better than one. Three
parts of the suite each saturate the machine alone, and beside other work stretch past
their own limits: the e2e tests, which share one kind cluster (and run a Spark pipeline
in it), the smoke run of ``make bench``'s harness (both systems through every scenario,
Spark's among them), and the tests that start Spark's JVM (a Spark driver starved beside
another one fails to start its context in time). They carry the ``heavy`` mark and run
one after the other, after the light ones (``pytest -m heavy``).

Among the light tests, each test module is one unit of work (an ``xdist_group``, with
``--dist loadgroup``), so that a module's fixtures start once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
HEAVY = (
    ROOT / "e2e",
    ROOT / "tests" / "bench" / "test_compare_harness.py",
    ROOT / "tests" / "spark",
    ROOT / "tests" / "containers" / "test_spark_image.py",
)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "heavy: saturates the machine alone; run apart from other tests"
    )


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if any(item.path.is_relative_to(path) for path in HEAVY):  # a file is relative to itself
            item.add_marker(pytest.mark.heavy)
        # Modules go by file name, which xdist appends to each test's id: two modules of
        # one name in two directories are one unit, a larger one.
        item.add_marker(pytest.mark.xdist_group(item.path.stem))
