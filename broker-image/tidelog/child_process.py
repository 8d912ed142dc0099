"""Child processes that die with their parent: ZooKeeper, brokers, test servers, and the
parts of ``make run``.

On Linux a process can ask the kernel for a signal when its parent dies
(``PR_SET_PDEATHSIG``); the request survives ``exec``, so it holds for a shell script
that execs its program (``spark-submit`` execs ``java``) but not for a process the script
forks. The kernel ties it to the thread that started the child, not to the parent
process: start long-lived children from a thread that outlives them (the main thread).

Two ways to ask, both of which also catch a parent that died before the request was made
(the child then signals itself):

- :func:`die_with_parent`, a ``preexec_fn`` for a ``Popen`` in a process without other
  threads (``preexec_fn`` is not safe beside threads: the child may deadlock before exec);
- :func:`dying_with_parent`, a command line that runs ``command`` through this module
  (``python -m tidelog.child_process``), which asks and then execs ``command`` under the
  same pid: for a process with threads, or a ``Popen`` built by someone else's code from
  a command line.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Callable, Sequence

__all__ = ["die_with_parent", "dying_with_parent"]

_PR_SET_PDEATHSIG = 1
_SIGNAL = signal.SIGTERM


def _prctl() -> Callable[..., int] | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


def _ask(prctl: Callable[..., int], parent: int) -> None:
    """In the child: SIGTERM when the parent dies, or now if it already has (the child
    was then re-parented, and the kernel would never send it)."""
    prctl(_PR_SET_PDEATHSIG, int(_SIGNAL))
    if os.getppid() != parent:
        os.kill(os.getpid(), _SIGNAL)


def die_with_parent() -> Callable[[], None] | None:
    """On Linux, a ``preexec_fn`` that makes the child get SIGTERM when its parent dies
    (None elsewhere). So a killed test run or launcher leaves no server holding its port."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()
    return lambda: _ask(prctl, parent)


def dying_with_parent(command: Sequence[str | os.PathLike[str]]) -> list[str]:
    """``command`` as a command line whose process gets SIGTERM when the calling process
    dies; on other systems ``command`` unchanged. The process is ``command``'s own (the
    launcher execs it), so its pid is the one ``Popen`` returns."""
    words = [os.fspath(word) for word in command]
    if _prctl() is None:
        return words
    return [sys.executable, "-m", "tidelog.child_process", str(os.getpid()), "--", *words]


def main(argv: list[str]) -> int:
    """``python -m tidelog.child_process PARENT_PID -- COMMAND...`` (see
    :func:`dying_with_parent`)."""
    prctl = _prctl()
    if len(argv) < 3 or not argv[0].isdigit() or argv[1] != "--" or prctl is None:
        print("usage: python -m tidelog.child_process PARENT_PID -- COMMAND...", file=sys.stderr)
        return 2
    _ask(prctl, int(argv[0]))
    os.execvp(argv[2], argv[2:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
