"""LogTable: the logs per log dir stay counted through every way logs come and go."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from tidelog.storage.log_table import LogTable


def log_in(directory: str):
    return SimpleNamespace(directory=Path(directory) / "t-0")


def test_counts_follow_assignment_replacement_deletion_pop_and_clear():
    table = LogTable()
    table[("t", 0)] = log_in("/a")
    table[("t", 1)] = log_in("/a")
    table[("t", 2)] = log_in("/b")
    assert (table.per_dir[Path("/a")], table.per_dir[Path("/b")]) == (2, 1)
    table[("t", 1)] = log_in("/b")  # replaced by a log in another dir
    assert (table.per_dir[Path("/a")], table.per_dir[Path("/b")]) == (1, 2)
    del table[("t", 0)]
    assert table.pop(("t", 2)).directory == Path("/b/t-0")
    assert table.pop(("t", 9), None) is None
    with pytest.raises(KeyError):
        table.pop(("t", 9))
    assert (table.per_dir[Path("/a")], table.per_dir[Path("/b")]) == (0, 1)
    table.clear()
    assert table == {} and sum(table.per_dir.values()) == 0
