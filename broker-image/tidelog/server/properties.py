"""Java ``.properties`` text (``server.properties``): the keys and values it sets."""

from __future__ import annotations

import re

__all__ = ["parse_properties"]

_CONTINUATION = re.compile(r"(?<!\\)(\\\\)*\\$")


def parse_properties(text: str) -> dict[str, str]:
    """Java ``.properties`` syntax: ``key=value`` or ``key: value``, ``#``/``!``
    comments, backslash line continuations."""
    properties: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if _CONTINUATION.search(line):
            logical += line[:-1]
            continue
        logical += line
        match = re.match(r"([^=:\s]+)\s*[=:\s]\s*(.*)$", logical)
        if match:
            properties[match[1]] = match[2]
        elif logical:
            properties[logical] = ""
        logical = ""
    return properties
