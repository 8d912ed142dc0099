"""DescribeConfigs, AlterConfigs and IncrementalAlterConfigs, for topics and brokers.

Topic overrides live in ``/config/topics/<topic>``, dynamic broker configs in
``/config/brokers/<id>`` (this broker) and ``/config/brokers/<default>`` (cluster-wide,
an empty resource name); every write is announced under ``/config/changes``, which the
brokers follow to apply it. Reads go to ZooKeeper too, so a describe right after an
alter sees it.

Describing follows Kafka's ZooKeeper-mode broker:

* a topic lists every topic config with the value in force. Its synonyms are the topic's
  own override (DYNAMIC_TOPIC_CONFIG), then the broker keys it inherits from, grouped by
  source (per-broker dynamic, cluster-wide dynamic, static, default), and starting at the
  topic config's primary broker key: ``retention.ms`` inherits from
  ``log.retention.ms``, ``log.retention.minutes`` and ``log.retention.hours``, and is
  reported DEFAULT_CONFIG with no synonyms until ``log.retention.ms`` itself is set
  somewhere, exactly as Kafka reports it. The source is the first synonym's.
* a broker (its id) lists every key of ``BROKER_CONFIGS`` with its value in force, null
  for sensitive ones; the empty name lists the cluster-wide dynamic configs only.

Altering validates first: a topic's new set through ``LogConfig.from_properties`` and
its throttled-replicas lists (``*`` or ``partition:broker,...``) (INVALID_CONFIG), a
broker's new set against the keys' scopes (read-only keys, per-broker keys at the
cluster level: INVALID_REQUEST, as Kafka answers) and by building the configuration it
would make (INVALID_REQUEST). AlterConfigs replaces an entity's whole
set; IncrementalAlterConfigs applies SET, DELETE, APPEND and SUBTRACT (list keys) to the
stored one.
"""

from __future__ import annotations

import asyncio
import enum
import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal

from tidelog.controller.zk_data import DEFAULT_ENTITY
from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.replication.quota import (
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    ThrottledReplicasError,
    parse_throttled_replicas,
)
from tidelog.server.config import BROKER_CONFIGS, BrokerConfig, ConfigError, ConfigSource, Scope
from tidelog.server.topic_names import topic_name_error
from tidelog.storage.config import LogConfig, LogConfigError

__all__ = [
    "TOPIC_CONFIGS",
    "ConfigRequestError",
    "ConfigType",
    "apply_incremental",
    "broker_synonyms",
    "describe_broker",
    "describe_topic",
    "format_value",
    "handle_alter_configs",
    "handle_describe_configs",
    "handle_incremental_alter_configs",
]

logger = logging.getLogger(__name__)

DescribeConfigsResponse = response_class(ApiKey.DESCRIBE_CONFIGS)
AlterConfigsResponse = response_class(ApiKey.ALTER_CONFIGS)
IncrementalAlterConfigsResponse = response_class(ApiKey.INCREMENTAL_ALTER_CONFIGS)

TOPIC, BROKER, BROKER_LOGGER = 2, 4, 8
_RESOURCE_NAMES = {TOPIC: "TOPIC", BROKER: "BROKER", BROKER_LOGGER: "BROKER_LOGGER"}
SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
_OPERATION_NAMES = {SET: "SET", DELETE: "DELETE", APPEND: "APPEND", SUBTRACT: "SUBTRACT"}
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


_BROKER_TYPES = {
    "int": ConfigType.INT,
    "long": ConfigType.LONG,
    "double": ConfigType.DOUBLE,
    "boolean": ConfigType.BOOLEAN,
    "string": ConfigType.STRING,
    "list": ConfigType.LIST,
    "password": ConfigType.PASSWORD,
}


@dataclass(frozen=True)
class TopicKey:
    type: ConfigType
    synonym: str | None  # the broker key whose value is the topic's default
    doc: str


