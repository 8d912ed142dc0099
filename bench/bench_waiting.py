"""Waiting until a condition holds, for every scenario of ``make bench``: by polling, or
by a ZooKeeper watch.

Not named ``waiting``: the test suite's own ``tests/waiting.py`` has that name on
pytest's path, where the harness's modules are imported too (``tests/bench``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from kazoo.client import KazooClient
from kazoo.recipe.watchers import DataWatch

__all__ = ["ZnodeWatch", "registration_gone", "wait_until"]

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


class ZnodeWatch:
    """The first moment (``time.perf_counter``) a znode's data satisfies ``condition``
    (called with the data, or None while the znode does not exist), as kazoo's watch
    reports it."""

    def __init__(self, connect: str, path: str, condition: Callable[[bytes | None], bool]):
        self._client = KazooClient(hosts=connect)
        self._client.start(timeout=30)
        self._condition = condition
        self._seen = threading.Event()
        self.seen_at: float | None = None
        DataWatch(self._client, path, self._changed)

    def _changed(self, data: bytes | None, _stat) -> bool:
        if not self._seen.is_set() and self._condition(data):
            self.seen_at = time.perf_counter()
            self._seen.set()
        return not self._seen.is_set()  # False ends the watch

    def wait(self, what: str, timeout: float = 120) -> float:
        if not self._seen.wait(timeout):
            raise TimeoutError(f"not seen within {timeout} s: {what}")
        self.close()
        return self.seen_at

    def close(self) -> None:
        self._client.stop()
        self._client.close()


def registration_gone(connect: str, broker_id: int) -> ZnodeWatch:
    """When ``/brokers/ids/<id>`` disappears: the moment the broker's ZooKeeper session
    expired (the moment Kafka's cluster learns of a kill -9)."""
    return ZnodeWatch(connect, f"/brokers/ids/{broker_id}", lambda data: data is None)
