"""A certificate authority of one's own: a CA and the certificates it signs, as PEM.

For tests, ``tidelog-local --security`` and (later) the operator: a broker gets a
certificate whose subject alternative names are its host names and addresses, a client a
certificate whose subject is its principal (``CN=alice,OU=eng``, written as RFC 4514
reads it). Keys are ECDSA P-256 unless RSA is asked for; PEM keys are PKCS#8, encrypted
when a password is given (Kafka's ``ssl.key.password``); :func:`pkcs12_store` makes a
PKCS#12 keystore or truststore.
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID

__all__ = ["CertificateAuthority", "Issued", "pkcs12_store"]

_DAY = datetime.timedelta(days=1)
PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey


def _new_key(rsa_bits: int | None) -> PrivateKey:
    if rsa_bits:
        return rsa.generate_private_key(public_exponent=65537, key_size=rsa_bits)
    return ec.generate_private_key(ec.SECP256R1())


def _key_pem(key: PrivateKey, password: str | None) -> bytes:
    encryption = (
        serialization.BestAvailableEncryption(password.encode())
        if password
        else serialization.NoEncryption()
    )
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )


def _alternative_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


@dataclass(frozen=True)
class Issued:
    """A certificate, its private key and the chain up to (without) the root."""

    certificate: x509.Certificate
    key: PrivateKey
    ca_certificate: x509.Certificate

    @property
    def certificate_pem(self) -> bytes:
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    @property
    def chain_pem(self) -> bytes:
        """The certificate then its CA's: Kafka's ``ssl.keystore.certificate.chain``."""
        return self.certificate_pem + self.ca_certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self, password: str | None = None) -> bytes:
        """The private key as PKCS#8 PEM, encrypted with ``password`` if given."""
        return _key_pem(self.key, password)


class CertificateAuthority:
    """A self-signed root that issues certificates; ``not_after`` of each defaults to a
    year from now (a negative ``valid_days`` makes an expired one, for tests)."""

    def __init__(self, subject: str = "CN=tidelog-ca", *, rsa_bits: int | None = None):
        self.key = _new_key(rsa_bits)
        name = x509.Name.from_rfc4514_string(subject)
        now = datetime.datetime.now(datetime.UTC)
        self.certificate = (
            x509.CertificateBuilder()
            .subject_name(name)
            .issuer_name(name)
            .public_key(self.key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - _DAY)
            .not_valid_after(now + 3650 * _DAY)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=True,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .sign(self.key, hashes.SHA256())
        )

    @property
    def certificate_pem(self) -> bytes:
        """The root, as a truststore holds it (``ssl.truststore.certificates``)."""
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def issue(
        self,
        subject: str,
        *,
        hosts: Iterable[str] = (),
        valid_days: int = 365,
        rsa_bits: int | None = None,
    ) -> Issued:
        """A certificate for ``subject`` (RFC 4514, e.g. ``CN=broker-0,O=tidelog``), good
        for both ends of a TLS connection, with ``hosts`` (names or addresses) as its
        subject alternative names."""
        key = _new_key(rsa_bits)
        now = datetime.datetime.now(datetime.UTC)
        not_after = now + valid_days * _DAY
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name.from_rfc4514_string(subject))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(min(now, not_after) - _DAY)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
        )
        names = _alternative_names(hosts)
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        return Issued(certificate, key, self.certificate)


def pkcs12_store(
    password: str, issued: Issued | None = None, trusted: Iterable[x509.Certificate] = ()
) -> bytes:
    """A PKCS#12 store protected by ``password``: a keystore when ``issued`` is given
    (its key, certificate and CA), else a truststore of the ``trusted`` certificates."""
    encryption = serialization.BestAvailableEncryption(password.encode())
    if issued is not None:
        return pkcs12.serialize_key_and_certificates(
            b"tidelog", issued.key, issued.certificate, [issued.ca_certificate], encryption
        )
    cas = [
        pkcs12.PKCS12Certificate(certificate, f"ca-{n}".encode())
        for n, certificate in enumerate(trusted)
    ]
    return pkcs12.serialize_key_and_certificates(None, None, None, cas, encryption)
