"""``ssl.SSLContext`` for a listener (server side) or a client, from Kafka's ``ssl.*``
settings (a mapping of key to value as :mod:`tidelog.server.config` parses them: lists
as lists, passwords and others as text, unset as None).

- Protocols: ``ssl.enabled.protocols`` bounds the versions (TLSv1.2 and TLSv1.3 by
  default); ``ssl.protocol`` must name a TLS version OpenSSL knows, as Java's
  ``SSLContext.getInstance`` does, and otherwise changes nothing.
- ``ssl.cipher.suites``: Java's (IANA) names. TLS 1.2 suites are mapped to OpenSSL's
  names (:data:`TLS12_SUITES`); Python cannot narrow TLS 1.3's suites, so those names are
  checked and all of TLS 1.3's stay on. As in Java, a list without a suite of TLS 1.2 (or
  of TLS 1.3) turns that version off.
- Keystore: ``ssl.keystore.type`` PEM (``ssl.keystore.certificate.chain`` and
  ``ssl.keystore.key`` inline, or a file at ``ssl.keystore.location`` holding both) or
  PKCS12 (decrypted with ``ssl.keystore.password``); a PEM key may be encrypted with
  ``ssl.key.password``. JKS (Kafka's default type) is read only when the file is in fact
  PKCS#12, as Java's JKS keystore reads one; a real JKS store is refused with the
  command that converts it.
- Truststore: PEM (``ssl.truststore.certificates`` inline or a file) or PKCS12.
- Server: ``ssl.client.auth`` none / requested / required. Client: the server's
  certificate is always verified (against the truststore, else the system's CAs), its
  host name too when ``ssl.endpoint.identification.algorithm`` is ``https``.

Every problem is a :class:`ConfigError` naming the key (INVALID_CONFIG on the wire).
OpenSSL reads certificates and keys only from files: inline PEM passes through a file
readable only by this process, in a directory of its own, removed at once.
"""

from __future__ import annotations

import contextlib
import os
import ssl
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from tidelog.server.config_key import ConfigError

__all__ = ["TLS12_SUITES", "client_context", "reload_stores", "server_context", "store_file_times"]

_VERSIONS = {
    "TLSv1": ssl.TLSVersion.TLSv1,
    "TLSv1.1": ssl.TLSVersion.TLSv1_1,
    "TLSv1.2": ssl.TLSVersion.TLSv1_2,
    "TLSv1.3": ssl.TLSVersion.TLSv1_3,
}
_PROTOCOLS = {"TLS", "TLSv1", "TLSv1.1", "TLSv1.2", "TLSv1.3"}
_CLIENT_AUTH = {
    "none": ssl.CERT_NONE,
    "requested": ssl.CERT_OPTIONAL,
    "required": ssl.CERT_REQUIRED,
}

TLS12_SUITES = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
}
"""Java's names of TLS 1.2 suites → OpenSSL's."""
_TLS13_SUITES = {"TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256"}
_JKS_MAGIC = b"\xfe\xed\xfe\xed"


def _invalid(key: str, value: object, reason: str) -> ConfigError:
    return ConfigError(f"Invalid value {value} for configuration {key}: {reason}")


def _set_protocols(context: ssl.SSLContext, settings: Mapping[str, object]) -> None:
    protocol = settings.get("ssl.protocol") or "TLSv1.3"
    if protocol not in _PROTOCOLS:
        raise _invalid("ssl.protocol", protocol, f"{protocol} SSLContext not available")
    enabled = settings.get("ssl.enabled.protocols") or ["TLSv1.2", "TLSv1.3"]
    unknown = [p for p in enabled if p not in _VERSIONS]
    if unknown:
        raise _invalid("ssl.enabled.protocols", ",".join(enabled), f"unknown protocol {unknown[0]}")
    versions = sorted(_VERSIONS[p] for p in enabled)
    suites = settings.get("ssl.cipher.suites") or []
    if suites:
        unknown = [s for s in suites if s not in TLS12_SUITES and s not in _TLS13_SUITES]
        if unknown:
            raise _invalid("ssl.cipher.suites", ",".join(suites), f"unknown suite {unknown[0]}")
        tls12 = [TLS12_SUITES[s] for s in suites if s in TLS12_SUITES]
        if tls12:
            context.set_ciphers(":".join(tls12))
        else:
            versions = [v for v in versions if v >= ssl.TLSVersion.TLSv1_3]
        if not any(s in _TLS13_SUITES for s in suites):
            versions = [v for v in versions if v < ssl.TLSVersion.TLSv1_3]
        if not versions:
            raise _invalid(
                "ssl.cipher.suites", ",".join(suites), "no suite for an enabled protocol"
            )
    context.minimum_version, context.maximum_version = versions[0], versions[-1]


