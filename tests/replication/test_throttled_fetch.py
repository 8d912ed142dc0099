"""Replication throttles on both fetch paths (seed 003 修改主题限速), in one process with
real logs: broker 1 leads (its LogManager and ReplicaManager, the Fetch and
OffsetForLeaderEpoch handlers behind a real SocketServer on loopback) and broker 2
follows (its own LogManager and ReplicaManager, whose replica fetcher connects to it).

What is checked is which partitions the paths throttle and which keep their full
size, never how fast anything goes: the quotas' clocks are the tests' own, so a quota
is exceeded exactly when a test makes it so.
"""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tidelog.protocol import ApiKey, RequestHeader, request_class
from tidelog.protocol.errors import ErrorCode
from tidelog.records import build_batch
from tidelog.replication.fetcher import FetcherConfig
from tidelog.replication.quota import (
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    ReplicationQuota,
)
from tidelog.replication.replica_manager import ReplicaManager
from tidelog.server.dispatch import RequestDispatcher
from tidelog.server.fetch_sessions import FetchSessionCache
from tidelog.server.handlers.fetch import handle_fetch
from tidelog.server.handlers.offsets_for_leader_epoch import handle_offsets_for_leader_epoch
from tidelog.server.metadata_cache import MetadataCache
from tidelog.server.network import ConnectionContext, SocketServer
from tidelog.storage.cleaner import CleanerConfig
from tidelog.storage.log_manager import LogManager
from waiting import wait_until_async

LEADER, FOLLOWER = 1, 2
TOPIC = "moving"
TOPIC_ID = uuid.uuid4()
EPOCH = 1
BATCHES = 8
WAIT_S = 10  # the longest a test waits for something that must happen
FetchRequest = request_class(ApiKey.FETCH)


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


def exceeded_quota(clock: Clock) -> ReplicationQuota:
    """A quota of 1 byte/s already far over it (until its clock moves 11 s on)."""
    quota = ReplicationQuota(1, samples=11, window_ms=1000, clock_ms=clock)
    quota.record(1_000_000)
    assert quota.is_exceeded()
    return quota


def no_cleaner_logs(directory: Path, broker_id: int) -> LogManager:
    logs = LogManager(
        [directory], broker_id=broker_id, cleaner_config=CleanerConfig(log_cleaner_enable=False)
    )
    logs.startup()
    return logs


@dataclass
class Leader:
    """Broker 1, as much of it as the Fetch and OffsetForLeaderEpoch handlers read."""

    replica_manager: ReplicaManager
    leader_quota: ReplicationQuota
    metadata: MetadataCache = field(default_factory=lambda: MetadataCache("cluster"))
    ready: asyncio.Event = field(default_factory=asyncio.Event)
    advertised_versions: list = field(default_factory=list)
    fetch_sessions: FetchSessionCache = field(default_factory=lambda: FetchSessionCache(1000))
    authorizer: None = None

    def lead(self, partition: int, isr: list[int], epoch: int = EPOCH) -> None:
        error = self.replica_manager.become_leader_or_follower(
            TOPIC,
            TOPIC_ID,
            partition,
            leader=LEADER,
            leader_epoch=epoch,
            replicas=[LEADER, FOLLOWER],
            isr=isr,
        )
        assert error == ErrorCode.NONE

    def produce(self, partition: int, batches: int = BATCHES) -> None:
        for i in range(batches):
            batch = build_batch([(None, f"{partition}-{i}-".encode() + b"x" * 200)])
            result = self.replica_manager.append(TOPIC, partition, batch, acks=1)
            assert result.error == ErrorCode.NONE

    def log(self, partition: int):
        return self.replica_manager.partitions[(TOPIC, partition)].log


@pytest.fixture
def leader(tmp_path):
    logs = no_cleaner_logs(tmp_path / "leader", LEADER)
    broker = Leader(ReplicaManager(LEADER, logs), ReplicationQuota())
    yield broker
    logs.shutdown()


