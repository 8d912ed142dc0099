"""Produce: append each partition's batches on its leader.

The records field is a memoryview of the request frame; it reaches the log without a
copy. acks=0 gets no response; acks=1 and acks=all answer once the leader appended
(acks=all waits for the ISR, which on a single broker is the leader itself).
"""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.server.network import CloseConnection

__all__ = ["handle_produce"]

ProduceResponse = response_class(ApiKey.PRODUCE)


def _partition_response(index: int, result) -> object:
    info = result.info
    return ProduceResponse.PartitionProduceResponse(
        index=index,
        error_code=result.error,
        base_offset=info.first_offset if info else -1,
        log_append_time_ms=info.log_append_time if info else -1,
        log_start_offset=result.log_start_offset,
        error_message=result.message,
    )


async def handle_produce(broker, header, request, context):
    acks = request.acks
    responses = []
    for topic in request.topic_data:
        partitions = []
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
            else:
                result = broker.replica_manager.append(
                    topic.name, data.index, data.records, acks=acks
                )
            partitions.append(_partition_response(data.index, result))
        responses.append(
            ProduceResponse.TopicProduceResponse(name=topic.name, partition_responses=partitions)
        )
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
    return ProduceResponse(responses=responses)
