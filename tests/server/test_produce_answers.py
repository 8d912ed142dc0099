"""The order of a Produce's acknowledgement and the long-polling Fetches its append
wakes (``handle_produce``): in one event loop, one has to go first. The consumers'
answers do, so that a record reaches them without waiting for the producer's
acknowledgement to be built; the acknowledgement follows in the next turn of the loop.
The handlers run in process on a real replica manager and log."""

from __future__ import annotations

import asyncio
import uuid
from dataclasses import dataclass, field

import pytest

from replication.test_throttled_fetch import fetch_request
from tidelog.protocol import ApiKey, RequestHeader, request_class
from tidelog.protocol.errors import ErrorCode
from tidelog.records import build_batch
from tidelog.replication.quota import ReplicationQuota
from tidelog.replication.replica_manager import AppendResult, ReplicaManager
from tidelog.server.fetch_sessions import FetchSessionCache
from tidelog.server.handlers.fetch import handle_fetch
from tidelog.server.handlers.produce import handle_produce
from tidelog.server.metadata_cache import MetadataCache
from tidelog.server.network import ConnectionContext
from tidelog.storage.cleaner import CleanerConfig
from tidelog.storage.log_manager import LogManager

TOPIC = "tail"
BROKER = 1
ProduceRequest = request_class(ApiKey.PRODUCE)
CONTEXT = ConnectionContext("PLAINTEXT", "127.0.0.1", 0)


@dataclass
class Broker:
    """As much of a broker as the Produce and Fetch handlers read."""

    replica_manager: ReplicaManager
    leader_quota: ReplicationQuota = field(default_factory=ReplicationQuota)
    metadata: MetadataCache = field(default_factory=lambda: MetadataCache("cluster"))
    fetch_sessions: FetchSessionCache = field(default_factory=lambda: FetchSessionCache(1000))

    @staticmethod
    def replica_manager_error(code: ErrorCode, message: str | None = None) -> AppendResult:
        return AppendResult(code, message=message)


@pytest.fixture
def broker(tmp_path):
    logs = LogManager(
        [tmp_path], broker_id=BROKER, cleaner_config=CleanerConfig(log_cleaner_enable=False)
    )
    logs.startup()
    replicas = ReplicaManager(BROKER, logs)
    error = replicas.become_leader_or_follower(
        TOPIC, uuid.uuid4(), 0, leader=BROKER, leader_epoch=0, replicas=[BROKER], isr=[BROKER]
    )
    assert error == ErrorCode.NONE
    yield Broker(replicas)
    logs.shutdown()


def header(api: ApiKey, version: int) -> RequestHeader:
    return RequestHeader(
        request_api_key=api, request_api_version=version, correlation_id=1, client_id="t"
    )


async def consumer_fetch(broker: Broker):
    """A consumer's Fetch at the partition's end, long-polling for 10 s."""
    request = fetch_request(TOPIC, [0], replica_id=-1, max_wait_ms=10_000, leader_epoch=-1)
    return await handle_fetch(broker, header(ApiKey.FETCH, 12), request, CONTEXT)


async def produce(broker: Broker, acks: int):
    request = ProduceRequest(
        transactional_id=None,
        acks=acks,
        timeout_ms=10_000,
        topic_data=[
            ProduceRequest.TopicProduceData(
                name=TOPIC,
                partition_data=[
                    ProduceRequest.PartitionProduceData(
                        index=0, records=build_batch([(None, b"record")])
                    )
                ],
            )
        ],
    )
    return await handle_produce(broker, header(ApiKey.PRODUCE, 9), request, CONTEXT)


@pytest.mark.parametrize("acks", [1, -1])
def test_the_fetches_an_append_wakes_answer_before_its_acknowledgement(broker, acks):
    async def scenario():
        answered = []

        async def answer(name, work):
            response = await work
            answered.append(name)
            return response

        fetch = asyncio.create_task(answer("fetch", consumer_fetch(broker)))
        await asyncio.sleep(0)  # the fetch found nothing and waits in purgatory
        assert not fetch.done()
        acknowledged = await answer("produce", produce(broker, acks))
        fetched = await fetch

        assert answered == ["fetch", "produce"]
        (topic,) = acknowledged.responses
        assert topic.partition_responses[0].error_code == ErrorCode.NONE
        (partition,) = fetched.responses[0].partitions
        assert len(partition.records) > 0

    asyncio.run(scenario())


def test_an_append_that_wakes_no_one_is_acknowledged_in_the_same_turn(broker):
    async def scenario():
        produced = asyncio.create_task(produce(broker, 1))
        await asyncio.sleep(0)
        assert produced.done()

    asyncio.run(scenario())
