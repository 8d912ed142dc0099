"""DescribeConfigs' entries for a topic and for a broker, as Kafka's ZooKeeper-mode
broker computes them.

* a topic lists every topic config with the value in force. Its synonyms are the topic's
  own override (DYNAMIC_TOPIC_CONFIG), then the broker keys it inherits from, grouped by
  source (per-broker dynamic, cluster-wide dynamic, static, default), and starting at the
  topic config's primary broker key: ``retention.ms`` inherits from
  ``log.retention.ms``, ``log.retention.minutes`` and ``log.retention.hours``, and is
  reported DEFAULT_CONFIG with no synonyms until ``log.retention.ms`` itself is set
  somewhere, exactly as Kafka reports it. The source is the first synonym's.
* a broker (its id) lists every key of ``BROKER_CONFIGS`` with its value in force, null
  for sensitive ones; the empty name lists the cluster-wide dynamic configs only.

Values are written as Kafka prints them (:func:`format_value`).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from decimal import Decimal

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.admin_enums import ConfigSource, ConfigType
from tidelog.security.listeners import prefixed_key_base
from tidelog.server.config import BROKER_CONFIGS, BrokerConfig, Scope, config_key_of
from tidelog.storage.config import LogConfig, LogConfigError
from tidelog.storage.topic_configs import TOPIC_CONFIGS

__all__ = [
    "DescribeOptions",
    "Synonym",
    "broker_synonyms",
    "describe_broker",
    "describe_topic",
    "format_value",
]

logger = logging.getLogger(__name__)

DescribeConfigsResponse = response_class(ApiKey.DESCRIBE_CONFIGS)

_BROKER_TYPES = {
    "short": ConfigType.SHORT,
    "int": ConfigType.INT,
    "long": ConfigType.LONG,
    "double": ConfigType.DOUBLE,
    "boolean": ConfigType.BOOLEAN,
    "string": ConfigType.STRING,
    "list": ConfigType.LIST,
    "password": ConfigType.PASSWORD,
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
    base = prefixed_key_base(name, BROKER_CONFIGS)  # a listener's key: then the key
    names = (name, base) if base else _BROKER_SYNONYMS.get(name, (name,))
    found: list[Synonym] = []
    for source in _SOURCE_ORDER:
        for synonym in names:
            if config_key_of(synonym) is None:
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
    own = [(name, config_key_of(name)) for name in config.listener_keys()]
    for name, key in sorted([*BROKER_CONFIGS.items(), *own]):
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