def fetch_request(
    topic: str, partitions: list[int], *, replica_id: int, max_wait_ms: int, leader_epoch: int
):
    """A Fetch (v12 fields, no session) of ``partitions`` of ``topic`` from offset 0."""
    return FetchRequest(
        replica_id=replica_id,
        max_wait_ms=max_wait_ms,
        min_bytes=1,
        max_bytes=10 * 1024 * 1024,
        isolation_level=0,
        session_id=0,
        session_epoch=-1,
        topics=[
            FetchRequest.FetchTopic(
                topic=topic,
                partitions=[
                    FetchRequest.FetchPartition(
                        partition=p,
                        current_leader_epoch=leader_epoch,
                        fetch_offset=0,
                        log_start_offset=0,
                        partition_max_bytes=1024 * 1024,
                    )
                    for p in partitions
                ],
            )
        ],
        forgotten_topics_data=[],
        rack_id="",
    )


async def fetch_as(leader: Leader, replica_id: int, partitions: list[int]):
    """One Fetch v12 of ``partitions`` from offset 0, answered at once; the records'
    size per partition."""
    request = fetch_request(
        TOPIC, partitions, replica_id=replica_id, max_wait_ms=0, leader_epoch=EPOCH
    )
    header = RequestHeader(
        request_api_key=ApiKey.FETCH, request_api_version=12, correlation_id=1, client_id="t"
    )
    context = ConnectionContext("REPLICATION", "127.0.0.1", 0)
    response = await handle_fetch(leader, header, request, context)
    (topic,) = response.responses
    assert all(p.error_code == ErrorCode.NONE for p in topic.partitions)
    return {p.partition_index: len(p.records) for p in topic.partitions}


# -- the leader's fetch path ----------------------------------------------------------------


def test_the_leader_leaves_out_only_throttled_out_of_sync_replicas(leader):
    """Partition 0 is throttled here (0:1) and broker 2 is out of its ISR; partition 1's
    entry names broker 3, not this leader; partition 2 is throttled but broker 2 is in
    its ISR."""

    async def scenario():
        clock = Clock()
        leader.leader_quota = exceeded_quota(clock)
        leader.leader_quota.follow_topic_config(
            TOPIC, LEADER_THROTTLED_REPLICAS, "0:1,1:3,2:1", LEADER
        )
        for partition, isr in ((0, [LEADER]), (1, [LEADER]), (2, [LEADER, FOLLOWER])):
            leader.lead(partition, isr)
            leader.produce(partition)
        full = {p: leader.log(p).size for p in range(3)}
        recorded_before = leader.leader_quota.measured_rate()

        sizes = await fetch_as(leader, FOLLOWER, [0, 1, 2])

        assert sizes == {0: 0, 1: full[1], 2: full[2]}
        # The throttled fetch still told the leader where the follower is.
        follower_state = leader.replica_manager.partitions[(TOPIC, 0)].followers[FOLLOWER]
        assert follower_state.log_end_offset == 0
        # Bytes of throttled partitions are recorded, in sync or not (here: partition 2's).
        assert leader.leader_quota.measured_rate() == recorded_before + full[2]

        # A consumer is never throttled.
        assert (await fetch_as(leader, -1, [0]))[0] == full[0]

        # Once the quota is no longer exceeded, partition 0 goes out whole, and counts.
        clock.now_ms += 11_000
        assert not leader.leader_quota.is_exceeded()
        assert await fetch_as(leader, FOLLOWER, [0, 1]) == {0: full[0], 1: full[1]}
        assert leader.leader_quota.measured_rate() == full[0]

    asyncio.run(scenario())


def test_a_follower_being_added_to_the_isr_is_not_throttled(leader):
    """From the moment the leader proposes a follower for the ISR, the high watermark
    waits for it (KIP-497's maximal ISR). Had its throttled fetches gone empty until
    ZooKeeper had the change, every acks=all write would have waited as long."""

    async def scenario():
        leader.leader_quota = exceeded_quota(Clock())
        leader.leader_quota.follow_topic_config(TOPIC, LEADER_THROTTLED_REPLICAS, "0:1", LEADER)
        leader.lead(0, [LEADER])
        leader.produce(0)
        partition = leader.replica_manager.partitions[(TOPIC, 0)]
        partition.propose_isr([LEADER, FOLLOWER])  # on its way to ZooKeeper

        assert await fetch_as(leader, FOLLOWER, [0]) == {0: leader.log(0).size}

        partition.drop_isr_proposal()  # ZooKeeper refused it: throttled again
        assert await fetch_as(leader, FOLLOWER, [0]) == {0: 0}

    asyncio.run(scenario())


