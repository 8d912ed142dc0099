"""A background thread for the storage engine's deferred work: flushing a segment that
just rolled, checkpointing a follower's new leader epoch, and deleting segment files
after ``file.delete.delay.ms``.

Deletion is deferred because a reader may still be sending from a file slice of the
segment: closing its file descriptor at once would make that send fail, or worse, let
the number be reused by another file mid-send.
"""

from __future__ import annotations

import heapq
import itertools
import logging
import threading
import time
from collections.abc import Callable

__all__ = ["Scheduler"]

logger = logging.getLogger(__name__)


class Scheduler:
    def __init__(self, name: str = "tidelog-storage-scheduler"):
        self._tasks: list[tuple[float, int, Callable[[], object]]] = []
        self._order = itertools.count()
        self._condition = threading.Condition()
        self._stopping = False
        self._thread = threading.Thread(target=self._run, name=name, daemon=True)
        self._thread.start()

    def submit(self, task: Callable[[], object]) -> None:
        self.schedule(0.0, task)

    def schedule(self, delay_s: float, task: Callable[[], object]) -> None:
        with self._condition:
            if self._stopping:
                raise RuntimeError("the scheduler is shut down")
            deadline = time.monotonic() + delay_s
            heapq.heappush(self._tasks, (deadline, next(self._order), task))
            self._condition.notify()

    @property
    def pending(self) -> int:
        with self._condition:
            return len(self._tasks)

    def _run(self) -> None:
        while True:
            with self._condition:
                while not self._stopping and (
                    not self._tasks or self._tasks[0][0] > time.monotonic()
                ):
                    timeout = self._tasks[0][0] - time.monotonic() if self._tasks else None
                    self._condition.wait(timeout)
                if self._stopping:
                    return
                _, _, task = heapq.heappop(self._tasks)
            _run_logged(task)

    def shutdown(self) -> None:
        """Stop the thread, then run every task still pending, due or not (a delayed
        deletion is safe to do now: nothing reads any more)."""
        with self._condition:
            self._stopping = True
            self._condition.notify()
        self._thread.join()
        while self._tasks:
            _run_logged(heapq.heappop(self._tasks)[2])


def _run_logged(task: Callable[[], object]) -> None:
    try:
        task()
    except Exception:
        logger.exception("storage task %r failed", task)
