"""The enumerated values of the admin APIs' wire fields, Kafka's codes and names.

DescribeConfigs, AlterConfigs and IncrementalAlterConfigs (resource type, config source,
config type, alter operation) and ElectLeaders (election type). Both ends use them: the
broker's handlers (:mod:`tidelog.server`) and the admin client (:mod:`tidelog.admin`),
which depends on the protocol only (DESIGN §1), so they live here, beside the schemas
whose fields they fill, and import nothing.
"""

from __future__ import annotations

import enum

__all__ = ["ConfigResourceType", "ConfigSource", "ConfigType", "ElectionType", "OpType"]


class ConfigResourceType(enum.IntEnum):
    """DescribeConfigs' and (Incremental)AlterConfigs' resource types."""

    TOPIC = 2
    BROKER = 4
    BROKER_LOGGER = 8


class ConfigSource(enum.IntEnum):
    """Where a config value comes from (DescribeConfigs' config_source)."""

    UNKNOWN = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    DYNAMIC_BROKER_LOGGER_CONFIG = 6


class ConfigType(enum.IntEnum):
    """DescribeConfigs' config_type codes."""

    UNKNOWN = 0
    BOOLEAN = 1
    STRING = 2
    INT = 3
    SHORT = 4
    LONG = 5
    DOUBLE = 6
    LIST = 7
    CLASS = 8
    PASSWORD = 9


class OpType(enum.IntEnum):
    """IncrementalAlterConfigs' operations (config_operation; Kafka's AlterConfigOp.OpType)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ElectionType(enum.IntEnum):
    """ElectLeaders' election types."""

    PREFERRED = 0
    UNCLEAN = 1
