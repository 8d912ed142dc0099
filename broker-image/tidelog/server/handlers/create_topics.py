"""CreateTopics: validated here, written and brought online by the controller."""

from __future__ import annotations

from tidelog.controller.assignment import AssignmentError, assign_replicas
from tidelog.controller.zk_client import TopicExistsError
from tidelog.controller.zk_data import TopicAssignment, new_uuid
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.server.handlers.config_resources import validate_topic_config
from tidelog.server.topic_names import topic_name_error
from tidelog.storage.config import LogConfigError

__all__ = ["handle_create_topics", "plan_topic"]

CreateTopicsResponse = response_class(ApiKey.CREATE_TOPICS)


class TopicRequestError(Exception):
    def __init__(self, code: ErrorCode, message: str):
        super().__init__(message)
        self.code = code


def plan_topic(broker, name, partitions, replication_factor, assignments, configs):
    """Validate one topic and choose its replicas; raises TopicRequestError."""
    problem = topic_name_error(name)
    if problem:
        raise TopicRequestError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
    if name in broker.metadata.topics:
        raise TopicRequestError(ErrorCode.TOPIC_ALREADY_EXISTS, f"topic '{name}' already exists.")
    try:
        validate_topic_config(configs, broker.config.log_config())
    except LogConfigError as error:
        raise TopicRequestError(ErrorCode.INVALID_CONFIG, str(error)) from None
    live = sorted(broker.metadata.brokers)
    if assignments:
        if partitions != -1 or replication_factor != -1:
            raise TopicRequestError(
                ErrorCode.INVALID_REQUEST,
                "both numPartitions or replicationFactor and replicasAssignments were set",
            )
        plan = {a.partition_index: list(a.broker_ids) for a in assignments}
        if sorted(plan) != list(range(len(plan))):
            raise TopicRequestError(
                ErrorCode.INVALID_REPLICA_ASSIGNMENT, "partitions must be numbered 0 to n-1"
            )
        for replicas in plan.values():
            if not replicas or len(set(replicas)) != len(replicas):
                raise TopicRequestError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"replica list {replicas} is empty or repeats a broker",
                )
            if not set(replicas) <= set(live):
                raise TopicRequestError(
                    ErrorCode.INVALID_REPLICA_ASSIGNMENT,
                    f"replica list {replicas} names unknown brokers",
                )
        return plan
    count = broker.config["num.partitions"] if partitions == -1 else partitions
    factor = (
        broker.config["default.replication.factor"]
        if replication_factor == -1
        else replication_factor
    )
    if count <= 0:
        raise TopicRequestError(
            ErrorCode.INVALID_PARTITIONS, "number of partitions must be larger than 0"
        )
    try:
        racks = {b: broker.metadata.brokers[b].rack for b in live}
        return assign_replicas(count, factor, live, racks)
    except AssignmentError as error:
        raise TopicRequestError(ErrorCode.INVALID_REPLICATION_FACTOR, str(error)) from None


def _result(name, code=ErrorCode.NONE, message=None, **fields):
    return CreateTopicsResponse.CreatableTopicResult(
        name=name, error_code=code, error_message=message, **fields
    )


async def handle_create_topics(broker, header, request, context):
    if not broker.controller.is_active:
        return CreateTopicsResponse(
            topics=[
                _result(t.name, ErrorCode.NOT_CONTROLLER, "this broker is not the controller")
                for t in request.topics
            ]
        )
    results, planned, configs = {}, [], {}
    seen = set()
    for topic in request.topics:
        if topic.name in seen:
            results[topic.name] = _result(
                topic.name, ErrorCode.INVALID_REQUEST, "the topic is named twice in the request"
            )
            continue
        seen.add(topic.name)
        topic_configs = {c.name: c.value for c in topic.configs}
        try:
            plan = plan_topic(
                broker,
                topic.name,
                topic.num_partitions,
                topic.replication_factor,
                topic.assignments,
                topic_configs,
            )
        except TopicRequestError as error:
            results[topic.name] = _result(topic.name, error.code, str(error))
            continue
        assignment = TopicAssignment(topic.name, new_uuid(), plan)
        configs[topic.name] = topic_configs
        results[topic.name] = _result(
            topic.name,
            topic_id=assignment.topic_id,
            num_partitions=len(plan),
            replication_factor=len(plan[0]),
            configs=[
                CreateTopicsResponse.CreatableTopicConfigs(
                    name=k, value=v, read_only=False, config_source=1, is_sensitive=False
                )
                for k, v in sorted(topic_configs.items())
            ],
        )
        if not request.validate_only:
            planned.append(assignment)
    if planned:
        failures = await broker.controller.add_topics(planned, configs)
        for name, failure in failures.items():
            if isinstance(failure, TopicExistsError):
                results[name] = _result(name, ErrorCode.TOPIC_ALREADY_EXISTS, str(failure))
            elif failure is not None:
                results[name] = _result(name, ErrorCode.UNKNOWN_SERVER_ERROR, str(failure))
    ordered = dict.fromkeys(t.name for t in request.topics)
    return CreateTopicsResponse(topics=[results[name] for name in ordered])