_T = ConfigType
TOPIC_CONFIGS: dict[str, TopicKey] = {
    "cleanup.policy": TopicKey(
        _T.LIST, "log.cleanup.policy", "delete and/or compact: how old segments are retired."
    ),
    "compression.type": TopicKey(
        _T.STRING, "compression.type", "Codec of stored batches; producer keeps the producer's."
    ),
    "compression.gzip.level": TopicKey(
        _T.INT, "compression.gzip.level", "gzip level where the broker compresses (-1: zlib's)."
    ),
    "compression.lz4.level": TopicKey(
        _T.INT, "compression.lz4.level", "lz4 level where the broker compresses (1-17)."
    ),
    "compression.zstd.level": TopicKey(
        _T.INT, "compression.zstd.level", "zstd level where the broker compresses."
    ),
    "local.retention.bytes": TopicKey(
        _T.LONG,
        "log.local.retention.bytes",
        "Tiered storage's local retention in bytes (-2: retention.bytes); no remote tier here.",
    ),
    "local.retention.ms": TopicKey(
        _T.LONG,
        "log.local.retention.ms",
        "Tiered storage's local retention in ms (-2: retention.ms); no remote tier here.",
    ),
    "message.format.version": TopicKey(
        _T.STRING,
        "log.message.format.version",
        "Deprecated: ignored, every log is record batch v2 (old formats are converted).",
    ),
    "remote.storage.enable": TopicKey(
        _T.BOOLEAN, None, "Tiered storage for the topic: not available on these brokers."
    ),
    "delete.retention.ms": TopicKey(
        _T.LONG, "log.cleaner.delete.retention.ms", "How long tombstones survive compaction."
    ),
    "file.delete.delay.ms": TopicKey(
        _T.LONG, "log.segment.delete.delay.ms", "Delay before a retired segment file is removed."
    ),
    "flush.messages": TopicKey(
        _T.LONG, "log.flush.interval.messages", "Records appended between forced fsyncs."
    ),
    "flush.ms": TopicKey(_T.LONG, "log.flush.interval.ms", "Time between forced fsyncs."),
    "follower.replication.throttled.replicas": TopicKey(
        _T.LIST, None, "Replicas throttled on the follower side (partition:broker,...)."
    ),
    "index.interval.bytes": TopicKey(
        _T.INT, "log.index.interval.bytes", "Bytes between two offset index entries."
    ),
    "leader.replication.throttled.replicas": TopicKey(
        _T.LIST, None, "Replicas throttled on the leader side (partition:broker,...)."
    ),
    "max.compaction.lag.ms": TopicKey(
        _T.LONG, "log.cleaner.max.compaction.lag.ms", "Longest a record stays uncompacted."
    ),
    "max.message.bytes": TopicKey(
        _T.INT, "message.max.bytes", "Largest record batch the topic accepts."
    ),
    "message.downconversion.enable": TopicKey(
        _T.BOOLEAN,
        "log.message.downconversion.enable",
        "Whether old consumers get down-converted batches.",
    ),
    "message.timestamp.after.max.ms": TopicKey(
        _T.LONG,
        "log.message.timestamp.after.max.ms",
        "How far a record's timestamp may lie ahead of the broker's clock.",
    ),
    "message.timestamp.before.max.ms": TopicKey(
        _T.LONG,
        "log.message.timestamp.before.max.ms",
        "How far a record's timestamp may lie behind the broker's clock.",
    ),
    "message.timestamp.difference.max.ms": TopicKey(
        _T.LONG,
        "log.message.timestamp.difference.max.ms",
        "Largest difference between a record's timestamp and the broker's clock.",
    ),
    "message.timestamp.type": TopicKey(
        _T.STRING, "log.message.timestamp.type", "CreateTime or LogAppendTime."
    ),
    "min.cleanable.dirty.ratio": TopicKey(
        _T.DOUBLE,
        "log.cleaner.min.cleanable.ratio",
        "Dirty share of the log above which it is compacted.",
    ),
    "min.compaction.lag.ms": TopicKey(
        _T.LONG, "log.cleaner.min.compaction.lag.ms", "Shortest a record stays uncompacted."
    ),
    "min.insync.replicas": TopicKey(
        _T.INT, "min.insync.replicas", "In-sync replicas an acks=all write needs."
    ),
    "preallocate": TopicKey(
        _T.BOOLEAN, "log.preallocate", "Whether new segment files are preallocated."
    ),
    "retention.bytes": TopicKey(
        _T.LONG, "log.retention.bytes", "Largest size of a partition before old segments go."
    ),
    "retention.ms": TopicKey(
        _T.LONG, "log.retention.ms", "Longest a segment is kept before it is deleted."
    ),
    "segment.bytes": TopicKey(_T.INT, "log.segment.bytes", "Size at which a segment rolls."),
    "segment.index.bytes": TopicKey(
        _T.INT, "log.index.size.max.bytes", "Size of a segment's preallocated index files."
    ),
    "segment.jitter.ms": TopicKey(
        _T.LONG, "log.roll.jitter.ms", "Random jitter subtracted from segment.ms."
    ),
    "segment.ms": TopicKey(_T.LONG, "log.roll.ms", "Age at which a segment rolls."),
    "unclean.leader.election.enable": TopicKey(
        _T.BOOLEAN,
        "unclean.leader.election.enable",
        "Whether an out-of-sync replica may become leader.",
    ),
}

