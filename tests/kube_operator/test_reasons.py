"""Every reason ``conditions.Reason`` documents is one the operator gives: set on a
condition or told in an event somewhere in its code (none documented and never set),
and no condition or event reason is a string literal beside the table."""

from __future__ import annotations

import ast
from pathlib import Path

import tidelog_operator
from tidelog_operator.conditions import Reason

PACKAGE = Path(tidelog_operator.__file__).parent
SOURCES = {
    path: ast.parse(path.read_text())
    for path in PACKAGE.rglob("*.py")
    if path.name != "conditions.py"
}


def _reasons_named() -> set[str]:
    """The ``Reason.X`` attributes the operator's modules read."""
    return {
        node.attr
        for tree in SOURCES.values()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "Reason"
    }


def test_every_documented_reason_is_given_somewhere():
    documented = {name for name in vars(Reason) if name.isupper()}
    assert documented - _reasons_named() == set()


def test_no_event_reason_is_a_string_literal():
    literal = [
        f"{path.relative_to(PACKAGE)}:{node.lineno}"
        for path, tree in SOURCES.items()
        for node in ast.walk(tree)
        if isinstance(node, ast.keyword)
        and node.arg == "reason"
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
        and node.value.value[:1].isupper()
    ]
    assert literal == []
