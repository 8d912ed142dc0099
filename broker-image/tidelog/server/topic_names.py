"""Kafka's rules for topic names."""

from __future__ import annotations

import re

__all__ = ["MAX_NAME_LENGTH", "topic_name_error"]

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"^[a-zA-Z0-9._-]+$")


def topic_name_error(name: str) -> str | None:
    """Why ``name`` cannot be a topic name, or None when it can."""
    if not name:
        return "topic name is illegal, it can't be empty"
    if name in (".", ".."):
        return 'topic name cannot be "." or ".."'
    if len(name) > MAX_NAME_LENGTH:
        return f"topic name is longer than {MAX_NAME_LENGTH} characters"
    if not _LEGAL.match(name):
        return (
            f"topic name {name!r} is illegal, it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return None
