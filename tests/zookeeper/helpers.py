"""Shared by the ZooKeeper tests: a kazoo session as a context manager, waiting for a
condition."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from kazoo.client import KazooClient


@contextmanager
def kazoo_session(hosts: str) -> Iterator[KazooClient]:
    client = KazooClient(hosts=hosts)
    client.start(timeout=10)
    try:
        yield client
    finally:
        client.stop()
        client.close()


def wait_until(condition: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True
