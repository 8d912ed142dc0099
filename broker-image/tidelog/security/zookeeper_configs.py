"""Broker config keys of the broker's own ZooKeeper client's security, with Kafka 3.9's
names, types and defaults: TLS to ZooKeeper (``zookeeper.ssl.*``) and ``zookeeper.set.acl``
(see :mod:`tidelog.controller.zk_security`)."""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey

__all__ = ["ZOOKEEPER_SECURITY_KEYS"]

ZOOKEEPER_SECURITY_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey(
        "zookeeper.set.acl",
        "boolean",
        False,
        doc="Create znodes so that only this broker's identity may change them.",
    ),
    ConfigKey("zookeeper.clientCnxnSocket", "string", None),
    ConfigKey("zookeeper.ssl.client.enable", "boolean", False),
    ConfigKey("zookeeper.ssl.keystore.location", "string", None),
    ConfigKey("zookeeper.ssl.keystore.password", "password", None),
    ConfigKey("zookeeper.ssl.keystore.type", "string", None),
    ConfigKey("zookeeper.ssl.truststore.location", "string", None),
    ConfigKey("zookeeper.ssl.truststore.password", "password", None),
    ConfigKey("zookeeper.ssl.truststore.type", "string", None),
    ConfigKey("zookeeper.ssl.protocol", "string", "TLSv1.2"),
    ConfigKey("zookeeper.ssl.enabled.protocols", "list", None),
    ConfigKey("zookeeper.ssl.cipher.suites", "list", None),
    ConfigKey("zookeeper.ssl.endpoint.identification.algorithm", "string", "HTTPS"),
    ConfigKey("zookeeper.ssl.crl.enable", "boolean", False),
    ConfigKey("zookeeper.ssl.ocsp.enable", "boolean", False),
)
