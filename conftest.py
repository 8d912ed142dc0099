"""How the suite is shared between pytest-xdist's workers (``make test TEST_WORKERS=N``).

Each test module is one unit of work (an ``xdist_group``), so that a module's fixtures
start once. Three parts of the suite each saturate the machine alone, and beside each
other stretch past their own limits: the e2e tests, which share one kind cluster (and
run a Spark pipeline in it), the smoke run of ``make bench``'s harness (both systems
through every scenario, Spark's among them), and the tests that start Spark's JVM. A
Spark driver starved beside another one fails to start its context in time. They are
one unit, the heavy one, and with ``--dist loadgroup --no-loadscope-reorder`` it goes
first: the longest unit runs beside everything else instead of after it.
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
HEAVY_GROUP = "heavy"


def _group(item: pytest.Item) -> str:
    """The test's unit of work. Modules go by file name, which xdist appends to each test's
    id: two modules of one name in two directories are one unit, a larger one."""
    heavy = any(item.path.is_relative_to(path) for path in HEAVY)  # a file is relative to itself
    return HEAVY_GROUP if heavy else item.path.stem


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))
    if hasattr(config, "workerinput"):  # collected by an xdist worker
        items.sort(key=lambda item: _group(item) != HEAVY_GROUP)  # stable: heavy unit first