# -- the follower's fetch requests ------------------------------------------------------------


@dataclass
class Follower:
    """Broker 2: its logs, its replica manager (with the follower quota) and, as broker 1
    saw them, its requests: how many Fetches arrived, the partitions each answered Fetch
    asked for (in the order answered), and each OffsetForLeaderEpoch answer's error by
    partition."""

    replica_manager: ReplicaManager
    quota: ReplicationQuota
    fetches_arrived: int = 0
    fetched: list[set[int]] = field(default_factory=list)
    epoch_answers: list[dict[int, int]] = field(default_factory=list)

    def follow(self, partition: int, epoch: int = EPOCH, isr: tuple = (LEADER,)) -> None:
        error = self.replica_manager.become_leader_or_follower(
            TOPIC,
            TOPIC_ID,
            partition,
            leader=LEADER,
            leader_epoch=epoch,
            replicas=[LEADER, FOLLOWER],
            isr=list(isr),
        )
        assert error == ErrorCode.NONE

    def end_offset(self, partition: int) -> int:
        return self.replica_manager.partitions[(TOPIC, partition)].log.log_end_offset


def run_with_follower(
    tmp_path, leader: Leader, scenario, *, max_wait_ms: int = 50, backoff_ms: int = 20
) -> None:
    """Serve broker 1's fetch handlers on loopback and run ``scenario(follower, clock)``
    with broker 2 following from it (``replica.fetch.wait.max.ms`` and
    ``replica.fetch.backoff.ms`` as given); its follower quota starts exceeded."""

    async def main():
        follower_logs = no_cleaner_logs(tmp_path / "follower", FOLLOWER)
        clock = Clock()
        follower = None

        async def recording_fetch(broker, header, request, context):
            """Notes the partitions each of the follower's fetches covers: those of its
            fetch session (an incremental fetch names only what changed)."""
            if request.replica_id == FOLLOWER:
                follower.fetches_arrived += 1
            response = await handle_fetch(broker, header, request, context)
            if request.replica_id == FOLLOWER:
                session = broker.fetch_sessions.get(response.session_id)
                assert session is not None, "the follower fetches in a session"
                follower.fetched.append({partition for _, partition in session.partitions})
            return response

        async def recording_offsets_for_leader_epoch(broker, header, request, context):
            response = await handle_offsets_for_leader_epoch(broker, header, request, context)
            follower.epoch_answers.append(
                {p.partition: p.error_code for topic in response.topics for p in topic.partitions}
            )
            return response

        handlers = {
            ApiKey.FETCH: recording_fetch,
            ApiKey.OFFSET_FOR_LEADER_EPOCH: recording_offsets_for_leader_epoch,
        }
        network = SocketServer(
            RequestDispatcher(leader, handlers), max_request_bytes=100 << 20, idle_timeout_ms=-1
        )
        port = await network.listen("REPLICATION", "127.0.0.1", 0)
        leader.ready.set()
        quota = exceeded_quota(clock)
        replicas = ReplicaManager(
            FOLLOWER,
            follower_logs,
            fetcher_config=FetcherConfig(
                replica_id=FOLLOWER,
                max_wait_ms=max_wait_ms,
                min_bytes=1,
                partition_max_bytes=1024 * 1024,
                response_max_bytes=10 * 1024 * 1024,
                backoff_ms=backoff_ms,
                socket_timeout_ms=5000,
            ),
            endpoint_of=lambda _broker: ("127.0.0.1", port),
            follower_quota=quota,
        )
        follower = Follower(replicas, quota)
        try:
            await scenario(follower, clock)
        finally:
            await replicas.shutdown()
            await network.close()
            follower_logs.shutdown()

    asyncio.run(main())


