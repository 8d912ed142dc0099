"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, for topics, brokers and
broker loggers.

Topic overrides live in ``/config/topics/<topic>``, dynamic broker configs in
``/config/brokers/<id>`` (this broker) and ``/config/brokers/<default>`` (cluster-wide,
an empty resource name); every write is announced under ``/config/changes``, which the
brokers follow to apply it. Reads go to ZooKeeper too, so a describe right after an
alter sees it. Describing: :mod:`.config_describe`; the loggers: :mod:`.broker_loggers`.

Altering validates first: a topic's new set through ``validate_topic_config``, as
CreateTopics does (INVALID_CONFIG), a broker's new set against the keys' scopes
(read-only keys, per-broker keys at the cluster level: INVALID_REQUEST, as Kafka
answers) and by building the configuration it would make (INVALID_REQUEST); a
listener's new keystore or truststore (``listener.name.<l>.ssl.keystore.*``, per broker)
must load and its key match its certificate (INVALID_CONFIG), and the broker's listener
then serves new connections with it (see :mod:`tidelog.security.listener_security`).
Passwords are stored encoded with ``password.encoder.secret``, as Kafka stores them
(:mod:`tidelog.security.password_encoder`); without a secret, setting one is refused.
AlterConfigs replaces an entity's whole set; IncrementalAlterConfigs applies SET,
DELETE, APPEND and SUBTRACT (list keys) to the stored one.
"""

from __future__ import annotations

import asyncio
import logging
from collections import Counter
from collections.abc import Callable

from tidelog.controller.zk_data import DEFAULT_ENTITY
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.admin_enums import ConfigType
from tidelog.protocol.errors import ErrorCode
from tidelog.security.password_encoder import decode_passwords, encode_passwords
from tidelog.server.config import (
    BROKER_CONFIGS,
    BrokerConfig,
    ConfigError,
    Scope,
    config_key_of,
)
from tidelog.server.handlers.broker_loggers import alter_loggers, describe_loggers
from tidelog.server.handlers.config_describe import (
    DescribeOptions,
    describe_broker,
    describe_topic,
    format_value,
)
from tidelog.server.handlers.config_resources import (
    APPEND,
    BROKER,
    BROKER_LOGGER,
    DELETE,
    SET,
    SUBTRACT,
    TOPIC,
    ConfigRequestError,
    named_broker_id,
    operation_name,
    resource_text,
    resource_type_name,
    validate_topic_config,
)
from tidelog.server.topic_names import topic_name_error
from tidelog.storage.config import LogConfig, LogConfigError
from tidelog.storage.topic_configs import TOPIC_CONFIGS

__all__ = [
    "apply_incremental",
    "handle_alter_configs",
    "handle_describe_configs",
    "handle_incremental_alter_configs",
]

logger = logging.getLogger(__name__)

DescribeConfigsResponse = response_class(ApiKey.DESCRIBE_CONFIGS)
AlterConfigsResponse = response_class(ApiKey.ALTER_CONFIGS)
IncrementalAlterConfigsResponse = response_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)


async def _zk(function, *args):
    return await asyncio.to_thread(function, *args)


async def _stored_broker_config(broker) -> BrokerConfig:
    """The broker's configuration with the dynamic configs now in ZooKeeper (what it is
    about to apply, if the change notification is still on its way)."""
    cluster, mine = await _zk(broker.zk.broker_configs, broker.broker_id)
    mine, _ = broker.config.without_stale_draining(mine)  # as the broker applies them
    try:
        return broker.config.with_dynamic(
            decode_passwords(broker.config, cluster), decode_passwords(broker.config, mine)
        )
    except ConfigError as error:
        logger.warning("dynamic broker configs in ZooKeeper are unusable: %s", error)
        return broker.config


# -- DescribeConfigs --------------------------------------------------------------------------


async def _describe(broker, resource, options: DescribeOptions, stored: Callable):
    kind, name = resource.resource_type, resource.resource_name
    if kind == TOPIC:
        problem = topic_name_error(name)
        if problem:
            raise ConfigRequestError(ErrorCode.INVALID_TOPIC_EXCEPTION, problem)
        if name not in broker.metadata.topics:
            raise ConfigRequestError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        overrides = await _zk(broker.zk.entity_config, "topics", name)
        return describe_topic(await stored(), overrides, options)
    if kind == BROKER:
        broker_id = named_broker_id(
            broker.broker_id, name, empty_allowed=True, expectation=" or empty string"
        )
        return describe_broker(await stored(), broker_id is not None, options)
    if kind == BROKER_LOGGER:
        named_broker_id(broker.broker_id, name, empty_allowed=False, expectation="")
        return describe_loggers(options)
    raise ConfigRequestError(ErrorCode.INVALID_REQUEST, f"Unsupported resource type: {kind}")


async def handle_describe_configs(broker, header, request, context):
    version = header.request_api_version
    cached: list[BrokerConfig] = []

    async def stored() -> BrokerConfig:  # read once per request
        if not cached:
            cached.append(await _stored_broker_config(broker))
        return cached[0]

    results = []
    for resource in request.resources:
        keys = resource.configuration_keys
        options = DescribeOptions(
            keys=frozenset(keys) if keys else None,
            include_synonyms=version >= 1 and request.include_synonyms,
            include_documentation=version >= 3 and request.include_documentation,
        )
        result = DescribeConfigsResponse.DescribeConfigsResult(
            error_code=ErrorCode.NONE,
            error_message=None,
            resource_type=resource.resource_type,
            resource_name=resource.resource_name,
            configs=[],
        )
        try:
            result.configs = await _describe(broker, resource, options, stored)
        except ConfigRequestError as error:
            result.error_code, result.error_message = error.code, error.message
        results.append(result)
    return DescribeConfigsResponse(results=results)


# -- altering -------------------------------------------------------------------------------


def _list_default(resource_type: int, name: str) -> str | None:
    """For APPEND and SUBTRACT: (the key's default as a list) or raise when the key is
    unknown or not a list."""
    if resource_type == TOPIC:
        key = TOPIC_CONFIGS.get(name)
        if key is None:
            raise ConfigRequestError(ErrorCode.INVALID_CONFIG, f"Unknown topic config name: {name}")
        is_list = key.type is ConfigType.LIST
        default = format_value(getattr(LogConfig(), name.replace(".", "_")))
    else:
        key = BROKER_CONFIGS.get(name)
        if key is None:
            raise ConfigRequestError(
                ErrorCode.INVALID_CONFIG, f"Unknown broker config name: {name}"
            )
        is_list = key.type == "list"
        default = format_value(key.default)
    return default if is_list else None


def apply_incremental(resource_type: int, current: dict[str, str], operations) -> dict[str, str]:
    """IncrementalAlterConfigs' operations ``(name, op, value)`` over the stored set."""
    props = dict(current)
    for name, operation, value in operations:
        if operation == SET:
            props[name] = value
        elif operation == DELETE:
            props.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            verb = "append" if operation == APPEND else "subtract"
            default = _list_default(resource_type, name)
            if default is None:
                raise ConfigRequestError(
                    ErrorCode.INVALID_REQUEST,
                    f"Config value {verb} is not allowed for config key: {name}",
                )
            old = props.get(name, default) or ""
            items = [v.strip() for v in old.split(",") if v.strip()]
            given = [v.strip() for v in value.split(",") if v.strip()]
            if operation == APPEND:
                items += [v for v in dict.fromkeys(given) if v not in items]
            else:
                items = [v for v in items if v not in given]
            props[name] = ",".join(items)
        else:
            raise ConfigRequestError(
                ErrorCode.INVALID_REQUEST, f"Unknown config operation {operation} for key {name}"
            )
    return props


Planner = Callable[[int, dict[str, str]], dict[str, str]]


async def _alter_topic(broker, name: str, plan: Planner, validate_only: bool) -> None:
    if name not in broker.metadata.topics:
        raise ConfigRequestError(
            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, f"The topic '{name}' does not exist."
        )
    current = await _zk(broker.zk.entity_config, "topics", name)
    new = plan(TOPIC, current)
    try:
        validate_topic_config(new, broker.config.log_config())
    except LogConfigError as error:
        raise ConfigRequestError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid config value for resource {resource_text(TOPIC, name)}: {error}",
        ) from None
    if not validate_only:
        logger.info("updating topic %s with new configuration %s", name, new)
        await _zk(broker.zk.set_entity_config, "topics", name, new)


