"""The broker's ZooKeeper client, secured as Kafka's is: TLS to ZooKeeper
(``zookeeper.ssl.client.enable`` and the ``zookeeper.ssl.*`` keys) and, with
``zookeeper.set.acl``, znodes that only this broker's identity may change.

TLS: kazoo takes a CA file and a key pair but no context, so protocols, cipher suites
and PKCS12 stores could not be honoured; :class:`_TlsHandler` opens kazoo's connections
through the context built from Kafka's keys instead. Like ZooKeeper's own client, which
makes its TLS context at each connection, it reads the stores again when their files
have changed since: a broker whose certificate was renewed in place (the operator's CA
renewal, a kubelet updating a mounted Secret) presents the new one from its next
ZooKeeper connection on, without a restart.

ACLs (Kafka's ``ZkData.defaultAcls``): with ``zookeeper.set.acl`` every znode the broker
creates gets ``CREATOR_ALL_ACL`` (all rights for the identities the session
authenticated as: with TLS, ZooKeeper's x509 provider makes that the client
certificate's subject) and, unless the path is sensitive, world-readable
``READ_ACL_UNSAFE``. Sensitive paths (users' configs with their SCRAM credentials,
brokers' configs with their passwords, delegation tokens) are readable by the creator
only. Without client authentication such ACLs cannot be set: the broker refuses to
start, as Kafka does.
"""

from __future__ import annotations

import logging
import socket
import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from kazoo.client import KazooClient, TransactionRequest
from kazoo.handlers import utils
from kazoo.handlers.threading import SequentialThreadingHandler
from kazoo.security import CREATOR_ALL_ACL, OPEN_ACL_UNSAFE, READ_ACL_UNSAFE

from tidelog.security.tls import client_context, reload_stores, store_file_times
from tidelog.server.config_key import ConfigError

__all__ = ["ZkClientSecurity", "default_acls", "secured_kazoo_client", "zk_client_security"]

logger = logging.getLogger(__name__)

SENSITIVE_ROOT_PATHS = ("/config/users", "/config/brokers", "/delegation_token")
# Kafka leaves the old consumers' path open: they wrote under it themselves.
OPEN_PATHS = ("/consumers",)


def default_acls(path: str) -> list:
    """The ACLs Kafka gives a znode it creates at ``path`` with ``zookeeper.set.acl``."""
    if path in OPEN_PATHS:
        return list(OPEN_ACL_UNSAFE)
    acls = list(CREATOR_ALL_ACL)
    if not path.startswith(SENSITIVE_ROOT_PATHS):
        acls += READ_ACL_UNSAFE
    return acls


@dataclass(frozen=True)
class ZkClientSecurity:
    """How the broker's ZooKeeper sessions are secured: ``ssl_context`` (None: plain
    TCP), whether created znodes get Kafka's secure ACLs, and the ``ssl.*`` settings
    the context was loaded from (``stores``; None: never read again)."""

    ssl_context: ssl.SSLContext | None = None
    set_acl: bool = False
    stores: Mapping[str, object] | None = field(default=None, repr=False)  # passwords


# zookeeper.ssl.<key> → the ssl.<key> that tidelog.security.tls reads.
_TLS_KEYS = (
    "keystore.location",
    "keystore.password",
    "keystore.type",
    "truststore.location",
    "truststore.password",
    "truststore.type",
    "protocol",
    "enabled.protocols",
    "cipher.suites",
    "endpoint.identification.algorithm",
)
# Without a store type, ZooKeeper's client goes by the file's extension.
_TYPES_BY_EXTENSION = {".pem": "PEM", ".crt": "PEM", ".p12": "PKCS12", ".pfx": "PKCS12"}


def _store_type(config: Mapping[str, object], store: str) -> object:
    store_type = config[f"zookeeper.ssl.{store}.type"]
    location = config[f"zookeeper.ssl.{store}.location"]
    if store_type or not location:
        return store_type
    suffix = "." + str(location).rpartition(".")[2].lower()
    return _TYPES_BY_EXTENSION.get(suffix, "JKS")


