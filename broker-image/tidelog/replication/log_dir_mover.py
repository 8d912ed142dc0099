"""Moves of replicas between the log directories of this broker (seed 000 JBOD; Kafka's
ReplicaAlterLogDirsThread), and the draining of directories.

A move has a future log (``LogManager.create_future_log``, made by AlterReplicaLogDirs or
by a drain). The mover copies it from the partition's current log on this broker, never
over the network, whole batches as they are, so offsets, leader epochs and producer
state come out the same; the current log keeps serving meanwhile. Each pass, for each
future log of a hosted partition:

1. the future log follows the current one down: a truncation of the current log reaches
   it through ``LogManager.truncate_to``; a future log past the current end is cut there,
   one below the current log start starts over there, and a risen log start offset
   (retention, DeleteRecords) rises in the future log too;
2. up to ``max_bytes`` more are copied, unless the quota (an object with
   ``record(nbytes)`` and ``is_exceeded()``, e.g. the broker's ``alter_log_dirs_quota``)
   is exceeded;
3. at the same log end offset the two swap (``ReplicaManager.replace_current_with_future``)
   in the same event-loop step as the check, so no append comes in between.

A future log of a partition not hosted (yet) waits: after a restart the move resumes once
LeaderAndIsr hosts the partition again. Draining: every current log in a draining
directory (``log.dirs.draining``) is moved to the directory the placement rule picks,
``concurrent_drains`` at a time, so setting the config is all an operator does.

Everything runs on the event loop, which owns the partitions, in steps of ``max_bytes``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Protocol

from tidelog.protocol.errors import ErrorCode
from tidelog.storage.errors import KafkaStorageError, StorageError
from tidelog.storage.log import Log

__all__ = ["LogDirMover", "MoveQuota"]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class MoveQuota(Protocol):
    """A byte-rate quota for the copying (``replica.alter.log.dirs.io.max.bytes.per.second``)."""

    def record(self, nbytes: int) -> None: ...

    def is_exceeded(self) -> bool: ...


class LogDirMover:
    def __init__(
        self,
        replica_manager,
        *,
        quota: MoveQuota | None = None,
        max_bytes: int = 1024 * 1024,
        concurrent_drains: int = 1,
        idle_interval_s: float = 0.1,
    ):
        self._replicas = replica_manager
        self._logs = replica_manager.log_manager
        self.quota = quota
        self._max_bytes = max_bytes
        self._concurrent_drains = concurrent_drains
        self._idle_interval_s = idle_interval_s
        self._wake = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="log-dir-mover")

    def wake(self) -> None:
        """A move or a draining directory is new: look now, not at the next interval."""
        self._wake.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _run(self) -> None:
        while True:
            try:
                busy = self.step()
            except Exception:
                logger.exception("moving replicas between log directories failed; retrying")
                busy = False
            if busy:
                await asyncio.sleep(0)  # let requests in between two steps
                continue
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(self._wake.wait(), self._idle_interval_s)
            self._wake.clear()

    def step(self) -> bool:
        """One pass: start drains, then advance (or finish) every move; True when some
        move copied data and has more to copy."""
        self._start_drains()
        busy = False
        for (topic, index), future in self._logs.future_logs.items():
            partition = self._replicas.partitions.get((topic, index))
            if partition is None or self._logs.get_log(topic, index) is not partition.log:
                continue
            try:
                busy |= self._advance(topic, index, partition.log, future)
            except StorageError as error:
                logger.error("moving %s-%d to %s failed: %s", topic, index, future, error)
        return busy

    def _advance(self, topic: str, index: int, current: Log, future: Log) -> bool:
        guarded = self._logs.guarded
        end = current.log_end_offset
        if future.log_end_offset > end:
            guarded(future, lambda: future.truncate_to(end))
        start = current.log_start_offset
        if future.log_end_offset < start:
            guarded(future, lambda: future.truncate_fully_and_start_at(start))
        elif start > future.log_start_offset:
            guarded(future, lambda: future.maybe_increment_log_start_offset(start))
        copied = False
        if future.log_end_offset < end and (self.quota is None or not self.quota.is_exceeded()):
            copied = self._copy(current, future)
        if future.log_end_offset == end:
            self._replicas.replace_current_with_future(topic, index)
            return False
        return copied

    def _copy(self, current: Log, future: Log) -> bool:
        guarded = self._logs.guarded
        found = guarded(current, lambda: current.read(future.log_end_offset, self._max_bytes))
        if found is None:
            return False
        data = found.records.to_bytes()
        guarded(future, lambda: future.append_as_follower(data))
        if self.quota is not None:
            self.quota.record(len(data))
        return True

    def _start_drains(self) -> None:
        draining = self._logs.draining_dirs
        if not draining:
            return
        moving = sum(
            1
            for tp in self._logs.future_logs
            if (log := self._logs.get_log(*tp)) is not None and log.directory.parent in draining
        )
        for topic, index in self._logs.partitions_to_drain():
            if moving >= self._concurrent_drains:
                return
            if (topic, index) not in self._replicas.partitions:
                continue  # not hosted yet: it moves once it is
            try:
                target = self._logs.choose_dir()
            except KafkaStorageError:
                return  # every online directory is draining: nowhere to go
            error = self._replicas.alter_replica_log_dir(topic, index, str(target))
            if error == ErrorCode.NONE:
                logger.info("draining: moving %s-%d to %s", topic, index, target)
                moving += 1
            else:
                logger.warning("draining: cannot move %s-%d: %s", topic, index, error.name)