# Broker keys that set one value in different units (Kafka's brokerConfigSynonyms),
# highest precedence first.
_SYNONYM_GROUPS = (
    ("log.roll.ms", "log.roll.hours"),
    ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
)
_BROKER_SYNONYMS = {name: group for group in _SYNONYM_GROUPS for name in group}
# log.flush.interval.ms falls back to log.flush.scheduler.interval.ms (not the reverse).
_BROKER_SYNONYMS["log.flush.interval.ms"] = (
    "log.flush.interval.ms",
    "log.flush.scheduler.interval.ms",
)
_SOURCE_ORDER = (
    ConfigSource.DYNAMIC_BROKER_CONFIG,
    ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG,
    ConfigSource.STATIC_BROKER_CONFIG,
    ConfigSource.DEFAULT_CONFIG,
)
_LOG4J_LEVELS = ("TRACE", "DEBUG", "INFO", "WARN", "ERROR", "FATAL")
_PYTHON_LEVELS = {"TRACE": 5, "DEBUG": 10, "INFO": 20, "WARN": 30, "ERROR": 40, "FATAL": 50}


class ConfigRequestError(Exception):
    def __init__(self, code: ErrorCode, message: str | None = None):
        super().__init__(message)
        self.code = code
        self.message = message


# -- values -----------------------------------------------------------------------------


def _java_double(value: float) -> str:
    """Java's Double.toString: plain between 1e-3 and 1e7, else ``1.0E-4`` style."""
    if value != value:
        return "NaN"
    if value in (float("inf"), float("-inf")):
        return "Infinity" if value > 0 else "-Infinity"
    if value == 0 or 1e-3 <= abs(value) < 1e7:
        return repr(value)
    sign, digits, exponent = Decimal(repr(value)).normalize().as_tuple()
    text = "".join(map(str, digits))
    return f"{'-' if sign else ''}{text[0]}.{text[1:] or '0'}E{len(text) - 1 + exponent}"


def format_value(value: object) -> str | None:
    """A config value as Kafka prints it (ConfigDef.convertToString)."""
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list | tuple):
        return ",".join(str(v) for v in value)
    if isinstance(value, float):
        return _java_double(value)
    return str(value)


@dataclass(frozen=True)
class Synonym:
    name: str
    value: str | None
    source: ConfigSource


def broker_synonyms(config: BrokerConfig, name: str, sensitive: bool) -> list[Synonym]:
    """Every value set for broker key ``name`` or the keys that set it in other units,
    grouped by source (highest precedence first), starting at ``name`` itself."""
    names = _BROKER_SYNONYMS.get(name, (name,))
    found: list[Synonym] = []
    for source in _SOURCE_ORDER:
        for synonym in names:
            if synonym not in BROKER_CONFIGS:
                continue
            for layer, value in config.layers(synonym):
                if layer is source and value is not None:
                    found.append(
                        Synonym(synonym, None if sensitive else format_value(value), layer)
                    )
    while found and found[0].name != name:  # Kafka drops what precedes the key itself
        found.pop(0)
    return found


def _log_config(config: BrokerConfig, overrides: dict[str, str]) -> tuple[LogConfig, set[str]]:
    """The topic's config in force, and the overrides that took part in it (a stored
    override that no longer parses is left out rather than failing the describe)."""
    base = config.log_config()
    try:
        return LogConfig.from_properties(overrides, base=base), set(overrides)
    except LogConfigError:
        pass
    usable = {}
    for key, value in overrides.items():
        try:
            LogConfig.from_properties({key: value}, base=base)
        except LogConfigError:
            logger.warning("ignoring the invalid topic override %s=%r", key, value)
            continue
        usable[key] = value
    try:
        return LogConfig.from_properties(usable, base=base), set(usable)
    except LogConfigError:
        return base, set()


