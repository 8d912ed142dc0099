"""Producer ids for idempotent producers, handed out from blocks reserved in ZooKeeper.

Each broker reserves a block of 1000 ids at a time under ``/latest_producer_id_block``
with a conditional write, so no two brokers ever hand out the same id, and hands them
out one by one until the block is used up.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

__all__ = ["ProducerIdManager"]


class ProducerIdManager:
    def __init__(self, allocate_block: Callable[[], tuple[int, int]]):
        self._allocate_block = allocate_block
        self._next = 0
        self._end = -1  # no block yet
        self._lock = asyncio.Lock()

    async def next_id(self) -> int:
        async with self._lock:
            if self._next > self._end:
                self._next, self._end = await asyncio.to_thread(self._allocate_block)
            producer_id = self._next
            self._next += 1
            return producer_id
