"""Helpers for the long-lived child processes tidelog starts (ZooKeeper, test servers)."""

from __future__ import annotations

import ctypes
import signal
import sys
from collections.abc import Callable

__all__ = ["die_with_parent"]

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> Callable[[], None] | None:
    """On Linux, a ``preexec_fn`` that makes the child get SIGTERM when its parent dies.

    So a killed test run or launcher leaves no server holding its port. The kernel ties this
    to the thread that started the process: start servers from a thread that outlives them.
    """
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    sigterm = int(signal.SIGTERM)
    return lambda: prctl(_PR_SET_PDEATHSIG, sigterm)