def _entry(name, value, source, synonyms, *, sensitive, read_only, kind, doc, options):
    synonyms_out = [
        DescribeConfigsResponse.DescribeConfigsSynonym(name=s.name, value=s.value, source=s.source)
        for s in synonyms
    ]
    return DescribeConfigsResponse.DescribeConfigsResourceResult(
        name=name,
        value=value,
        read_only=read_only,
        is_default=source is ConfigSource.DEFAULT_CONFIG,
        config_source=int(source),
        is_sensitive=sensitive,
        synonyms=synonyms_out if options.include_synonyms else [],
        config_type=int(kind),
        documentation=(doc or None) if options.include_documentation else None,
    )


@dataclass(frozen=True)
class DescribeOptions:
    keys: frozenset[str] | None = None  # None: every key
    include_synonyms: bool = False
    include_documentation: bool = False

    def wants(self, name: str) -> bool:
        return self.keys is None or name in self.keys


def describe_topic(config: BrokerConfig, overrides: dict[str, str], options: DescribeOptions):
    log_config, applied = _log_config(config, overrides)
    entries = []
    for name, key in sorted(TOPIC_CONFIGS.items()):
        if not options.wants(name):
            continue
        value = format_value(getattr(log_config, name.replace(".", "_")))
        synonyms = []
        if name in applied:
            synonyms.append(Synonym(name, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        if key.synonym is not None and key.synonym in BROKER_CONFIGS:
            synonyms += broker_synonyms(config, key.synonym, sensitive=False)
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(
            _entry(
                name,
                value,
                source,
                synonyms,
                sensitive=False,
                read_only=False,
                kind=key.type,
                doc=key.doc,
                options=options,
            )
        )
    return entries


def describe_broker(config: BrokerConfig, per_broker: bool, options: DescribeOptions):
    """This broker's keys (``per_broker``), or the cluster-wide dynamic ones only."""
    entries = []
    for name, key in sorted(BROKER_CONFIGS.items()):
        if not options.wants(name):
            continue
        if per_broker:
            value = config[name]
        else:
            layer = [
                v for s, v in config.layers(name) if s is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
            if not layer:
                continue
            value = layer[0]
        synonyms = broker_synonyms(config, name, key.sensitive)
        if not per_broker:
            synonyms = [
                s for s in synonyms if s.source is ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG
            ]
        source = synonyms[0].source if synonyms else ConfigSource.DEFAULT_CONFIG
        entries.append(
            _entry(
                name,
                None if key.sensitive else format_value(value),
                source,
                synonyms,
                sensitive=key.sensitive,
                read_only=key.scope is Scope.READ_ONLY,
                kind=_BROKER_TYPES.get(key.type, ConfigType.UNKNOWN),
                doc=key.doc,
                options=options,
            )
        )
    return entries


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
    return [
        DescribeConfigsResponse.DescribeConfigsResourceResult(
            name=name,
            value=_log4j_level(item),
            read_only=False,
            config_source=DYNAMIC_BROKER_LOGGER_CONFIG,
            is_sensitive=False,
            synonyms=[],
            config_type=int(ConfigType.STRING),
        )
        for name, item in _loggers().items()
        if options.wants(name)
    ]


# -- resources ----------------------------------------------------------------------------


def _resource_text(resource_type: int, name: str) -> str:
    kind = _RESOURCE_NAMES.get(resource_type, str(resource_type))
    return f"ConfigResource(type={kind}, name='{name}')"


def _broker_id(broker, name: str, *, empty_allowed: bool, expectation: str) -> int | None:
    """The broker id a BROKER / BROKER_LOGGER resource names (None: the cluster
    default); it must be this broker's."""
    if not name:
        if empty_allowed:
            return None
        raise ConfigRequestError(ErrorCode.INVALID_REQUEST, "Broker id must not be empty")
    try:
        broker_id = int(name)
    except ValueError:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST, f"Broker id must be an integer, but it is: {name}"
        ) from None
    if broker_id != broker.broker_id:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST,
            f"Unexpected broker id, expected {broker.broker_id}{expectation}, but received {name}",
        )
    return broker_id


async def _zk(function, *args):
    return await asyncio.to_thread(function, *args)


async def _stored_broker_config(broker) -> BrokerConfig:
    """The broker's configuration with the dynamic configs now in ZooKeeper (what it is
    about to apply, if the change notification is still on its way)."""
    cluster, mine = await _zk(broker.zk.broker_configs, broker.broker_id)
    mine, _ = broker.config.without_stale_draining(mine)  # as the broker applies them
    try:
        return broker.config.with_dynamic(cluster, mine)
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
        broker_id = _broker_id(broker, name, empty_allowed=True, expectation=" or empty string")
        return describe_broker(await stored(), broker_id is not None, options)
    if kind == BROKER_LOGGER:
        _broker_id(broker, name, empty_allowed=False, expectation="")
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
        LogConfig.from_properties(new, base=broker.config.log_config())
        for key in (LEADER_THROTTLED_REPLICAS, FOLLOWER_THROTTLED_REPLICAS):
            if key in new:
                parse_throttled_replicas(key, new[key])
    except (LogConfigError, ThrottledReplicasError) as error:
        raise ConfigRequestError(
            ErrorCode.INVALID_CONFIG,
            f"Invalid config value for resource {_resource_text(TOPIC, name)}: {error}",
        ) from None
    if not validate_only:
        logger.info("updating topic %s with new configuration %s", name, new)
        await _zk(broker.zk.set_entity_config, "topics", name, new)


def _scala_set(names) -> str:
    return f"Set({', '.join(sorted(names))})"


def _check_broker_keys(new: dict[str, str], per_broker: bool) -> str | None:
    """Kafka's checks of a dynamic broker config set: the problem, or None."""
    known = {k: BROKER_CONFIGS[k] for k in new if k in BROKER_CONFIGS}
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
    broker_id = _broker_id(broker, name, empty_allowed=True, expectation="")
    per_broker = broker_id is not None
    cluster, mine = await _zk(broker.zk.broker_configs, broker.broker_id)
    # A draining entry of a dir this broker no longer has (the broker ignores it) goes
    # with the next change: left in, it would fail the validation of every change.
    mine, _ = broker.config.without_stale_draining(mine)
    new = plan(BROKER, mine if per_broker else cluster)
    problem = _check_broker_keys(new, per_broker)
    if problem is None:
        try:
            broker.config.with_dynamic(cluster if per_broker else new, new if per_broker else mine)
        except (ConfigError, LogConfigError) as error:
            problem = str(error)
    if problem is not None:
        raise ConfigRequestError(
            ErrorCode.INVALID_REQUEST,
            f"Invalid config value for resource {_resource_text(BROKER, name)}: {problem}",
        )
    if not validate_only:
        entity = str(broker_id) if per_broker else DEFAULT_ENTITY
        logger.info("updating broker config %s with new configuration %s", entity, new)
        await _zk(broker.zk.set_entity_config, "brokers", entity, new)


def _alter_loggers(broker, name: str, operations, validate_only: bool) -> None:
    _broker_id(broker, name, empty_allowed=False, expectation="")
    known = _loggers()
    for logger_name, operation, level in operations:
        if operation in (APPEND, SUBTRACT):
            raise ConfigRequestError(
                ErrorCode.INVALID_REQUEST,
                f"{_OPERATION_NAMES[operation]} operation is not allowed for the BROKER_LOGGER "
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
                f"Invalid config value for resource {_resource_text(BROKER_LOGGER, name)}: "
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


async def _alter_resource(broker, resource, plan: Planner, validate_only: bool, operations=None):
    kind, name = resource.resource_type, resource.resource_name
    if kind == TOPIC:
        await _alter_topic(broker, name, plan, validate_only)
    elif kind == BROKER:
        await _alter_broker(broker, name, plan, validate_only)
    elif kind == BROKER_LOGGER and operations is not None:
        _alter_loggers(broker, name, operations, validate_only)
    else:
        kind_name = _RESOURCE_NAMES.get(kind, str(kind))
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
                f"{_OPERATION_NAMES.get(op, op)}:{name}"
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