@contextlib.contextmanager
def _private_files(*contents: bytes) -> Iterator[list[str]]:
    """Files holding ``contents``, readable by this process only, removed on exit."""
    with tempfile.TemporaryDirectory(prefix="tidelog-tls-") as directory:
        paths = []
        for n, data in enumerate(contents):
            path = Path(directory, f"{n}.pem")
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
            paths.append(str(path))
        yield paths


def _read(key: str, location: str) -> bytes:
    try:
        return Path(location).read_bytes()
    except OSError as error:
        raise _invalid(key, location, f"cannot read it: {error.strerror}") from None


def _refuse_jks(prefix: str, location: str) -> ConfigError:
    return ConfigError(
        f"{prefix}.location {location} is a JKS store, which tidelog cannot read: convert it "
        f"with `keytool -importkeystore -srckeystore {location} -destkeystore "
        f"{Path(location).with_suffix('.p12')} -deststoretype PKCS12` and set "
        f"{prefix}.type=PKCS12"
    )


def _pkcs12(prefix: str, location: str, password: object):
    data = _read(f"{prefix}.location", location)
    if data.startswith(_JKS_MAGIC):
        raise _refuse_jks(prefix, location)
    try:
        return pkcs12.load_key_and_certificates(data, password.encode() if password else None)
    except ValueError as error:
        raise _invalid(
            f"{prefix}.location", location, f"not a PKCS12 store its password opens ({error})"
        ) from None


def _store_type(prefix: str, settings: Mapping[str, object]) -> str:
    store_type = str(settings.get(f"{prefix}.type") or "JKS").upper()
    if store_type not in ("PEM", "PKCS12", "JKS"):
        raise _invalid(f"{prefix}.type", store_type, "tidelog reads PEM and PKCS12 stores")
    return store_type


