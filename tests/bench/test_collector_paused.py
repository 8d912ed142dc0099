"""The harness times a client's calls in its own process with Python's garbage collector
held off (``measure.collector_paused``), and gives it back whatever happens inside."""

from __future__ import annotations

import gc

import pytest

# matplotlib's font config parser (imported with the harness) calls deprecated names.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def test_the_collector_is_off_inside_and_on_again_after(measure):
    assert gc.isenabled()
    with measure.collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_the_collector_is_on_again_after_a_failed_measurement(measure):
    with pytest.raises(TimeoutError), measure.collector_paused():
        raise TimeoutError("no metadata")
    assert gc.isenabled()
