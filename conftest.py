"""How the suite is shared between pytest-xdist's workers (``make test TEST_WORKERS=N``).

Each test module is one unit of work (an ``xdist_group``), so that a module's fixtures
start once. The e2e tests are a single unit, since they share one kind cluster, and
with ``--dist loadgroup --no-loadscope-reorder`` they go first: the longest unit, mostly
spent waiting on Kubernetes, runs beside everything else instead of after it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

E2E = Path(__file__).resolve().parent / "e2e"
E2E_GROUP = "e2e"


def _group(item: pytest.Item) -> str:
    """The test's unit of work. Modules go by file name, which xdist appends to each test's
    id: two modules of one name in two directories are one unit, a larger one."""
    return E2E_GROUP if item.path.is_relative_to(E2E) else item.path.stem


@pytest.hookimpl(tryfirst=True)  # before xdist's own, which reads the groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        item.add_marker(pytest.mark.xdist_group(_group(item)))
    if hasattr(config, "workerinput"):  # collected by an xdist worker
        items.sort(key=lambda item: _group(item) != E2E_GROUP)  # stable: e2e first
