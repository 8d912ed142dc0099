"""A follower's fetcher connecting to its leader (tidelog.replication.fetcher)."""

import asyncio

import pytest

from tidelog.replication.fetcher import FetcherConfig, ReplicaFetcher


def test_a_connect_to_the_leader_that_hangs_is_given_up_after_the_connect_timeout(
    hanging_address,
):
    """After ``socket.connection.setup.timeout.ms``, not ``replica.socket.timeout.ms``
    (a minute here): the fetcher backs off and connects again, finding the leader's
    new address, instead of leaving the follower out of sync for the socket timeout."""
    config = FetcherConfig(
        replica_id=2,
        max_wait_ms=500,
        min_bytes=1,
        partition_max_bytes=1 << 20,
        response_max_bytes=10 << 20,
        backoff_ms=1000,
        socket_timeout_ms=60_000,
        connect_timeout_ms=200,
    )

    async def connect() -> None:
        fetcher = ReplicaFetcher(1, lambda: hanging_address, follower=None, config=config)
        async with asyncio.timeout(20):  # a hang this long fails the test, unlike the raise
            with pytest.raises(TimeoutError):
                await fetcher._connect()

    asyncio.run(connect())