def _keystore_pem(settings: Mapping[str, object]) -> tuple[bytes, bytes, str | None] | None:
    """(certificate chain, private key, the key's password) as PEM, or None when no
    keystore is set."""
    store_type = _store_type("ssl.keystore", settings)
    location = settings.get("ssl.keystore.location")
    chain, key = settings.get("ssl.keystore.certificate.chain"), settings.get("ssl.keystore.key")
    key_password = settings.get("ssl.key.password")
    if chain or key:
        if store_type != "PEM":
            raise _invalid("ssl.keystore.type", store_type, "inline keystore entries need type PEM")
        if not (chain and key):
            raise ConfigError(
                "ssl.keystore.certificate.chain and ssl.keystore.key must be set together"
            )
        return str(chain).encode(), str(key).encode(), key_password
    if not location:
        return None
    if store_type == "PEM":
        data = _read("ssl.keystore.location", location)
        return data, data, key_password
    key_object, certificate, others = _pkcs12(
        "ssl.keystore", location, settings.get("ssl.keystore.password")
    )
    if key_object is None or certificate is None:
        raise _invalid("ssl.keystore.location", location, "the store holds no private key entry")
    pem = serialization.Encoding.PEM
    chain_pem = b"".join(c.public_bytes(pem) for c in [certificate, *others])
    key_pem = key_object.private_bytes(
        pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    return chain_pem, key_pem, None


def _load_keystore(context: ssl.SSLContext, settings: Mapping[str, object]) -> bool:
    """Load the keystore into ``context``; False when none is set."""
    found = _keystore_pem(settings)
    if found is None:
        return False
    chain, key, password = found
    with _private_files(chain, key) as (chain_file, key_file):
        try:
            context.load_cert_chain(chain_file, key_file, password=password or None)
        except ssl.SSLError as error:
            reason = (
                "the private key does not match the certificate"
                if "KEY_VALUES_MISMATCH" in str(error)
                else f"cannot load the certificate chain and key ({error.reason or error})"
            )
            raise ConfigError(f"ssl.keystore: {reason}") from None
    return True


def _truststore_pem(settings: Mapping[str, object]) -> bytes | None:
    store_type = _store_type("ssl.truststore", settings)
    inline = settings.get("ssl.truststore.certificates")
    if inline:
        if store_type != "PEM":
            raise _invalid(
                "ssl.truststore.type", store_type, "inline truststore entries need type PEM"
            )
        return str(inline).encode()
    location = settings.get("ssl.truststore.location")
    if not location:
        return None
    if store_type == "PEM":
        return _read("ssl.truststore.location", location)
    _, certificate, others = _pkcs12(
        "ssl.truststore", location, settings.get("ssl.truststore.password")
    )
    trusted: list[x509.Certificate] = ([certificate] if certificate else []) + list(others)
    if not trusted:
        raise _invalid("ssl.truststore.location", location, "the store holds no certificate")
    return b"".join(c.public_bytes(serialization.Encoding.PEM) for c in trusted)


def _load_truststore(context: ssl.SSLContext, settings: Mapping[str, object]) -> bool:
    pem = _truststore_pem(settings)
    if pem is None:
        return False
    try:
        context.load_verify_locations(cadata=pem.decode("ascii", errors="replace"))
    except ssl.SSLError as error:
        raise ConfigError(f"ssl.truststore: cannot load its certificates ({error})") from None
    return True


def server_context(settings: Mapping[str, object]) -> ssl.SSLContext:
    """A listener's context: its keystore (required), its truststore for client
    certificates, ``ssl.client.auth``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    _set_protocols(context, settings)
    if not _load_keystore(context, settings):
        raise ConfigError(
            "an SSL listener needs a keystore: ssl.keystore.location, or "
            "ssl.keystore.certificate.chain and ssl.keystore.key with ssl.keystore.type=PEM"
        )
    client_auth = settings.get("ssl.client.auth") or "none"
    if client_auth not in _CLIENT_AUTH:
        raise _invalid(
            "ssl.client.auth", client_auth, "String must be one of: required, requested, none"
        )
    context.verify_mode = _CLIENT_AUTH[client_auth]
    if not _load_truststore(context, settings) and client_auth != "none":
        context.load_default_certs(ssl.Purpose.CLIENT_AUTH)
    return context


def client_context(settings: Mapping[str, object]) -> ssl.SSLContext:
    """A client's context: the server verified against the truststore (else the
    system's CAs), its host name too unless ``ssl.endpoint.identification.algorithm`` is
    empty; the keystore, if set, is the client's certificate."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    _set_protocols(context, settings)
    algorithm = settings.get("ssl.endpoint.identification.algorithm")
    algorithm = "https" if algorithm is None else str(algorithm)
    if algorithm not in ("", "https"):
        raise _invalid(
            "ssl.endpoint.identification.algorithm", algorithm, "only https, or empty for none"
        )
    context.check_hostname = algorithm == "https"
    if not _load_truststore(context, settings):
        context.load_default_certs(ssl.Purpose.SERVER_AUTH)
    _load_keystore(context, settings)
    return context


def reload_stores(context: ssl.SSLContext, settings: Mapping[str, object]) -> None:
    """Load new stores into a client context: its next connections present the new
    keystore's certificate and trust the new truststore's CAs as well (a context cannot
    forget a CA it trusted; open connections keep what they had)."""
    _load_keystore(context, settings)
    _load_truststore(context, settings)


def store_file_times(settings: Mapping[str, object]) -> tuple[int | None, int | None]:
    """The modification times of the keystore's and the truststore's files (None for a
    store not set or not readable): what tells that a store was replaced in place, as a
    kubelet replaces a mounted Secret's files."""
    times = []
    for key in ("ssl.keystore.location", "ssl.truststore.location"):
        location = settings.get(key)
        try:
            times.append(os.stat(str(location)).st_mtime_ns if location else None)
        except OSError:
            times.append(None)
    return times[0], times[1]
