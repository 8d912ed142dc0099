"""Certificates on disk for TLS tests: a CA, a broker's keystore and truststore, and a
client's certificate, in the forms each client library reads; broker overrides for TLS
listeners that use them, and a broker with a PLAINTEXT and an SSL listener."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from integration.broker_process import BrokerProcess, two_listener_broker
from tidelog.security.certificates import CertificateAuthority, Issued


@dataclass(frozen=True)
class ClientFiles:
    certificate: Path  # the certificate then its CA's
    key: Path  # PKCS#8, unencrypted
    keystore: Path  # both in one file: Kafka's PEM keystore at ssl.keystore.location


@dataclass(frozen=True)
class TlsFiles:
    directory: Path
    ca: CertificateAuthority
    ca_file: Path

    @classmethod
    def make(cls, directory: Path) -> TlsFiles:
        directory.mkdir(parents=True, exist_ok=True)
        ca = CertificateAuthority()
        ca_file = directory / "ca.pem"
        ca_file.write_bytes(ca.certificate_pem)
        return cls(directory, ca, ca_file)

    def broker_keystore(self, name: str = "broker", issued: Issued | None = None) -> Path:
        """A PEM keystore file for a broker on 127.0.0.1 / localhost."""
        issued = issued or self.ca.issue(f"CN={name}", hosts=["localhost", "127.0.0.1"])
        path = self.directory / f"{name}.pem"
        path.write_bytes(issued.chain_pem + issued.key_pem())
        return path

    def client(self, subject: str, ca: CertificateAuthority | None = None) -> ClientFiles:
        """A client's certificate for ``subject``, from this CA or ``ca``."""
        issued = (ca or self.ca).issue(subject)
        stem = self.directory / subject.split(",")[0].replace("=", "-")
        files = ClientFiles(
            stem.with_suffix(".crt"), stem.with_suffix(".key"), stem.with_suffix(".pem")
        )
        files.certificate.write_bytes(issued.chain_pem)
        files.key.write_bytes(issued.key_pem())
        files.keystore.write_bytes(issued.chain_pem + issued.key_pem())
        return files

    def listener_overrides(self, keystore: Path) -> dict[str, str]:
        """Unprefixed ssl.* keys every TLS listener of the broker falls back to."""
        return {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
        }

    def client_properties(self, client: ClientFiles | None = None) -> dict[str, str]:
        """Kafka client properties for SSL (with the client's certificate if given)."""
        properties = {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(self.ca_file),
        }
        if client is not None:
            properties |= {
                "ssl.keystore.type": "PEM",
                "ssl.keystore.location": str(client.keystore),
            }
        return properties


def ssl_broker(tls: TlsFiles, directory: Path, zk_connect: str) -> BrokerProcess:
    """A started broker whose PLAINTEXT listener (its ``port``) is the inter-broker one
    and whose SSL listener, on ``ssl_port``, serves ``tls``'s broker keystore."""
    process, process.ssl_port = two_listener_broker(
        directory,
        zk_connect,
        "SSL",
        {
            "inter.broker.listener.name": "PLAINTEXT",
            **tls.listener_overrides(tls.broker_keystore()),
        },
    )
    return process.start()