def test_the_follower_leaves_throttled_partitions_out_of_its_fetches(tmp_path, leader):
    """On broker 2, partition 0 is throttled (0:2); partition 1's entry names broker 3."""

    async def scenario(follower: Follower, clock: Clock):
        follower.quota.follow_topic_config(TOPIC, FOLLOWER_THROTTLED_REPLICAS, "0:2,1:3", FOLLOWER)
        for partition in (0, 1):
            leader.lead(partition, [LEADER])
            leader.produce(partition)
            follower.follow(partition)
        end = leader.log(0).log_end_offset

        # Partition 1 is copied whole while the quota is exceeded; partition 0 is never
        # asked for.
        await wait_until_async(
            lambda: follower.end_offset(1) == end, "the follower caught up on partition 1", WAIT_S
        )
        await wait_until_async(lambda: len(follower.fetched) >= 3, "three fetches", WAIT_S)
        assert follower.end_offset(0) == 0
        assert all(asked == {1} for asked in follower.fetched)
        assert follower.quota.measured_rate() == 1_000_000  # partition 1 is not counted

        # The quota's window passes: partition 0 is fetched, and its bytes count.
        clock.now_ms += 11_000
        await wait_until_async(
            lambda: follower.end_offset(0) == end, "the follower caught up on partition 0", WAIT_S
        )
        assert {0, 1} in follower.fetched
        assert follower.quota.measured_rate() == leader.log(0).size

        # Caught up, partition 0 is in sync: an exceeded quota no longer holds it back.
        follower.quota.record(1_000_000)
        assert follower.quota.is_exceeded()
        leader.produce(0, batches=2)
        await wait_until_async(
            lambda: follower.end_offset(0) == leader.log(0).log_end_offset,
            "the follower caught up on partition 0",
            WAIT_S,
        )

    run_with_follower(tmp_path, leader, scenario)


def test_a_new_epoch_that_names_the_follower_in_the_isr_is_not_throttled(tmp_path, leader):
    """The end of a throttled move: the controller bumps the epoch of a partition whose
    ISR holds the new, still throttled follower (0:2) while the quota is exceeded. The
    leader waits for that follower before it acknowledges acks=all writes, so the
    follower must keep fetching; a new epoch that leaves it out of the ISR throttles it
    again. Partition 1 (1:3, not throttled here) shows the fetches go on."""

    async def scenario(follower: Follower, clock: Clock):
        follower.quota.follow_topic_config(TOPIC, FOLLOWER_THROTTLED_REPLICAS, "0:2,1:3", FOLLOWER)
        clock.now_ms += 11_000  # the quota lets the first copy through
        for partition in (0, 1):
            leader.lead(partition, [LEADER])
            leader.produce(partition)
            follower.follow(partition)
        await wait_until_async(
            lambda: follower.end_offset(0) == leader.log(0).log_end_offset,
            "the follower caught up on partition 0",
            WAIT_S,
        )

        follower.quota.record(1_000_000)
        assert follower.quota.is_exceeded()
        leader.lead(0, [LEADER, FOLLOWER], epoch=EPOCH + 1)
        follower.follow(0, epoch=EPOCH + 1, isr=(LEADER, FOLLOWER))
        leader.produce(0, batches=2)
        await wait_until_async(
            lambda: follower.end_offset(0) == leader.log(0).log_end_offset,
            "the follower caught up on partition 0",
            WAIT_S,
        )

        copied = follower.end_offset(0)
        leader.lead(0, [LEADER], epoch=EPOCH + 2)
        follower.follow(0, epoch=EPOCH + 2)
        leader.produce(0, batches=2)
        leader.produce(1, batches=2)
        await wait_until_async(
            lambda: follower.end_offset(1) == leader.log(1).log_end_offset,
            "the follower caught up on partition 1",
            WAIT_S,
        )
        fetches = len(follower.fetched)
        await wait_until_async(
            lambda: len(follower.fetched) >= fetches + 3, "three more fetches", WAIT_S
        )
        assert follower.fetched[-1] == {1}
        assert follower.end_offset(0) == copied

    run_with_follower(tmp_path, leader, scenario)
