"""The BROKER_LOGGER resource: this broker's loggers, described and altered (Kafka's
``kafka-configs --entity-type broker-loggers``).

Each logger of the process is listed under its name (the root logger as ``root``)
with its effective level as a log4j level name; IncrementalAlterConfigs sets a level
(SET) or lets a logger inherit its parent's again (DELETE). Levels map to Python's:
TRACE 5, DEBUG 10, INFO 20, WARN 30, ERROR 40, FATAL 50.
"""

from __future__ import annotations

import logging

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.admin_enums import ConfigSource, ConfigType
from tidelog.protocol.errors import ErrorCode
from tidelog.server.handlers.config_describe import DescribeOptions
from tidelog.server.handlers.config_resources import (
    APPEND,
    BROKER_LOGGER,
    DELETE,
    SET,
    SUBTRACT,
    ConfigRequestError,
    named_broker_id,
    operation_name,
    resource_text,
)

__all__ = ["alter_loggers", "describe_loggers"]

logger = logging.getLogger(__name__)

DescribeConfigsResponse = response_class(ApiKey.DESCRIBE_CONFIGS)

_LOG4J_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
_PYTHON_LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50}


def _log4j_level(logger_: logging.Logger) -> str:
    level = logger_.getEffectiveLevel()
    for name in reversed(_LOG4J_LEVELS):
        if level >= _PYTHON_LEVELS[name]:
            return name
    return "TRACE"


def _loggers() -> dict[str, logging.Logger]:
    found = {"root": logging.getLogger()}
    for name, item in sorted(logging.root.manager.loggerDict.items()):
        if isinstance(item, logging.Logger):
            found[name] = item
    return found


def describe_loggers(options: DescribeOptions):
    """Every logger of this process with its effective level, as log4j names it."""
    return [
        DescribeConfigsResponse.DescribeConfigsResourceResult(
            name=name,
            value=_log4j_level(item),
            read_only=False,
            config_source=int(ConfigSource.DYNAMIC_BROKER_LOGGER_CONFIG),
            is_sensitive=False,
            synonyms=[],
            config_type=int(ConfigType.STRING),
        )
        for name, item in _loggers().items()
        if options.wants(name)
    ]


def alter_loggers(broker_id: int, name: str, operations, validate_only: bool) -> None:
    """IncrementalAlterConfigs on this broker's loggers: every ``(logger, operation,
    level)`` checked first (SET a log4j level, DELETE to inherit; the root logger keeps
    its level), then applied unless ``validate_only``; ConfigRequestError otherwise."""
    named_broker_id(broker_id, name, empty_allowed=False, expectation="")
    known = _loggers()
    for logger_name, operation, level in operations:
        if operation in (APPEND, SUBTRACT):
            raise ConfigRequestError(
                ErrorCode.INVALID_REQUEST,
                f"{operation_name(operation)} operation is not allowed for the BROKER_LOGGER "
                f"resource",
            )
        if operation not in (SET, DELETE):
            raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"Unknown operation {operation}")
        problem = None
        if logger_name not in known:
            problem = f"Logger {logger_name} does not exist!"
        elif operation == SET and level not in _LOG4J_LEVELS:
            problem = (
                f"Cannot set the log level of {logger_name} to {level} as it is not a supported "
                f"log level. Valid log levels are {', '.join(_LOG4J_LEVELS)}"
            )
        if problem:
            raise ConfigRequestError(
                ErrorCode.INVALID_REQUEST,
                f"Invalid config value for resource {resource_text(BROKER_LOGGER, name)}: "
                f"{problem}",
            )
        if operation == DELETE and logger_name == "root":
            raise ConfigRequestError(
                ErrorCode.INVALID_REQUEST,
                "Removing the log level of the root logger is not allowed",
            )
    if validate_only:
        return
    for logger_name, operation, level in operations:
        target = known[logger_name]
        if operation == SET:
            logger.info("setting the log level of %s to %s", logger_name, level)
            target.setLevel(_PYTHON_LEVELS[level])
        else:
            logger.info("unsetting the log level of %s", logger_name)
            target.setLevel(logging.NOTSET)