def zk_client_security(config: Mapping[str, object]) -> ZkClientSecurity | None:
    """How a broker with ``config`` (its ``zookeeper.ssl.*`` and ``zookeeper.set.acl``
    keys) reaches ZooKeeper; None for plain, unauthenticated sessions. ConfigError
    when the stores do not load, or when ``zookeeper.set.acl`` has no client
    certificate to authenticate with (Kafka refuses to start then too)."""
    set_acl = bool(config["zookeeper.set.acl"])
    if not config["zookeeper.ssl.client.enable"]:
        if set_acl:
            raise _no_identity()
        return None
    settings = {f"ssl.{key}": config[f"zookeeper.ssl.{key}"] for key in _TLS_KEYS}
    settings["ssl.keystore.type"] = _store_type(config, "keystore")
    settings["ssl.truststore.type"] = _store_type(config, "truststore")
    # ZooKeeper's client takes the algorithm in any case (its default is "HTTPS").
    algorithm = settings["ssl.endpoint.identification.algorithm"]
    settings["ssl.endpoint.identification.algorithm"] = (algorithm or "").lower()
    if set_acl and not settings["ssl.keystore.location"]:
        raise _no_identity()
    try:
        context = client_context(settings)
    except ConfigError as error:
        raise ConfigError(f"ZooKeeper client TLS (zookeeper.ssl.*): {error}") from None
    return ZkClientSecurity(context, set_acl, settings)


def _no_identity() -> ConfigError:
    return ConfigError(
        "zookeeper.set.acl is true, but ZooKeeper client TLS configuration identifying at "
        "least zookeeper.ssl.client.enable and zookeeper.ssl.keystore.location is missing "
        "(the broker authenticates to ZooKeeper with its TLS client certificate)"
    )


class _TlsHandler(SequentialThreadingHandler):
    """kazoo's threading handler, connecting through ``security``'s context, its stores
    read again before a connection when their files changed; the server's certificate
    is checked against ``name_of(host)``, the name behind an address kazoo was given
    instead of it (``ZooKeeperAddresses.name_of``)."""

    def __init__(self, security: ZkClientSecurity, name_of: Callable[[str], str] | None = None):
        super().__init__()
        self._context = security.ssl_context
        self._stores = security.stores
        self._loaded = store_file_times(security.stores) if security.stores else None
        self._name_of = name_of or (lambda host: host)

    def _reload_changed_stores(self) -> None:
        if self._stores is None:
            return
        now = store_file_times(self._stores)
        if now == self._loaded:
            return
        try:
            reload_stores(self._context, self._stores)
        except (ConfigError, OSError, ssl.SSLError) as error:
            # A store being replaced: this connection goes with what was loaded, the next
            # one tries again.
            logger.warning("ZooKeeper client TLS stores not read again: %s", error)
            return
        self._loaded = now
        logger.info("ZooKeeper client TLS: new connections present the new keystore")

    def create_connection(self, address, hostname=None, timeout=None, **_kazoo_tls):
        self._reload_changed_stores()
        sock = utils.create_tcp_connection(socket, address, hostname, timeout)
        try:
            checked = self._name_of(hostname) if hostname else hostname
            server_hostname = checked if self._context.check_hostname else None
            return self._context.wrap_socket(sock, server_hostname=server_hostname)
        except BaseException:
            sock.close()
            raise


class _AclTransaction(TransactionRequest):
    def create(self, path, value=b"", acl=None, ephemeral=False, sequence=False):
        if acl is None:
            acl = default_acls(path)
        return super().create(path, value, acl, ephemeral, sequence)


class _AclKazooClient(KazooClient):
    """A kazoo client that creates znodes with Kafka's secure ACLs."""

    def create_async(self, path, value=b"", acl=None, *args, **kwargs):
        if acl is None:
            acl = default_acls(path)
        return super().create_async(path, value, acl, *args, **kwargs)

    def transaction(self) -> TransactionRequest:
        return _AclTransaction(self)


def secured_kazoo_client(
    security: ZkClientSecurity | None,
    name_of: Callable[[str], str] | None = None,
    **kazoo_options,
) -> KazooClient:
    """A kazoo client for ``kazoo_options`` secured as ``security`` says; over TLS the
    servers' certificates name ``name_of(host)`` for each host kazoo connects to."""
    if security is None:
        return KazooClient(**kazoo_options)
    if security.ssl_context is not None:
        handler = _TlsHandler(security, name_of)
        kazoo_options.update(handler=handler, use_ssl=True)
    client_class = _AclKazooClient if security.set_acl else KazooClient
    return client_class(**kazoo_options)
