"""How a client connects to a broker: Kafka's ``security.protocol`` with its TLS context
and SASL credentials, read from Kafka's client properties (a tool's
``--command-config``) or, for the broker's own connections to other brokers, from the
inter-broker listener's settings.

Client properties read: ``security.protocol`` (PLAINTEXT by default), the ``ssl.*`` keys
of :mod:`tidelog.security.tls` (truststore, keystore for a client certificate,
``ssl.endpoint.identification.algorithm``, protocols, suites), ``sasl.mechanism``
(GSSAPI by default, as in Kafka: tidelog speaks PLAIN and SCRAM-SHA-256/512) and
``sasl.jaas.config`` (``username`` and ``password`` options of the login module).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass

from tidelog.security.jaas import parse_jaas_config
from tidelog.security.listener_configs import SECURITY_PROTOCOLS, SSL_KEYS
from tidelog.security.listeners import (
    inter_broker_listener,
    listener_settings,
    listener_specs,
    ssl_settings,
)
from tidelog.security.tls import client_context
from tidelog.server.config_key import ConfigError

__all__ = ["PLAINTEXT", "ClientSecurity"]

_SASL_PROTOCOLS = ("SASL_PLAINTEXT", "SASL_SSL")
_TLS_PROTOCOLS = ("SSL", "SASL_SSL")


def _credentials(jaas_config: str | None, where: str) -> tuple[str, str]:
    if not jaas_config:
        raise ConfigError(f"{where}: SASL needs sasl.jaas.config with a username and password")
    options = parse_jaas_config(jaas_config).options
    if "username" not in options or "password" not in options:
        raise ConfigError(f"{where}: sasl.jaas.config has no username and password options")
    return options["username"], options["password"]


@dataclass(frozen=True)
class ClientSecurity:
    protocol: str = "PLAINTEXT"
    ssl_context: ssl.SSLContext | None = None
    sasl_mechanism: str | None = None
    sasl_username: str | None = None
    sasl_password: str | None = None

    @property
    def uses_tls(self) -> bool:
        return self.ssl_context is not None

    @property
    def uses_sasl(self) -> bool:
        return self.sasl_mechanism is not None

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> ClientSecurity:
        """Kafka client properties → how to connect; ConfigError (a ValueError) names
        the property that cannot be used."""
        protocol = properties.get("security.protocol", "PLAINTEXT").strip().upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ConfigError(
                f"Invalid value {protocol} for configuration security.protocol: String must "
                f"be one of: {', '.join(SECURITY_PROTOCOLS)}"
            )
        context = None
        if protocol in _TLS_PROTOCOLS:
            settings: dict[str, object] = {}
            for key in SSL_KEYS:
                if key.name in properties:
                    settings[key.name] = key.parse(properties[key.name])
            context = client_context(settings)
        if protocol not in _SASL_PROTOCOLS:
            return cls(protocol, context)
        mechanism = properties.get("sasl.mechanism", "GSSAPI").strip()
        username, password = _credentials(properties.get("sasl.jaas.config"), "client")
        return cls(protocol, context, mechanism, username, password)

    @classmethod
    def inter_broker(cls, config) -> ClientSecurity:
        """How this broker reaches others (:class:`~tidelog.server.config.BrokerConfig`):
        the inter-broker listener's protocol, its ``ssl.*`` settings as a client's (its
        keystore is the broker's certificate, its truststore checks the other's), and for
        SASL ``sasl.mechanism.inter.broker.protocol`` with the credentials of the
        listener's ``sasl.jaas.config`` for that mechanism."""
        return cls.for_listener(config, inter_broker_listener(config))

    @classmethod
    def for_listener(cls, config, listener: str) -> ClientSecurity:
        """How to reach a broker's ``listener`` with this broker's settings of it."""
        specs = listener_specs(config, advertised=True)
        protocol = next((s.security_protocol for s in specs if s.name == listener), "PLAINTEXT")
        context = None
        if protocol in _TLS_PROTOCOLS:
            context = client_context(ssl_settings(config, listener))
        if protocol not in _SASL_PROTOCOLS:
            return cls(protocol, context)
        mechanism = str(config["sasl.mechanism.inter.broker.protocol"])
        prefix = f"listener.name.{listener.lower()}.{mechanism.lower()}."
        jaas = listener_settings(config, listener, ["sasl.jaas.config"])["sasl.jaas.config"]
        own = config.layers(prefix + "sasl.jaas.config")
        if len(own) > 1:
            jaas = own[0][1]
        username, password = _credentials(jaas, f"listener {listener}")
        return cls(protocol, context, mechanism, username, password)


PLAINTEXT = ClientSecurity()
"""A plain TCP connection, as every connection was before security."""
