"""The broker's listeners' security: for each TLS listener, the context its connections
get and the principal a client certificate stands for; the context swapped at run time
when the listener's keystore or truststore changes (Kafka's dynamic ``ssl.keystore.*`` /
``ssl.truststore.*``, seed 003: short-lived certificates replaced without a restart).

The asyncio server of a listener holds one context for good (:attr:`TlsListener.front`).
Each new connection, in its ClientHello, is handed the context in force (OpenSSL's
server-name callback runs for every handshake, with or without SNI); a connection keeps
the context it started with, so swapping harms no open connection. The front context's
verification mode follows the current one, since a connection's mode is set as it is
created.
"""

from __future__ import annotations

import logging
import ssl
from collections.abc import Mapping

from cryptography import x509

from tidelog.security.listeners import ListenerSpec, listener_specs, ssl_settings
from tidelog.security.principal import KafkaPrincipal
from tidelog.security.principal_mapping import PrincipalMapper, subject_name
from tidelog.security.tls import reload_stores, server_context, store_file_times

__all__ = ["ListenerSecurity", "TlsListener"]

logger = logging.getLogger(__name__)

# The keys whose change swaps a listener's context (Kafka's reconfigurable SSL configs).
STORE_KEYS = (
    "ssl.keystore.type",
    "ssl.keystore.location",
    "ssl.keystore.password",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    "ssl.key.password",
    "ssl.truststore.type",
    "ssl.truststore.location",
    "ssl.truststore.password",
    "ssl.truststore.certificates",
)


def _stores(settings: Mapping[str, object]) -> tuple:
    """What a listener's stores are: their settings and their files' modification times
    (a store replaced in place, then set again to the same path, is read again, as in
    Kafka)."""
    return (*(settings.get(k) for k in STORE_KEYS), *store_file_times(settings))


class TlsListener:
    """One TLS listener: :attr:`front` for its server, :attr:`current` for its new
    connections, :meth:`principal_of` for the client certificates of an SSL listener."""

    def __init__(self, settings: Mapping[str, object]):
        self.stores = _stores(settings)
        self.current = server_context(settings)
        self.front = server_context(settings)
        self.front.sni_callback = self._hand_current
        self._mapper = PrincipalMapper(str(settings["ssl.principal.mapping.rules"]))

    def _hand_current(self, connection: ssl.SSLObject, _server_name, _front) -> None:
        connection.context = self.current

    def swap(self, settings: Mapping[str, object]) -> None:
        """New connections get a context from ``settings``; ConfigError (nothing swapped)
        if it cannot be made."""
        stores = _stores(settings)
        context = server_context(settings)
        self.front.verify_mode = context.verify_mode
        self.current, self.stores = context, stores

    def principal_of(self, certificate_der: bytes) -> KafkaPrincipal:
        """A client certificate's principal (ValueError when no mapping rule applies)."""
        subject = subject_name(x509.load_der_x509_certificate(certificate_der))
        return KafkaPrincipal.user(self._mapper.name(subject))


def _tls_settings(config, spec: ListenerSpec) -> dict[str, object]:
    """A TLS listener's settings; on SASL_SSL, clients are asked for a certificate only
    by the listener's own ``ssl.client.auth`` (KIP-684), never by the broker-wide one."""
    settings = ssl_settings(config, spec.name)
    if spec.security_protocol == "SASL_SSL":
        own = config.layers(f"listener.name.{spec.name.lower()}.ssl.client.auth")
        settings["ssl.client.auth"] = own[0][1] if len(own) > 1 else "none"
    return settings


class ListenerSecurity:
    """The broker's listeners with what each needs to serve: ``listeners`` in order,
    ``tls[name]`` for those with TLS."""

    def __init__(self, config):
        self.listeners: list[ListenerSpec] = listener_specs(config)
        self.tls = {
            spec.name: TlsListener(_tls_settings(config, spec))
            for spec in self.listeners
            if spec.uses_tls
        }
        self._clients: dict[str, list[ssl.SSLContext]] = {}

    def follow_client(self, listener: str, context: ssl.SSLContext | None) -> None:
        """Have a client context of the broker's own (its connections to other brokers'
        ``listener``) load that listener's stores whenever they change, so that a renewed
        certificate is also the one the broker presents to the others."""
        if context is not None:
            self._clients.setdefault(listener, []).append(context)

    def checked(self, config) -> dict[str, dict[str, object]]:
        """The TLS listeners whose stores ``config`` changes (or whose store files
        changed), with their new settings, each checked to make a context (ConfigError
        names the first that does not)."""
        changed = {}
        for spec in self.listeners:
            listener = self.tls.get(spec.name)
            settings = _tls_settings(config, spec)
            if listener is not None and _stores(settings) != listener.stores:
                server_context(settings)
                changed[spec.name] = settings
        return changed

    def reconfigure(self, config) -> list[str]:
        """Swap the contexts of the listeners whose stores ``config`` changes (or whose
        store files changed); their names. ConfigError, nothing swapped, when a new
        store cannot be used."""
        changed = self.checked(config)
        for name, settings in changed.items():
            self.tls[name].swap(settings)
            for context in self._clients.get(name, ()):
                reload_stores(context, settings)
            logger.info("listener %s: new connections get its new keystore and truststore", name)
        return sorted(changed)
