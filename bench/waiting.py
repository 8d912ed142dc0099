"""Polling until a condition holds, for every scenario of ``make bench``."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

__all__ = ["wait_until"]

T = TypeVar("T")


def wait_until(check: Callable[[], T], what: str, timeout: float = 120) -> T:
    """Poll ``check`` every 50 ms until it returns something true, which is returned;
    TimeoutError naming ``what`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if value := check():
            return value
        time.sleep(0.05)
    raise TimeoutError(f"{what}: not after {timeout} s")
