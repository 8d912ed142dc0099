"""Following, in :class:`~tidelog.replication.replica_manager.ReplicaManager`: the
replica fetchers a follower copies its leaders' logs with (one per leader and fetcher
id), and the calls they make back into the manager to truncate and append.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from tidelog.replication.fetcher import FetcherConfig, ReplicaFetcher, fetcher_id
from tidelog.replication.partition import NO_LEADER, Partition
from tidelog.replication.quota import ReplicationQuota
from tidelog.storage.log import Log
from tidelog.storage.log_manager import LogManager

__all__ = ["Following"]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]


class Following:
    """Mixed into :class:`~tidelog.replication.replica_manager.ReplicaManager`, whose
    ``broker_id``, ``log_manager``, ``partitions``, ``_num_fetchers``, ``_endpoint_of``,
    ``_fetcher_config``, ``_follower_quota``, ``_fetchers`` and ``_stopping`` it uses."""

    broker_id: int
    log_manager: LogManager
    partitions: dict[TopicPartition, Partition]
    _num_fetchers: int
    _endpoint_of: Callable[[int], tuple[str, int] | None]
    _fetcher_config: FetcherConfig | None
    _follower_quota: ReplicationQuota | None
    _fetchers: dict[tuple[int, int], ReplicaFetcher]
    _stopping: set[asyncio.Task]

    def _fetcher_for(self, leader: int, key: TopicPartition) -> ReplicaFetcher:
        which = (leader, fetcher_id(*key, self._num_fetchers))
        fetcher = self._fetchers.get(which)
        if fetcher is None:
            fetcher = self._fetchers[which] = ReplicaFetcher(
                leader,
                lambda: self._endpoint_of(leader),
                self,
                self._fetcher_config,
                self._follower_quota,
            )
        return fetcher

    def _stop_fetching(self, key: TopicPartition) -> None:
        for which, fetcher in list(self._fetchers.items()):
            fetcher.remove(*key)
            if fetcher.is_empty():
                del self._fetchers[which]
                stopping = asyncio.get_running_loop().create_task(fetcher.stop())
                self._stopping.add(stopping)
                stopping.add_done_callback(self._stopping.discard)

    async def shutdown(self) -> None:
        fetchers, self._fetchers = list(self._fetchers.values()), {}
        await asyncio.gather(*(f.stop() for f in fetchers), *self._stopping)

    def follower_log(self, topic: str, index: int) -> Log | None:
        partition = self.partitions.get((topic, index))
        if partition is None or partition.leader in (self.broker_id, NO_LEADER):
            return None
        return partition.log

    def truncate_follower(
        self, topic: str, index: int, asked_epoch: int, leader_epoch: int, leader_end: int
    ) -> None:
        """Cut the follower's log where it diverges from the leader's, by epoch."""
        partition = self.partitions[(topic, index)]
        log = partition.log
        if leader_end < 0 or asked_epoch < 0:
            target = partition.high_watermark  # no epochs to compare: Kafka's fallback
        elif leader_epoch == asked_epoch:
            target = min(leader_end, log.log_end_offset)
        else:  # the leader never had our epoch: cut at the end of its last one we share
            target = min(leader_end, log.end_offset_for_epoch(leader_epoch)[1])
            if target < 0:
                target = leader_end
        target = min(target, log.log_end_offset)
        if target < log.log_end_offset:
            logger.info(
                "%s-%d: truncating from %d to %d (leader epoch %d ends at %d)",
                topic,
                index,
                log.log_end_offset,
                target,
                leader_epoch,
                leader_end,
            )
            self.log_manager.truncate_to(topic, index, target)
        partition.high_watermark = min(partition.high_watermark, log.log_end_offset)

    def follower_start_at(self, topic: str, index: int, offset: int) -> None:
        log = self.partitions[(topic, index)].log
        logger.info("%s-%d: the leader starts at %d; starting over there", topic, index, offset)
        self.log_manager.guarded(log, lambda: log.truncate_fully_and_start_at(offset))

    def append_as_follower(
        self,
        topic: str,
        index: int,
        fetch_offset: int,
        records,
        leader_high_watermark: int,
        leader_log_start: int,
    ) -> None:
        partition = self.partitions[(topic, index)]
        log = partition.log
        if records is not None and len(records) and log.log_end_offset == fetch_offset:
            self.log_manager.guarded(log, lambda: log.append_as_follower(records))
        if leader_log_start > log.log_start_offset:
            self.log_manager.guarded(
                log, lambda: log.maybe_increment_log_start_offset(leader_log_start)
            )
        partition.follow_high_watermark(leader_high_watermark)
