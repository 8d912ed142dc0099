"""Certificates for a test control plane, laid out as kubeadm lays out its own.

One CA signs the API server's serving certificate and every client certificate; the
client's subject is its identity (CN = user, O = groups), which RBAC then authorizes.
A separate key pair signs and verifies service-account tokens. EC P-256 keys: generated
in microseconds, accepted by every Kubernetes component.
"""

from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = ["KeyPair", "Pki", "make_pki"]

_VALIDITY = datetime.timedelta(days=7)


@dataclass(frozen=True)
class KeyPair:
    cert: Path
    key: Path


@dataclass(frozen=True)
class Pki:
    ca: KeyPair
    apiserver: KeyPair
    admin: KeyPair
    controller_manager: KeyPair
    service_account_key: Path
    service_account_public_key: Path


def make_pki(directory: Path) -> Pki:
    """Write the control plane's keys and certificates into ``directory``."""
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name("tidelog-test-ca")
    ca_cert = _builder(ca_name, ca_name, ca_key.public_key()).add_extension(
        x509.BasicConstraints(ca=True, path_length=None), critical=True
    )
    ca = _write(directory, "ca", ca_cert.sign(ca_key, hashes.SHA256()), ca_key)

    def issue(stem: str, subject: x509.Name, usage: ExtendedKeyUsageOID, sans=()) -> KeyPair:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = _builder(subject, ca_name, key.public_key()).add_extension(
            x509.ExtendedKeyUsage([usage]), critical=False
        )
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return _write(directory, stem, builder.sign(ca_key, hashes.SHA256()), key)

    server_names = [
        x509.DNSName(name)
        for name in ("localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc")
    ] + [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    service_account_key = ec.generate_private_key(ec.SECP256R1())
    sa_key_path = directory / "sa.key"
    sa_key_path.write_bytes(_private_bytes(service_account_key))
    sa_pub_path = directory / "sa.pub"
    sa_pub_path.write_bytes(
        service_account_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    return Pki(
        ca=ca,
        apiserver=issue(
            "apiserver", _name("kube-apiserver"), ExtendedKeyUsageOID.SERVER_AUTH, server_names
        ),
        admin=issue(
            "admin", _name("tidelog-test-admin", "system:masters"), ExtendedKeyUsageOID.CLIENT_AUTH
        ),
        controller_manager=issue(
            "controller-manager",
            _name("system:kube-controller-manager"),
            ExtendedKeyUsageOID.CLIENT_AUTH,
        ),
        service_account_key=sa_key_path,
        service_account_public_key=sa_pub_path,
    )


def _name(common_name: str, organization: str | None = None) -> x509.Name:
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    return x509.Name(attributes)


def _builder(
    subject: x509.Name, issuer: x509.Name, public_key: ec.EllipticCurvePublicKey
) -> x509.CertificateBuilder:
    now = datetime.datetime.now(datetime.UTC)
    return (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(issuer)
        .public_key(public_key)
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + _VALIDITY)
    )


def _private_bytes(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )


def _write(
    directory: Path, stem: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey
) -> KeyPair:
    pair = KeyPair(directory / f"{stem}.crt", directory / f"{stem}.key")
    pair.cert.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    pair.key.write_bytes(_private_bytes(key))
    pair.key.chmod(0o600)
    return pair
