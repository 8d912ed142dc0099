"""What each SASL listener serves, read from the broker's configuration as a Kafka broker
reads it.

A listener with protocol SASL_PLAINTEXT or SASL_SSL serves the mechanisms of its
``sasl.enabled.mechanisms`` (``listener.name.<l>.sasl.enabled.mechanisms`` over the
broker's). Each one needs its JAAS entry,
``listener.name.<l>.<mechanism>.sasl.jaas.config`` (mechanism in lower case); Kafka reads
no other form on the server side: an unprefixed ``sasl.jaas.config`` (or one with the
listener prefix but no mechanism) is ignored with Kafka's warning, and a mechanism
without its entry stops the start with Kafka's error (a Kafka broker would look for a
JAAS file next; tidelog reads none). PLAIN's users are its entry's ``user_<name>``
options when the login module is Kafka's ``PlainLoginModule``, as Kafka's PLAIN callback
handler reads them; SCRAM's credentials come from ZooKeeper, so its entry only has to
exist (for the inter-broker mechanism it also holds this broker's own credentials, read
by :class:`~tidelog.security.client_security.ClientSecurity`).

Served: PLAIN, SCRAM-SHA-256, SCRAM-SHA-512. A mechanism tidelog does not serve (GSSAPI,
OAUTHBEARER) refuses the start: with Kafka's missing-JAAS error when it has no entry,
which is what a SASL listener left with the default ``GSSAPI`` meets, as it would on
Kafka; with one line saying tidelog does not serve it when its entry is there.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field

from tidelog.protocol.admin_enums import ConfigSource
from tidelog.security.jaas import JaasEntry, parse_jaas_config
from tidelog.security.listeners import (
    inter_broker_listener,
    listener_settings,
    listener_specs,
)
from tidelog.security.sasl.plain import PLAIN, plain_users
from tidelog.security.scram_credentials import SCRAM_MECHANISMS
from tidelog.server.config_key import ConfigError

__all__ = [
    "PLAIN_LOGIN_MODULE",
    "SASL_PROTOCOLS",
    "SERVED_MECHANISMS",
    "SaslListener",
    "sasl_listeners",
]

logger = logging.getLogger(__name__)

SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
SERVED_MECHANISMS = (PLAIN, *SCRAM_MECHANISMS)
PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
_JAAS = "sasl.jaas.config"


@dataclass(frozen=True)
class SaslListener:
    """One SASL listener's mechanisms (in the order configured) and PLAIN's users."""

    name: str
    mechanisms: tuple[str, ...]
    plain_users: Mapping[str, str] = field(default_factory=dict)


def _set(config, key: str) -> object | None:
    """The value of ``key`` when it is set anywhere (not Kafka's default)."""
    source, value = config.layers(key)[0]
    return None if source is ConfigSource.DEFAULT_CONFIG else value


def _jaas_entry(config, listener: str, mechanism: str) -> JaasEntry:
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.{_JAAS}"
    text = _set(config, key)
    if text is None:
        if mechanism in SERVED_MECHANISMS:
            hint = f": set {key}"
        else:
            hint = f" (tidelog does not serve {mechanism}: enable {', '.join(SERVED_MECHANISMS)})"
        raise ConfigError(
            f"Could not find a 'KafkaServer' or '{listener.lower()}.KafkaServer' entry in "
            f"the JAAS configuration{hint}"
        )
    try:
        return parse_jaas_config(str(text))
    except ConfigError as error:
        raise ConfigError(f"{key}: {error}") from None


def _sasl_listener(config, listener: str) -> SaslListener:
    enabled = listener_settings(config, listener, ["sasl.enabled.mechanisms"])
    mechanisms = tuple(str(m).strip() for m in enabled["sasl.enabled.mechanisms"] or ())
    if not mechanisms:
        raise ConfigError(f"sasl.enabled.mechanisms must not be empty for SASL listener {listener}")
    users: dict[str, str] = {}
    for mechanism in mechanisms:
        entry = _jaas_entry(config, listener, mechanism)
        if mechanism not in SERVED_MECHANISMS:
            raise ConfigError(
                f"sasl.enabled.mechanisms of listener {listener}: tidelog does not serve "
                f"{mechanism} (it serves {', '.join(SERVED_MECHANISMS)})"
            )
        if mechanism == PLAIN and entry.login_module == PLAIN_LOGIN_MODULE:
            users = plain_users(entry)
    return SaslListener(listener, mechanisms, users)


def sasl_listeners(config) -> dict[str, SaslListener]:
    """The SASL listeners of a configuration (a BrokerConfig), by name; ConfigError
    (one line) when one cannot serve, or when the inter-broker listener is a SASL one
    that does not enable ``sasl.mechanism.inter.broker.protocol`` (Kafka's rule)."""
    listeners = {
        spec.name: _sasl_listener(config, spec.name)
        for spec in listener_specs(config)
        if spec.security_protocol in SASL_PROTOCOLS
    }
    inter_broker = listeners.get(inter_broker_listener(config))
    if (
        inter_broker is not None
        and config["sasl.mechanism.inter.broker.protocol"] not in inter_broker.mechanisms
    ):
        raise ConfigError(
            "sasl.mechanism.inter.broker.protocol must be included in "
            "sasl.enabled.mechanisms when SASL is used for inter-broker communication"
        )
    if listeners:
        unprefixed = [
            key
            for key in (_JAAS, *(f"listener.name.{name.lower()}.{_JAAS}" for name in listeners))
            if _set(config, key) is not None
        ]
        for key in unprefixed:
            logger.warning(
                "Server config %s should be prefixed with SASL mechanism name, ignoring config",
                key,
            )
    return listeners
