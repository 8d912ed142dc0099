"""CreatePartitions: raise a topic's partition count, on the controller.

The new partitions get the replicas the request names, or ones chosen like Kafka does:
the topic's replication factor, and a round robin continuing from the broker that leads
partition 0. The controller writes the extended assignment and brings the new
partitions online before the response leaves.
"""

from __future__ import annotations

import logging
from collections import Counter

from tidelog.controller.assignment import AssignmentError, assign_replicas
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.server.handlers.create_topics import TopicRequestError

__all__ = ["handle_create_partitions", "plan_new_partitions"]

logger = logging.getLogger(__name__)

CreatePartitionsResponse = response_class(ApiKey.CREATE_PARTITIONS)


def _fail(code: ErrorCode, message: str):
    raise TopicRequestError(code, message)


def _ids(values) -> str:
    return ", ".join(str(v) for v in values)


def plan_new_partitions(broker, name: str, count: int, assignments) -> dict[int, list[int]]:
    """Validate one topic of the request and choose the new partitions' replicas;
    raises TopicRequestError."""
    controller = broker.controller
    existing = controller.assignments.get(name)
    if existing is None:
        _fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist.")
    old = len(existing.partitions)
    increment = count - old
    if increment < 0:
        _fail(
            ErrorCode.INVALID_PARTITIONS,
            f"Topic currently has {old} partitions, which is higher than the requested {count}.",
        )
    if increment == 0:
        _fail(ErrorCode.INVALID_PARTITIONS, f"Topic already has {old} partitions.")
    live = sorted(controller.live_brokers)
    factor = len(existing.partitions[0])
    if assignments is not None:
        proposed = [list(a.broker_ids) for a in assignments]
        unknown = sorted({b for replicas in proposed for b in replicas} - set(live))
        if unknown:
            _fail(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Unknown broker(s) in replica assignment: {_ids(unknown)}.",
            )
        if len(proposed) != increment:
            _fail(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                f"Increasing the number of partitions by {increment} but {len(proposed)} "
                f"assignments provided.",
            )
        plan = {old + i: replicas for i, replicas in enumerate(proposed)}
        for partition, replicas in plan.items():
            if not replicas:
                _fail(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Cannot have replication factor of 0 for partition id {partition}.",
                )
            if len(set(replicas)) != len(replicas):
                _fail(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Duplicate brokers not allowed in replica assignment: {_ids(replicas)} "
                    f"for partition id {partition}.",
                )
            if len(replicas) != factor:
                _fail(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"Inconsistent replication factor between partitions, partition 0 has "
                    f"{factor} while partition {partition} has {len(replicas)} replicas.",
                )
        return plan
    # Continue the round robin from the broker of partition 0's first replica.
    first = existing.partitions[0][0]
    start = next((i for i, b in enumerate(live) if b >= first), 0)
    racks = {b: registration.rack for b, registration in controller.brokers.items()}
    try:
        return assign_replicas(
            increment, factor, live, racks, start_index=start, start_partition=old
        )
    except AssignmentError as error:
        _fail(ErrorCode.INVALID_REPLICATION_FACTOR, str(error))


def _result(name, code=ErrorCode.NONE, message=None):
    return CreatePartitionsResponse.CreatePartitionsTopicResult(
        name=name, error_code=code, error_message=message
    )


async def handle_create_partitions(broker, header, request, context):
    if not broker.controller.is_active:
        return CreatePartitionsResponse(
            results=[
                _result(t.name, ErrorCode.NOT_CONTROLLER, "This is not the correct controller.")
                for t in request.topics
            ]
        )
    named = Counter(t.name for t in request.topics)
    results = []
    for topic in request.topics:
        if named[topic.name] > 1:
            results.append(
                _result(topic.name, ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
            )
            continue
        try:
            plan = plan_new_partitions(broker, topic.name, topic.count, topic.assignments)
        except TopicRequestError as error:
            results.append(_result(topic.name, error.code, str(error)))
            continue
        if not request.validate_only:
            logger.info("adding partitions %s to topic %s", sorted(plan), topic.name)
            try:
                await broker.controller.add_partitions(topic.name, plan)
            except Exception as error:
                code = ErrorCode(getattr(error, "error_code", ErrorCode.UNKNOWN_SERVER_ERROR))
                results.append(_result(topic.name, code, str(error)))
                continue
        results.append(_result(topic.name))
    return CreatePartitionsResponse(results=results)
