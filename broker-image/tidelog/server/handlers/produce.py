"""Produce: append each partition's batches on its leader.

The records field is a memoryview of the request frame; it reaches the log without a
copy. Produce v0 to v2 may carry message sets of magic 0 and 1, which the log converts
(:mod:`tidelog.records.legacy`); from v3 on only record batch v2 is taken, as by Kafka.
acks=0 gets no response; acks=1 answers once the leader appended (after the consumer
fetches the append woke have answered); acks=all waits in
purgatory until the high watermark passes the batch (every ISR member has it), or
answers REQUEST_TIMED_OUT after the request's ``timeout_ms`` (the batch stays in the
log: the producer's retry is then deduplicated when it is idempotent). From v10 a
partition answered NOT_LEADER_OR_FOLLOWER names its current leader (KIP-951,
:mod:`tidelog.server.leader_hints`).
"""

from __future__ import annotations

import asyncio

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.records.legacy import legacy_magic
from tidelog.server.leader_hints import LeaderHints
from tidelog.server.network import CloseConnection

__all__ = ["handle_produce"]

ProduceResponse = response_class(ApiKey.PRODUCE)


def _partition_response(topic: str, index: int, result, hints: LeaderHints) -> object:
    info = result.info
    response = ProduceResponse.PartitionProduceResponse(
        index=index,
        error_code=result.error,
        base_offset=info.first_offset if info else -1,
        log_append_time_ms=info.log_append_time if info else -1,
        log_start_offset=result.log_start_offset,
        error_message=result.message,
    )
    hints.name_leader(response, topic, index)
    return response


async def _wait_for_isr(broker, appended: dict, timeout_ms: int) -> None:
    """acks=all: each appended partition's answer once its ISR has the batch, all within
    the request's one timeout. ``appended`` maps (topic, partition) to its result."""
    deadline = asyncio.get_running_loop().time() + timeout_ms / 1000
    waits = {
        key: broker.replica_manager.wait_for_isr(*key, result.info.last_offset + 1, deadline)
        for key, result in appended.items()
        if result.error == ErrorCode.NONE and result.info is not None
    }
    for key, code in zip(waits, await asyncio.gather(*waits.values()), strict=True):
        if code != ErrorCode.NONE:
            appended[key] = broker.replica_manager_error(code)


async def handle_produce(broker, header, request, context):
    acks = request.acks
    results = {}
    woken_before = broker.replica_manager.purgatory.woken
    for topic in request.topic_data:
        for data in topic.partition_data:
            if acks not in (0, 1, -1):
                result = broker.replica_manager_error(ErrorCode.INVALID_REQUIRED_ACKS)
            elif request.transactional_id is not None:
                result = broker.replica_manager_error(
                    ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
                    "transactions are not supported yet",
                )
            elif data.records is None or len(data.records) == 0:
                result = broker.replica_manager_error(ErrorCode.INVALID_RECORD, "no records")
            elif header.request_api_version >= 3 and legacy_magic(data.records) is not None:
                result = broker.replica_manager_error(
                    ErrorCode.INVALID_RECORD,
                    f"Produce v{header.request_api_version} takes record batch v2 only; "
                    "message sets of magic 0 and 1 come with Produce v0 to v2",
                )
            else:
                result = broker.replica_manager.append(
                    topic.name, data.index, data.records, acks=acks
                )
            results[(topic.name, data.index)] = result
    if acks == -1:
        await _wait_for_isr(broker, results, request.timeout_ms)
    elif broker.replica_manager.purgatory.woken != woken_before:
        # The appends woke requests waiting on these partitions, consumers' long-polling
        # fetches: they answer first, this acknowledgement in the next turn, as the
        # batch is what those consumers wait for (Kafka answers both at once, on
        # different threads). On S3's load (one broker, 5 MB/s of 1 KiB records) this
        # took the end-to-end p50 from 0.885 and 0.891 ms to 0.849 and 0.845 ms.
        await asyncio.sleep(0)
    hints = LeaderHints(
        broker.metadata, context.listener, ApiKey.PRODUCE, header.request_api_version
    )
    responses = [
        ProduceResponse.TopicProduceResponse(
            name=topic.name,
            partition_responses=[
                _partition_response(
                    topic.name, data.index, results[(topic.name, data.index)], hints
                )
                for data in topic.partition_data
            ],
        )
        for topic in request.topic_data
    ]
    if acks == 0:
        failed = [
            (t.name, p.index, p.error_code)
            for t in responses
            for p in t.partition_responses
            if p.error_code
        ]
        if failed:
            # No response can tell an acks=0 producer; Kafka closes the connection so
            # that it refreshes its metadata instead of sending into the void.
            raise CloseConnection(f"acks=0 produce failed for {failed}")
        return None
    return ProduceResponse(responses=responses, node_endpoints=hints.node_endpoints())
