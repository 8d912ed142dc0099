"""How a test :class:`~integration.cluster.Cluster` is secured, and what its clients need
to reach it.

- ``plaintext``: one PLAINTEXT listener per broker, no authentication, no authorizer (the
  brokers' properties are exactly those of a cluster without this module).
- ``sasl_ssl``: one SASL_SSL listener per broker and nothing else, the inter-broker
  listener too (the controller's requests, replica fetchers and controlled shutdowns
  authenticate like any client), SCRAM-SHA-512 the only mechanism. The ACL authorizer is
  on, with two super users: ``broker``, as whom the brokers log in to each other, and
  ``admin``, as whom the tests' clients log in (the tests are about replication, not
  about ACLs: nobody is refused, but every request goes through the authorizer). Both
  SCRAM credentials are written to ZooKeeper (``/config/users/<user>``) before any broker
  starts, as Kafka's documentation has it. One CA signs the brokers' certificate (good
  for 127.0.0.1 and localhost); clients trust it and check the host name.
"""

from __future__ import annotations

from functools import cached_property
from pathlib import Path

from integration.sasl_setup import SCRAM_MODULE, jaas
from integration.tls_files import TlsFiles
from tidelog.controller.zk_client import KafkaZkClient
from tidelog.security.client_security import PLAINTEXT, ClientSecurity
from tidelog.security.scram_credentials import (
    SCRAM_MECHANISMS,
    ScramCredential,
)
from tidelog.security.scram_store import alter_user_credentials

__all__ = ["SECURITY_MODES", "ClusterSecurity"]

SECURITY_MODES = ("plaintext", "sasl_ssl")
MECHANISM = "SCRAM-SHA-512"
BROKER_USER = ("broker", "broker-secret")
CLIENT_USER = ("admin", "admin-secret")
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"


class ClusterSecurity:
    """One mode of :data:`SECURITY_MODES`; for ``sasl_ssl`` its certificates are made in
    ``directory`` at construction."""

    def __init__(self, mode: str, directory: Path):
        if mode not in SECURITY_MODES:
            raise ValueError(f"security must be one of {SECURITY_MODES}, not {mode!r}")
        self.mode = mode
        self.directory = directory
        self._tls = TlsFiles.make(directory) if mode == "sasl_ssl" else None
        self._keystore = self._tls.broker_keystore() if self._tls else None

    @property
    def listener(self) -> str:
        """The name (and security protocol) of every broker's only listener."""
        return self.mode.upper()

    def broker_properties(self, port: int) -> dict[str, str]:
        """A broker's properties for its listener on 127.0.0.1:``port``."""
        listeners = {"listeners": f"{self.listener}://127.0.0.1:{port}"}
        if self._tls is None:
            return listeners
        return {
            **listeners,
            "inter.broker.listener.name": self.listener,
            **self._tls.listener_overrides(self._keystore),
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": jaas(
                SCRAM_MODULE, *BROKER_USER
            ),
            "authorizer.class.name": AUTHORIZER,
            "super.users": f"User:{BROKER_USER[0]};User:{CLIENT_USER[0]}",
        }

    def register_users(self, zk_connect: str) -> None:
        """The SCRAM credentials of the brokers' and the clients' users, written where
        Kafka keeps them; before the brokers start (``sasl_ssl`` only)."""
        if self._tls is None:
            return
        zk = KafkaZkClient(zk_connect)
        zk.start()
        try:
            for user, password in (BROKER_USER, CLIENT_USER):
                credential = ScramCredential.from_password(SCRAM_MECHANISMS[MECHANISM], password)
                alter_user_credentials(zk, user, {MECHANISM: credential})
        finally:
            zk.close()

    def client_config(self) -> dict[str, str]:
        """confluent-kafka's security settings (none for ``plaintext``)."""
        if self._tls is None:
            return {}
        return {
            "security.protocol": "SASL_SSL",
            "ssl.ca.location": str(self._tls.ca_file),
            "sasl.mechanism": MECHANISM,
            "sasl.username": CLIENT_USER[0],
            "sasl.password": CLIENT_USER[1],
        }

    def client_properties(self) -> dict[str, str]:
        """Kafka's client properties (Java clients and tools, ``--command-config``)."""
        if self._tls is None:
            return {"security.protocol": "PLAINTEXT"}
        return {
            "security.protocol": "SASL_SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self._tls.ca_file),
            "sasl.mechanism": MECHANISM,
            "sasl.jaas.config": jaas(SCRAM_MODULE, *CLIENT_USER),
        }

    @cached_property
    def client_properties_file(self) -> Path:
        """:meth:`client_properties` in a properties file, written once."""
        path = self.directory / "client.properties"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("".join(f"{k}={v}\n" for k, v in self.client_properties().items()))
        return path

    @cached_property
    def admin(self) -> ClientSecurity:
        """How tidelog's own admin connections log in (TLS context made once)."""
        if self._tls is None:
            return PLAINTEXT
        return ClientSecurity.from_properties(self.client_properties())
