"""A certificate authority of one's own: a CA and the certificates it signs, as PEM.

For tests, ``tidelog-local --security`` and the operator's cluster and clients CAs: a
broker gets a certificate whose subject alternative names are its host names and
addresses, a client a certificate whose subject is its principal (``CN=alice,OU=eng``,
written as RFC 4514 reads it). Keys are ECDSA P-256 unless RSA is asked for; PEM keys are
PKCS#8, encrypted when a password is given (Kafka's ``ssl.key.password``);
:func:`pkcs12_store` makes a PKCS#12 keystore or truststore.

A CA's life, as the operator runs it: made (:class:`CertificateAuthority`), stored in a
Secret as PEM and loaded back (:meth:`CertificateAuthority.from_pem`), *renewed* (same key
and subject, new validity: the certificates it issued still verify under the new CA
certificate, :meth:`CertificateAuthority.renewed`) or *replaced* (a new
:class:`CertificateAuthority`, new key and subject: clients must trust old and new together
until every certificate is reissued). The operator's deciders read certificates through
:func:`certificate_facts`, :func:`certificates_in` and :func:`issued_by`, which hold no
keys and make no decisions. Every date comes from an injectable ``now`` (an aware UTC
datetime) so that tests can move time.

Every certificate carries a SubjectKeyIdentifier; every leaf, and every CA certificate,
an AuthorityKeyIdentifier naming only its issuer's key identifier (never the issuer's
serial, which a renewal changes).
"""

from __future__ import annotations

import datetime
import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.hazmat.primitives.asymmetric.types import CertificatePublicKeyTypes
from cryptography.hazmat.primitives.serialization import pkcs12
from cryptography.x509.oid import ExtendedKeyUsageOID

__all__ = [
    "CertificateAuthority",
    "CertificateFacts",
    "Issued",
    "certificate_facts",
    "certificates_in",
    "issued_by",
    "pkcs12_store",
]

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


def _now(now: datetime.datetime | None) -> datetime.datetime:
    """``now``, or the wall clock; a naive datetime is refused (its zone is a guess)."""
    if now is None:
        return datetime.datetime.now(datetime.UTC)
    if now.tzinfo is None:
        raise ValueError(f"now must be an aware datetime, not {now!r}")
    return now


def _alternative_names(hosts: Iterable[str]) -> list[x509.GeneralName]:
    names: list[x509.GeneralName] = []
    for host in hosts:
        try:
            names.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            names.append(x509.DNSName(host))
    return names


def _subject_key_identifier(certificate: x509.Certificate) -> x509.SubjectKeyIdentifier:
    """The certificate's own SKI extension, or one derived from its public key (a CA
    brought by a user may have none)."""
    try:
        return certificate.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.SubjectKeyIdentifier.from_public_key(certificate.public_key())


def _ca_certificate(
    key: PrivateKey,
    name: x509.Name,
    key_identifier: x509.SubjectKeyIdentifier,
    valid_days: int,
    now: datetime.datetime,
) -> x509.Certificate:
    """A self-signed CA certificate, valid from a day before ``now`` (clock skew) to
    ``valid_days`` after it, with a fresh serial."""
    return (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - _DAY)
        .not_valid_after(now + valid_days * _DAY)
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
        .add_extension(key_identifier, critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(key_identifier),
            critical=False,
        )
        .sign(key, hashes.SHA256())
    )


def _is_ca(certificate: x509.Certificate) -> bool:
    try:
        constraints = certificate.extensions.get_extension_for_class(x509.BasicConstraints)
    except x509.ExtensionNotFound:
        return False
    return constraints.value.ca


