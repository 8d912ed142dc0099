"""What the config APIs' handlers share about a request's resources: the error that
answers one resource, how a resource and an operation are named in messages (as Kafka
words them), the broker id a BROKER or BROKER_LOGGER resource names, and the one check
of a topic's configs that CreateTopics and the AlterConfigs APIs both make."""

from __future__ import annotations

from collections.abc import Mapping

from tidelog.protocol.admin_enums import ConfigResourceType, OpType
from tidelog.protocol.errors import ErrorCode
from tidelog.replication.quota import (
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    ThrottledReplicasError,
    parse_throttled_replicas,
)
from tidelog.storage.config import LogConfig, LogConfigError

__all__ = [
    "APPEND",
    "BROKER",
    "BROKER_LOGGER",
    "DELETE",
    "SET",
    "SUBTRACT",
    "TOPIC",
    "ConfigRequestError",
    "named_broker_id",
    "operation_name",
    "resource_text",
    "resource_type_name",
    "validate_topic_config",
]

# Short names for the codes the handlers compare with a request's fields.
TOPIC = ConfigResourceType.TOPIC
BROKER = ConfigResourceType.BROKER
BROKER_LOGGER = ConfigResourceType.BROKER_LOGGER
SET, DELETE, APPEND, SUBTRACT = OpType.SET, OpType.DELETE, OpType.APPEND, OpType.SUBTRACT


class ConfigRequestError(Exception):
    """One resource's answer: its error code and message."""

    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message


def resource_type_name(resource_type: int) -> str:
    """``TOPIC``, ``BROKER``, ``BROKER_LOGGER``, else the number."""
    try:
        return ConfigResourceType(resource_type).name
    except ValueError:
        return str(resource_type)


def operation_name(operation: int) -> str:
    """``SET``, ``DELETE``, ``APPEND``, ``SUBTRACT``, else the number."""
    try:
        return OpType(operation).name
    except ValueError:
        return str(operation)


def resource_text(resource_type: int, name: str) -> str:
    return f"ConfigResource(type={resource_type_name(resource_type)}, name='{name}')"


def named_broker_id(
    broker_id: int, name: str, *, empty_allowed: bool, expectation: str
) -> int | None:
    """The broker id a BROKER / BROKER_LOGGER resource names (None: the cluster
    default); it must be this broker's, ``broker_id``."""
    if not name:
        if empty_allowed:
            return None
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    try:
        named = int(name)
    except ValueError:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        ) from None
    if named != broker_id:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {broker_id}{expectation}, but received {name}",
        )
    return named


def validate_topic_config(configs: Mapping[str, str], base: LogConfig) -> LogConfig:
    """The log config a topic with overrides ``configs`` gets over the broker's defaults
    ``base``; raises LogConfigError (INVALID_CONFIG) for what Kafka 3.9's
    ``LogConfig.validate`` refuses: an unknown key, a value its ConfigDef does not parse
    or its validator refuses (throttled-replicas lists included), and a set whose values
    contradict each other (min.compaction.lag.ms above max.compaction.lag.ms)."""
    config = LogConfig.from_properties(configs, base=base)
    for key in (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS):
        if key in configs:
            try:
                parse_throttled_replicas(key, configs[key])
            except ThrottledReplicasError as error:
                raise LogConfigError(str(error)) from None
    return config
