"""Listeners as Kafka configures them: ``listeners`` (``NAME://host:port``), each name's
security protocol from ``listener.security.protocol.map``, the inter-broker listener
(``inter.broker.listener.name``, or the listener named after
``security.inter.broker.protocol``: one or the other), ``control.plane.listener.name``
(the controller's requests), and a listener's own settings: a key with the
``listener.name.<lower-case name>.`` prefix over the same key without it (a SASL key may
carry the mechanism too: ``listener.name.<name>.<mechanism>.<key>``).

:func:`check_listeners` holds a configuration to Kafka 3.9's rules, with its messages.
A configuration is anything with ``config[key]`` and ``config.layers(key)`` (the values
set, highest precedence first, the default last): :class:`tidelog.server.config.BrokerConfig`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

from tidelog.protocol.admin_enums import ConfigSource
from tidelog.security.listener_configs import SECURITY_PROTOCOLS, SSL_KEYS
from tidelog.server.config_key import ConfigError

__all__ = [
    "ListenerSpec",
    "check_listeners",
    "control_plane_listener",
    "inter_broker_listener",
    "listener_settings",
    "listener_specs",
    "parse_listener",
    "prefixed_key_base",
    "protocol_map",
    "ssl_settings",
]

_PREFIX = re.compile(r"listener\.name\.([a-z0-9_]+)\.(.+)", re.ASCII)
TLS_PROTOCOLS = ("SSL", "SASL_SSL")


class Settings(Protocol):
    def __getitem__(self, key: str) -> object: ...

    def layers(self, key: str) -> list[tuple[ConfigSource, object]]: ...


@dataclass(frozen=True)
class ListenerSpec:
    name: str  # upper case, as Kafka normalises it
    host: str  # empty: every interface
    port: int
    security_protocol: str

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in TLS_PROTOCOLS


def parse_listener(item: str) -> tuple[str, str, int]:
    """``NAME://host:port`` → (name, host, port); an empty host means all interfaces."""
    match = re.fullmatch(r"([A-Za-z0-9_]+)://(\[[^\]]*\]|[^:]*):(\d+)", item.strip())
    if not match:
        raise ConfigError(f"listener {item!r} is not NAME://host:port")
    host = match[2].strip("[]")
    return match[1].upper(), host, int(match[3])


def prefixed_key_base(key: str, known: Mapping[str, object]) -> str | None:
    """The key a ``listener.name.<name>.`` key sets for one listener (after a SASL
    mechanism's segment too, if the rest is a known key), or None."""
    match = _PREFIX.fullmatch(key)
    if match is None:
        return None
    rest = match[2]
    if rest in known:
        return rest
    _, _, after_mechanism = rest.partition(".")
    return after_mechanism if after_mechanism in known else None


def protocol_map(text: str) -> dict[str, str]:
    """``listener.security.protocol.map`` → {LISTENER: PROTOCOL}."""
    mapping = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        name, sep, protocol = entry.partition(":")
        protocol = protocol.strip().upper()
        if not sep or not name.strip() or protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"Invalid value {text} for configuration listener.security.protocol.map: "
                f"entry {entry!r} is not LISTENER:PROTOCOL with a protocol of "
                f"{', '.join(SECURITY_PROTOCOLS)}"
            )
        mapping[name.strip().upper()] = protocol
    return mapping


def _specs(config: Settings, key: str) -> list[ListenerSpec]:
    protocols = protocol_map(str(config["listener.security.protocol.map"]))
    specs = []
    for item in config[key] or []:
        name, host, port = parse_listener(item)
        if name not in protocols:
            raise ConfigError(f"No security protocol defined for listener {name}")
        specs.append(ListenerSpec(name, host, port, protocols[name]))
    return specs


def listener_specs(config: Settings, *, advertised: bool = False) -> list[ListenerSpec]:
    """The listeners (or those advertised: ``advertised.listeners``, else the same)."""
    if advertised and config["advertised.listeners"]:
        return _specs(config, "advertised.listeners")
    return _specs(config, "listeners")


def _is_set(config: Settings, key: str) -> bool:
    return config.layers(key)[0][0] is not ConfigSource.DEFAULT_CONFIG


def inter_broker_listener(config: Settings) -> str:
    """The name of the listener brokers reach each other on."""
    name = config["inter.broker.listener.name"]
    if name:
        return str(name).upper()
    return str(config["security.inter.broker.protocol"])


def control_plane_listener(config: Settings) -> str:
    """The listener the controller's requests go to: ``control.plane.listener.name``,
    else the inter-broker listener."""
    name = config["control.plane.listener.name"]
    return str(name).upper() if name else inter_broker_listener(config)


def check_listeners(config: Settings) -> None:
    """Kafka's rules between ``listeners``, ``advertised.listeners``, the protocol map,
    the inter-broker and control-plane listeners."""
    listeners = listener_specs(config)
    text = ",".join(config["listeners"])
    names = [s.name for s in listeners]
    if len(set(names)) != len(names):
        raise ConfigError(f"Each listener must have a different name, listeners: {text}")
    ports = [s.port for s in listeners if s.port]
    if len(set(ports)) != len(ports):
        raise ConfigError(f"Each listener must have a different port, listeners: {text}")
    advertised = [s.name for s in listener_specs(config, advertised=True)]
    if not set(advertised) <= set(names):
        raise ConfigError(
            "advertised.listeners listener names must be equal to or a subset of the ones "
            f"defined in listeners. Found {','.join(advertised)}. The valid options based on "
            f"the current configuration are {','.join(names)}"
        )
    if _is_set(config, "inter.broker.listener.name") and _is_set(
        config, "security.inter.broker.protocol"
    ):
        raise ConfigError(
            "Only one of inter.broker.listener.name and security.inter.broker.protocol "
            "should be set."
        )
    inter_broker = inter_broker_listener(config)
    if inter_broker not in advertised:
        chosen_by = (
            ""
            if config["inter.broker.listener.name"]
            else f" (security.inter.broker.protocol={inter_broker} names listener {inter_broker})"
        )
        raise ConfigError(
            "inter.broker.listener.name must be a listener name defined in "
            f"advertised.listeners{chosen_by}. The valid options based on currently "
            f"configured listeners are {','.join(advertised)}"
        )
    control_plane = config["control.plane.listener.name"]
    if control_plane:
        control_plane = str(control_plane).upper()
        if control_plane not in names:
            raise ConfigError(
                f"control.plane.listener.name must be a listener name defined in listeners. "
                f"The valid options based on currently configured listeners are "
                f"{','.join(names)}"
            )
        if control_plane == inter_broker:
            raise ConfigError(
                "control.plane.listener.name, when defined, should have a different value "
                f"from the inter broker listener name. Currently they both have the value "
                f"{control_plane}"
            )


def listener_settings(config: Settings, listener: str, keys: list[str]) -> dict[str, object]:
    """``keys`` as one listener sees them: the prefixed value where one is set."""
    prefix = f"listener.name.{listener.lower()}."
    settings = {}
    for key in keys:
        layers = config.layers(prefix + key)
        own = layers[0][0] is not ConfigSource.DEFAULT_CONFIG
        settings[key] = layers[0][1] if own else config[key]
    return settings


def ssl_settings(config: Settings, listener: str) -> dict[str, object]:
    """A listener's ``ssl.*`` settings (see :mod:`tidelog.security.tls`)."""
    return listener_settings(config, listener, [key.name for key in SSL_KEYS])
