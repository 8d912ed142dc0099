"""Broker config keys of listeners and TLS (``ssl.*``), with Kafka 3.9's types, defaults
and dynamic scope; a listener's own value is set with Kafka's ``listener.name.<name>.``
prefix (see :mod:`tidelog.security.listeners`).

Only the keys tidelog honours are here; Java's own (``ssl.provider``,
``ssl.keymanager.algorithm``, ``ssl.engine.factory.class``, ...) have no meaning for
OpenSSL and stay unknown keys."""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey, Scope
from tidelog.storage.config_values import at_least, one_of

__all__ = ["LISTENER_KEYS", "SECURITY_PROTOCOLS", "SSL_KEYS"]

_P = Scope.PER_BROKER

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")

SSL_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("ssl.protocol", "string", "TLSv1.3", _P),
    ConfigKey("ssl.enabled.protocols", "list", ["TLSv1.2", "TLSv1.3"], _P),
    ConfigKey("ssl.cipher.suites", "list", [], _P),
    ConfigKey("ssl.keystore.type", "string", "JKS", _P),
    ConfigKey("ssl.keystore.location", "string", None, _P),
    ConfigKey("ssl.keystore.password", "password", None, _P),
    ConfigKey("ssl.keystore.key", "password", None, _P),
    ConfigKey("ssl.keystore.certificate.chain", "password", None, _P),
    ConfigKey("ssl.key.password", "password", None, _P),
    ConfigKey("ssl.truststore.type", "string", "JKS", _P),
    ConfigKey("ssl.truststore.location", "string", None, _P),
    ConfigKey("ssl.truststore.password", "password", None, _P),
    ConfigKey("ssl.truststore.certificates", "password", None, _P),
    ConfigKey(
        "ssl.client.auth", "string", "none", _P, validator=one_of("required", "requested", "none")
    ),
    ConfigKey("ssl.endpoint.identification.algorithm", "string", "https", _P),
    ConfigKey("ssl.principal.mapping.rules", "string", "DEFAULT"),
)
"""The keys a listener's TLS settings are read from (each may carry the listener prefix)."""

LISTENER_KEYS: tuple[ConfigKey, ...] = (
    *SSL_KEYS,
    ConfigKey(
        "security.inter.broker.protocol",
        "string",
        "PLAINTEXT",
        validator=one_of(*SECURITY_PROTOCOLS),
    ),
    ConfigKey("control.plane.listener.name", "string", None),
    # The password encoder's (tidelog.security.password_encoder): dynamic passwords are
    # mostly listeners' stores'.
    ConfigKey("password.encoder.secret", "password", None),
    ConfigKey("password.encoder.old.secret", "password", None),
    ConfigKey("password.encoder.keyfactory.algorithm", "string", None),
    ConfigKey("password.encoder.cipher.algorithm", "string", "AES/CBC/PKCS5Padding"),
    ConfigKey("password.encoder.key.length", "int", 128, validator=at_least(8)),
    ConfigKey("password.encoder.iterations", "int", 4096, validator=at_least(1024)),
)