def _public_der(key: CertificatePublicKeyTypes) -> bytes:
    return key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


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
    """A CA that issues certificates: a new self-signed root with a new key, valid
    ``valid_days`` from ``now`` (backdated a day for clock skew).

    Making a new one is also how a CA's key is *replaced* (Strimzi's "replace-key"
    policy): the operator gives the new one a new subject
    (``CN=<cluster>-cluster-ca v<N>,O=tidelog.dev``) so that both can be trusted at once.
    """

    key: PrivateKey
    certificate: x509.Certificate

    def __init__(
        self,
        subject: str = "CN=tidelog-ca",
        *,
        rsa_bits: int | None = None,
        valid_days: int = 3650,
        now: datetime.datetime | None = None,
    ):
        self.key = _new_key(rsa_bits)
        identifier = x509.SubjectKeyIdentifier.from_public_key(self.key.public_key())
        self.certificate = _ca_certificate(
            self.key, x509.Name.from_rfc4514_string(subject), identifier, valid_days, _now(now)
        )

    @classmethod
    def _of(cls, key: PrivateKey, certificate: x509.Certificate) -> CertificateAuthority:
        authority = cls.__new__(cls)
        authority.key = key
        authority.certificate = certificate
        return authority

    @classmethod
    def from_pem(
        cls, certificate_pem: bytes, key_pem: bytes, password: str | None = None
    ) -> CertificateAuthority:
        """The CA whose certificate (one, in ``certificate_pem``) and private key
        (``key_pem``, decrypted with ``password`` if given) a Secret holds.

        Raises ValueError when the PEM does not hold exactly one certificate, when the
        certificate is not a CA's (basicConstraints ``ca=True``), or when the key is not
        the certificate's.
        """
        certificate = _one_certificate(certificate_pem)
        if not _is_ca(certificate):
            raise ValueError(f"{certificate.subject.rfc4514_string()} is not a CA certificate")
        key = serialization.load_pem_private_key(key_pem, password.encode() if password else None)
        if not isinstance(key, ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey):
            raise ValueError(f"unsupported key type {type(key).__name__}: ECDSA or RSA expected")
        if _public_der(key.public_key()) != _public_der(certificate.public_key()):
            raise ValueError(
                f"the private key is not the key of {certificate.subject.rfc4514_string()}"
            )
        return cls._of(key, certificate)

    @property
    def certificate_pem(self) -> bytes:
        """The root, as a truststore holds it (``ssl.truststore.certificates``)."""
        return self.certificate.public_bytes(serialization.Encoding.PEM)

    def key_pem(self, password: str | None = None) -> bytes:
        """The CA's private key as PKCS#8 PEM, encrypted with ``password`` if given."""
        return _key_pem(self.key, password)

    def renewed(
        self, *, valid_days: int, now: datetime.datetime | None = None
    ) -> CertificateAuthority:
        """This CA with a new certificate (Strimzi's "renew-certificate" policy): the same
        key, subject and key identifier, a new serial, valid ``valid_days`` from ``now``.

        Certificates this CA issued before verify under the renewed certificate alone,
        so clients may swap one for the other. The new certificate is self-signed, even
        when this CA's was signed by another.
        """
        certificate = _ca_certificate(
            self.key,
            self.certificate.subject,
            _subject_key_identifier(self.certificate),
            valid_days,
            _now(now),
        )
        return self._of(self.key, certificate)

    def issue(
        self,
        subject: str,
        *,
        hosts: Iterable[str] = (),
        valid_days: int = 365,
        rsa_bits: int | None = None,
        now: datetime.datetime | None = None,
    ) -> Issued:
        """A certificate for ``subject`` (RFC 4514, e.g. ``CN=broker-0,O=tidelog``), good
        for both ends of a TLS connection, with ``hosts`` (names or addresses) as its
        subject alternative names.

        It is valid from a day before ``now`` to ``valid_days`` after it, but never after
        the CA's own ``not_after`` (a certificate outliving its CA could not be verified);
        a negative ``valid_days`` makes an expired one, for tests.
        """
        key = _new_key(rsa_bits)
        moment = _now(now)
        not_after = min(moment + valid_days * _DAY, self.certificate.not_valid_after_utc)
        builder = (
            x509.CertificateBuilder()
            .subject_name(x509.Name.from_rfc4514_string(subject))
            .issuer_name(self.certificate.subject)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(min(moment, not_after) - _DAY)
            .not_valid_after(not_after)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.ExtendedKeyUsage(
                    [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
                ),
                critical=False,
            )
            .add_extension(
                x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False
            )
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(
                    _subject_key_identifier(self.certificate)
                ),
                critical=False,
            )
        )
        names = _alternative_names(hosts)
        if names:
            builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
        certificate = builder.sign(self.key, hashes.SHA256())
        return Issued(certificate, key, self.certificate)