def _scala_set(names) -> str:
    return f"Set({', '.join(sorted(names))})"


def _check_broker_keys(new: dict[str, str], per_broker: bool) -> str | None:
    """Kafka's checks of a dynamic broker config set: the problem, or None."""
    known = {k: key for k in new if (key := config_key_of(k)) is not None}
    read_only = [k for k, key in known.items() if key.scope is Scope.READ_ONLY]
    if read_only:
        return f"Cannot update these configs dynamically: {_scala_set(read_only)}"
    security = [k for k in known if k.startswith("ssl.")]
    if security:
        return (
            "These security configs can be dynamically updated only per-listener using the "
            f"listener prefix: {_scala_set(security)}"
        )
    if not per_broker:
        per = [k for k, key in known.items() if key.scope is Scope.PER_BROKER]
        if per:
            return (
                "Cannot update these configs at default cluster level, broker id must be "
                f"specified: {_scala_set(per)}"
            )
    return None


async def _alter_broker(broker, name: str, plan: Planner, validate_only: bool) -> None:
    broker_id = named_broker_id(broker.broker_id, name, empty_allowed=True, expectation="")
    per_broker = broker_id is not None
    cluster, mine = await _zk(broker.zk.broker_configs, broker.broker_id)
    # A draining entry of a dir this broker no longer has (the broker ignores it) goes
    # with the next change: left in, it would fail the validation of every change.
    mine, _ = broker.config.without_stale_draining(mine)
    try:  # passwords are stored encoded (password.encoder.secret)
        cluster = decode_passwords(broker.config, cluster)
        mine = decode_passwords(broker.config, mine)
    except ConfigError as error:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST,
            f"Invalid config value for resource {resource_text(BROKER, name)}: {error}",
        ) from None
    new = plan(BROKER, mine if per_broker else cluster)
    problem = _check_broker_keys(new, per_broker)
    if problem is None:
        try:
            config = broker.config.with_dynamic(
                cluster if per_broker else new, new if per_broker else mine
            )
            stored = encode_passwords(broker.config, new)
        except (ConfigError, LogConfigError) as error:
            problem = str(error)
    if problem is not None:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST,
            f"Invalid config value for resource {resource_text(BROKER, name)}: {problem}",
        )
    try:  # a listener's new keystore or truststore must load (and its key match)
        broker.listener_security.checked(config)
    except ConfigError as error:
        raise ConfigRequestError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid config value for resource {resource_text(BROKER, name)}: {error}",
        ) from None
    if not validate_only:
        entity = str(broker_id) if per_broker else DEFAULT_ENTITY
        logger.info("updating broker config %s with new configuration %s", entity, stored)
        await _zk(broker.zk.set_entity_config, "brokers", entity, stored)


