"""``tidelog-local start --security``: a local cluster secured as a production one is.

- ``plaintext`` (the default): no TLS, no authentication, no authorizer.
- ``ssl``: one SSL listener per broker (the inter-broker listener too) that requires a
  client certificate (``ssl.client.auth=required``); principals are the certificates'
  common names (``ssl.principal.mapping.rules``); the ACL authorizer is on, with the
  super users ``admin`` (the tools' certificate) and ``broker`` (the brokers' own).
- ``sasl_ssl``: one SASL_SSL listener per broker (the inter-broker listener too) with
  SCRAM-SHA-512; the ACL authorizer is on with the super user ``admin``, whose password
  is drawn at random at each start and whose SCRAM credential is written to ZooKeeper
  (``/config/users/admin``) before the brokers start; the brokers log in as ``admin``.

The files live in ``<dir>/security/``, made anew at each start like the password: the CA
(``ca.pem``), the brokers' key and certificate (``broker.pem``, good for 127.0.0.1 and
localhost) and, for ``ssl``, the admin's (``admin.pem``). ``<dir>/client.properties``
configures Kafka's Java tools and ours (``--command-config``) as the admin;
``cluster.json``'s ``security`` object says the same to scripts: ``protocol``,
``mechanism``, ``ca_file``, ``username``, ``password`` (and, for ``ssl``,
``keystore_file``).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass
from pathlib import Path

from tidelog.controller.zk_client import KafkaZkClient
from tidelog.security.certificates import CertificateAuthority
from tidelog.security.client_security import ClientSecurity
from tidelog.security.scram_credentials import (
    SCRAM_MECHANISMS,
    ScramCredential,
)
from tidelog.security.scram_store import alter_user_credentials

__all__ = ["MODES", "LocalSecurity"]

MODES = ("plaintext", "ssl", "sasl_ssl")
ADMIN = "admin"
MECHANISM = "SCRAM-SHA-512"
_HOSTS = ("127.0.0.1", "localhost")
_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
_SCRAM_LOGIN = "org.apache.kafka.common.security.scram.ScramLoginModule"


def _write_private(path: Path, data: bytes | str) -> None:
    """Write a file only its owner may read (keys, passwords)."""
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    if isinstance(data, str):
        path.write_text(data)
    else:
        path.write_bytes(data)


@dataclass(frozen=True)
class LocalSecurity:
    mode: str  # one of MODES
    base: Path  # the cluster's --dir
    password: str | None = None  # the admin's SCRAM password (sasl_ssl)

    @classmethod
    def prepare(cls, mode: str, base: Path) -> LocalSecurity:
        """The files ``mode`` needs, made in ``base``: a CA, certificates and a password."""
        security = cls(mode, base, secrets.token_urlsafe(18) if mode == "sasl_ssl" else None)
        if mode == "plaintext":
            (base / "client.properties").unlink(missing_ok=True)
            return security
        directory = base / "security"
        directory.mkdir(exist_ok=True)
        ca = CertificateAuthority("CN=tidelog-local-ca")
        (directory / "ca.pem").write_bytes(ca.certificate_pem)
        for name in ("broker", ADMIN) if mode == "ssl" else ("broker",):
            issued = ca.issue(f"CN={name},O=tidelog-local", hosts=_HOSTS)
            _write_private(directory / f"{name}.pem", issued.key_pem() + issued.chain_pem)
        properties = "".join(f"{k}={v}\n" for k, v in security.client_properties().items())
        _write_private(base / "client.properties", properties)
        return security

    @property
    def listener(self) -> str:
        return self.mode.upper()

    @property
    def _files(self) -> Path:
        return self.base / "security"

    def _jaas(self) -> str:
        return f'{_SCRAM_LOGIN} required username="{ADMIN}" password="{self.password}";'

    def broker_properties(self, port: int) -> dict[str, str]:
        """A broker's properties for this mode, listening on 127.0.0.1:``port``."""
        if self.mode == "plaintext":
            return {}
        properties = {
            "listeners": f"{self.listener}://127.0.0.1:{port}",
            "inter.broker.listener.name": self.listener,
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(self._files / "broker.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self._files / "ca.pem"),
            "authorizer.class.name": _AUTHORIZER,
        }
        if self.mode == "ssl":
            return {
                **properties,
                "ssl.client.auth": "required",
                "ssl.principal.mapping.rules": "RULE:^CN=([^,]+),.*$/$1/,DEFAULT",
                "super.users": f"User:{ADMIN};User:broker",
            }
        return {
            **properties,
            "sasl.enabled.mechanisms": MECHANISM,
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            f"listener.name.sasl_ssl.{MECHANISM.lower()}.sasl.jaas.config": self._jaas(),
            "super.users": f"User:{ADMIN}",
        }

    def client_properties(self) -> dict[str, str]:
        """Kafka's client properties that connect as the admin (``client.properties``)."""
        if self.mode == "plaintext":
            return {"security.protocol": "PLAINTEXT"}
        properties = {
            "security.protocol": self.listener,
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self._files / "ca.pem"),
        }
        if self.mode == "ssl":
            return {
                **properties,
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(self._files / f"{ADMIN}.pem"),
            }
        return {**properties, "sasl.mechanism": MECHANISM, "sasl.jaas.config": self._jaas()}

    def client_security(self) -> ClientSecurity:
        """How ``tidelog-local`` itself connects (as the admin)."""
        return ClientSecurity.from_properties(self.client_properties())

    def register_admin(self, zookeeper_connect: str) -> None:
        """Write the admin's SCRAM credential where Kafka keeps it (``sasl_ssl`` only),
        before any broker starts: the brokers log in to each other with it."""
        if self.mode != "sasl_ssl":
            return
        zk = KafkaZkClient(zookeeper_connect)
        zk.start()
        try:
            credential = ScramCredential.from_password(SCRAM_MECHANISMS[MECHANISM], self.password)
            alter_user_credentials(zk, ADMIN, {MECHANISM: credential})
        finally:
            zk.close()

    def describe(self) -> dict:
        """``cluster.json``'s ``security`` object."""
        described = {
            "protocol": self.mode.upper(),
            "mechanism": MECHANISM if self.mode == "sasl_ssl" else None,
            "ca_file": None if self.mode == "plaintext" else str(self._files / "ca.pem"),
            "username": None if self.mode == "plaintext" else ADMIN,
            "password": self.password,
        }
        if self.mode == "ssl":
            described["keystore_file"] = str(self._files / f"{ADMIN}.pem")
        return described