@dataclass(frozen=True)
class CertificateFacts:
    """What the operator's deciders read from a certificate: names as RFC 4514 strings,
    dates as aware UTC datetimes, the SHA-256 fingerprint of its DER and the key
    identifiers as lower-case hex (None when the extension is absent)."""

    subject: str
    issuer: str
    serial: int
    not_before: datetime.datetime
    not_after: datetime.datetime
    sha256_fingerprint: str
    is_ca: bool
    subject_key_id: str | None
    authority_key_id: str | None
    dns_names: tuple[str, ...]

    @classmethod
    def of(cls, certificate: x509.Certificate) -> CertificateFacts:
        extensions = certificate.extensions
        try:
            subject_key_id: str | None = extensions.get_extension_for_class(
                x509.SubjectKeyIdentifier
            ).value.digest.hex()
        except x509.ExtensionNotFound:
            subject_key_id = None
        try:
            authority = extensions.get_extension_for_class(x509.AuthorityKeyIdentifier).value
            authority_key_id = authority.key_identifier.hex() if authority.key_identifier else None
        except x509.ExtensionNotFound:
            authority_key_id = None
        try:
            names = extensions.get_extension_for_class(x509.SubjectAlternativeName).value
            dns_names = tuple(names.get_values_for_type(x509.DNSName))
        except x509.ExtensionNotFound:
            dns_names = ()
        return cls(
            subject=certificate.subject.rfc4514_string(),
            issuer=certificate.issuer.rfc4514_string(),
            serial=certificate.serial_number,
            not_before=certificate.not_valid_before_utc,
            not_after=certificate.not_valid_after_utc,
            sha256_fingerprint=certificate.fingerprint(hashes.SHA256()).hex(),
            is_ca=_is_ca(certificate),
            subject_key_id=subject_key_id,
            authority_key_id=authority_key_id,
            dns_names=dns_names,
        )


def certificates_in(pem_bundle: bytes) -> list[x509.Certificate]:
    """Every certificate of a PEM bundle (a truststore's ``ca.crt`` during a key
    replacement holds two), in order; ValueError when it holds none."""
    return x509.load_pem_x509_certificates(pem_bundle)


def _one_certificate(pem: bytes) -> x509.Certificate:
    certificates = certificates_in(pem)
    if len(certificates) != 1:
        raise ValueError(f"one certificate expected, the PEM holds {len(certificates)}")
    return certificates[0]


def certificate_facts(pem: bytes) -> CertificateFacts:
    """The facts of the one certificate in ``pem`` (ValueError if it holds more)."""
    return CertificateFacts.of(_one_certificate(pem))


def issued_by(leaf_pem: bytes, ca_pem: bytes) -> bool:
    """Whether the certificate in ``leaf_pem`` names the one in ``ca_pem`` as its issuer
    and carries a signature that the CA's public key verifies. Dates are not checked: a
    renewed CA (same key and subject) counts as the issuer of its predecessor's leaves,
    a replaced one does not. ValueError when either PEM does not hold exactly one
    certificate."""
    leaf, authority = _one_certificate(leaf_pem), _one_certificate(ca_pem)
    try:
        leaf.verify_directly_issued_by(authority)
    except (ValueError, InvalidSignature):
        return False
    return True


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