async def _alter_resource(broker, resource, plan: Planner, validate_only: bool, operations=None):
    kind, name = resource.resource_type, resource.resource_name
    if kind == TOPIC:
        await _alter_topic(broker, name, plan, validate_only)
    elif kind == BROKER:
        await _alter_broker(broker, name, plan, validate_only)
    elif kind == BROKER_LOGGER and operations is not None:
        alter_loggers(broker.broker_id, name, operations, validate_only)
    else:
        kind_name = resource_type_name(kind)
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST,
            f"AlterConfigs is only supported for topics and brokers, but resource type is "
            f"{kind_name}",
        )


def _response_entry(response_class_, resource, error: ConfigRequestError | None):
    return response_class_.AlterConfigsResourceResponse(
        error_code=error.code if error else ErrorCode.NONE,
        error_message=error.message if error else None,
        resource_type=resource.resource_type,
        resource_name=resource.resource_name,
    )


async def handle_alter_configs(broker, header, request, context):
    responses = []
    for resource in request.resources:
        error = None
        try:
            nulls = [c.name for c in resource.configs if c.value is None]
            if nulls:
                raise ConfigRequestError(
                    ErrorCode.INVALID_REQUEST, f"Null value not supported for : {','.join(nulls)}"
                )
            replacement = {c.name: c.value for c in resource.configs}
            await _alter_resource(
                broker,
                resource,
                lambda _kind, _current, replacement=replacement: replacement,
                request.validate_only,
            )
        except ConfigRequestError as failure:
            error = failure
        responses.append(_response_entry(AlterConfigsResponse, resource, error))
    return AlterConfigsResponse(responses=responses)


async def handle_incremental_alter_configs(broker, header, request, context):
    responses = []
    for resource in request.resources:
        error = None
        operations = [(c.name, c.config_operation, c.value) for c in resource.configs]
        try:
            named = Counter(name for name, _, _ in operations)
            duplicates = sorted(name for name, count in named.items() if count > 1)
            if duplicates:
                raise ConfigRequestError(
                    ErrorCode.INVALID_REQUEST,
                    f"Error due to duplicate config keys : {','.join(duplicates)}",
                )
            nulls = [
                f"{operation_name(op)}:{name}"
                for name, op, value in operations
                if value is None and op != DELETE
            ]
            if nulls:
                raise ConfigRequestError(
                    ErrorCode.INVALID_REQUEST, f"Null value not supported for : {','.join(nulls)}"
                )
            await _alter_resource(
                broker,
                resource,
                lambda kind, current, operations=operations: apply_incremental(
                    kind, current, operations
                ),
                request.validate_only,
                operations,
            )
        except ConfigRequestError as failure:
            error = failure
        responses.append(_response_entry(IncrementalAlterConfigsResponse, resource, error))
    return IncrementalAlterConfigsResponse(responses=responses)
