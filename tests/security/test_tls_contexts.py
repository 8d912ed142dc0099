"""TLS contexts from Kafka's ssl.* settings: stores in each format, protocols, suites,
client authentication, host name checks; each shown by a handshake in memory."""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest

from security.tls_pairs import handshake
from tidelog.security.certificates import CertificateAuthority, pkcs12_store
from tidelog.security.tls import client_context, server_context
from tidelog.server.config_key import ConfigError

CA = CertificateAuthority()
BROKER = CA.issue("CN=broker-0,O=tidelog", hosts=["localhost", "127.0.0.1"])
ALICE = CA.issue("CN=alice,OU=eng")


def pem_keystore(issued=BROKER, **more) -> dict[str, object]:
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": issued.chain_pem.decode(),
        "ssl.keystore.key": issued.key_pem().decode(),
        **more,
    }


def pem_truststore(ca=CA) -> dict[str, object]:
    return {
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": ca.certificate_pem.decode(),
    }


def test_inline_pem_stores_make_a_verified_connection() -> None:
    done = handshake(client_context(pem_truststore()), server_context(pem_keystore()))
    assert done.client.version() == "TLSv1.3"
    assert done.server.getpeercert() is None  # no client certificate asked for


def test_pem_and_pkcs12_files_and_encrypted_keys(tmp_path: Path) -> None:
    pem = tmp_path / "broker.pem"
    pem.write_bytes(BROKER.chain_pem + BROKER.key_pem("key-secret"))
    p12 = tmp_path / "broker.p12"
    p12.write_bytes(pkcs12_store("store-secret", BROKER))
    trust = tmp_path / "trust.p12"
    trust.write_bytes(pkcs12_store("trust-secret", trusted=[CA.certificate]))
    client = client_context(
        {
            "ssl.truststore.type": "PKCS12",
            "ssl.truststore.location": str(trust),
            "ssl.truststore.password": "trust-secret",
        }
    )
    for server in (
        {
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(pem),
            "ssl.key.password": "key-secret",
        },
        {
            "ssl.keystore.type": "PKCS12",
            "ssl.keystore.location": str(p12),
            "ssl.keystore.password": "store-secret",
        },
        # Kafka's default type, JKS, reads a PKCS#12 file as Java does.
        {"ssl.keystore.location": str(p12), "ssl.keystore.password": "store-secret"},
    ):
        handshake(client, server_context(server))


def test_a_jks_store_is_refused_with_how_to_convert_it(tmp_path: Path) -> None:
    jks = tmp_path / "broker.jks"
    jks.write_bytes(b"\xfe\xed\xfe\xed" + bytes(60))
    with pytest.raises(ConfigError) as refused:
        server_context({"ssl.keystore.location": str(jks), "ssl.keystore.password": "x"})
    message = str(refused.value)
    assert "\n" not in message
    assert "keytool -importkeystore" in message and "-deststoretype PKCS12" in message


@pytest.mark.parametrize(
    ("settings", "reason"),
    [
        (pem_keystore() | {"ssl.keystore.key": ALICE.key_pem().decode()}, "does not match"),
        ({"ssl.keystore.type": "PEM", "ssl.keystore.location": "/nonexistent"}, "cannot read"),
        ({}, "needs a keystore"),
        (pem_keystore() | {"ssl.enabled.protocols": ["TLSv1.4"]}, "unknown protocol"),
        (pem_keystore() | {"ssl.cipher.suites": ["TLS_NO_SUCH_SUITE"]}, "unknown suite"),
        (pem_keystore() | {"ssl.protocol": "SSLv3"}, "ssl.protocol"),
    ],
)
def test_unusable_settings_are_refused_naming_the_key(settings, reason: str) -> None:
    with pytest.raises(ConfigError, match=reason):
        server_context(settings)


def test_a_wrong_pkcs12_password_is_refused(tmp_path: Path) -> None:
    p12 = tmp_path / "broker.p12"
    p12.write_bytes(pkcs12_store("right", BROKER))
    with pytest.raises(ConfigError, match="ssl.keystore.location"):
        server_context(
            {
                "ssl.keystore.type": "PKCS12",
                "ssl.keystore.location": str(p12),
                "ssl.keystore.password": "wrong",
            }
        )


def test_enabled_protocols_bound_the_version() -> None:
    server = server_context(pem_keystore(**{"ssl.enabled.protocols": ["TLSv1.2"]}))
    assert handshake(client_context(pem_truststore()), server).client.version() == "TLSv1.2"
    client13 = client_context(pem_truststore() | {"ssl.enabled.protocols": ["TLSv1.3"]})
    with pytest.raises(ssl.SSLError):
        handshake(client13, server)


def test_cipher_suites_use_java_names() -> None:
    suite = "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"
    server = server_context(pem_keystore(**{"ssl.cipher.suites": [suite]}))
    done = handshake(client_context(pem_truststore()), server)
    assert done.client.version() == "TLSv1.2"
    assert done.client.cipher()[0] == "ECDHE-ECDSA-AES256-GCM-SHA384"
    # Only TLS 1.3 suites listed: TLS 1.2 is off.
    only13 = server_context(pem_keystore(**{"ssl.cipher.suites": ["TLS_AES_128_GCM_SHA256"]}))
    client12 = client_context(pem_truststore() | {"ssl.enabled.protocols": ["TLSv1.2"]})
    with pytest.raises(ssl.SSLError):
        handshake(client12, only13)


def test_client_auth_required_requested_none() -> None:
    with_cert = client_context(pem_truststore() | pem_keystore(ALICE))
    without = client_context(pem_truststore())
    required = server_context(pem_keystore(**{"ssl.client.auth": "required"}) | pem_truststore())
    assert handshake(with_cert, required).server.getpeercert()["subject"]
    with pytest.raises(ssl.SSLError):
        handshake(without, required)
    foreign = client_context(pem_truststore() | pem_keystore(CertificateAuthority().issue("CN=x")))
    with pytest.raises(ssl.SSLError):
        handshake(foreign, required)
    requested = server_context(pem_keystore(**{"ssl.client.auth": "requested"}) | pem_truststore())
    assert handshake(without, requested).server.getpeercert() is None
    assert handshake(with_cert, requested).server.getpeercert()["subject"]


def test_the_client_checks_the_server_name_unless_told_not_to() -> None:
    server = server_context(pem_keystore())
    with pytest.raises(ssl.SSLCertVerificationError, match="Hostname mismatch"):
        handshake(client_context(pem_truststore()), server, server_hostname="elsewhere")
    relaxed = client_context(pem_truststore() | {"ssl.endpoint.identification.algorithm": ""})
    handshake(relaxed, server, server_hostname="elsewhere")


def test_a_server_of_another_ca_is_not_trusted() -> None:
    with pytest.raises(ssl.SSLCertVerificationError):
        handshake(
            client_context(pem_truststore(CertificateAuthority())), server_context(pem_keystore())
        )


def test_an_expired_certificate_is_refused() -> None:
    expired = CA.issue("CN=old", hosts=["localhost"], valid_days=-1)
    with pytest.raises(ssl.SSLCertVerificationError, match="expired"):
        handshake(client_context(pem_truststore()), server_context(pem_keystore(expired)))
