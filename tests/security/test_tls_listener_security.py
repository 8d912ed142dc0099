"""The broker's TLS listeners: a context per TLS listener, client authentication as
Kafka asks it (KIP-684 on SASL_SSL), and new stores checked, then swapped in."""

from __future__ import annotations

import os
import ssl
from pathlib import Path

import pytest

from security.tls_pairs import handshake
from tidelog.security.certificates import CertificateAuthority
from tidelog.security.client_security import ClientSecurity
from tidelog.security.listener_security import ListenerSecurity
from tidelog.server.config import BrokerConfig, ConfigError

CA = CertificateAuthority()


def config(tmp_path: Path, more: dict[str, str] | None = None) -> BrokerConfig:
    keystore = tmp_path / "broker.pem"
    if not keystore.exists():
        issued = CA.issue("CN=broker", hosts=["localhost"])
        keystore.write_bytes(issued.chain_pem + issued.key_pem())
    return BrokerConfig(
        {
            "zookeeper.connect": "127.0.0.1:2181",
            "listeners": "PLAINTEXT://:9092,SSL://:9093,SASL_SSL://:9094",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(keystore),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": CA.certificate_pem.decode(),
            "ssl.client.auth": "required",
            **(more or {}),
        }
    )


def test_each_tls_listener_has_its_context(tmp_path: Path) -> None:
    security = ListenerSecurity(config(tmp_path))
    assert [s.name for s in security.listeners] == ["PLAINTEXT", "SSL", "SASL_SSL"]
    assert sorted(security.tls) == ["SASL_SSL", "SSL"]
    assert security.tls["SSL"].front.verify_mode is ssl.CERT_REQUIRED
    # KIP-684: the broker-wide ssl.client.auth does not apply to SASL_SSL listeners...
    assert security.tls["SASL_SSL"].front.verify_mode is ssl.CERT_NONE
    # ...their own, prefixed, does.
    own = ListenerSecurity(
        config(tmp_path, {"listener.name.sasl_ssl.ssl.client.auth": "requested"})
    )
    assert own.tls["SASL_SSL"].front.verify_mode is ssl.CERT_OPTIONAL


def test_new_stores_are_checked_before_they_are_swapped_in(tmp_path: Path) -> None:
    security = ListenerSecurity(config(tmp_path))
    assert security.checked(config(tmp_path)) == {}
    mismatched = tmp_path / "mismatched.pem"
    one, other = CA.issue("CN=one"), CA.issue("CN=other")
    mismatched.write_bytes(one.chain_pem + other.key_pem())
    bad = config(tmp_path, {"listener.name.ssl.ssl.keystore.location": str(mismatched)})
    with pytest.raises(ConfigError, match="does not match"):
        security.reconfigure(bad)
    before = security.tls["SSL"].current
    renewed = tmp_path / "renewed.pem"
    issued = CA.issue("CN=renewed", hosts=["localhost"])
    renewed.write_bytes(issued.chain_pem + issued.key_pem())
    good = config(tmp_path, {"listener.name.ssl.ssl.keystore.location": str(renewed)})
    assert security.reconfigure(good) == ["SSL"]
    assert security.tls["SSL"].current is not before


def test_a_store_file_replaced_in_place_is_read_again(tmp_path: Path) -> None:
    security = ListenerSecurity(config(tmp_path))
    keystore = tmp_path / "broker.pem"
    issued = CA.issue("CN=broker-renewed", hosts=["localhost"])
    keystore.write_bytes(issued.chain_pem + issued.key_pem())
    stat = keystore.stat()
    os.utime(keystore, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert security.reconfigure(config(tmp_path)) == ["SASL_SSL", "SSL"]


def test_a_followed_client_context_presents_the_renewed_certificate(tmp_path: Path) -> None:
    base = config(tmp_path)
    security = ListenerSecurity(base)
    client = ClientSecurity.for_listener(base, "SSL").ssl_context
    security.follow_client("SSL", client)

    def presented() -> str:
        done = handshake(client, security.tls["SSL"].current)
        return dict(x[0] for x in done.server.getpeercert()["subject"])["commonName"]

    assert presented() == "broker"
    renewed = tmp_path / "renewed.pem"
    issued = CA.issue("CN=renewed", hosts=["localhost"])
    renewed.write_bytes(issued.chain_pem + issued.key_pem())
    security.reconfigure(
        config(tmp_path, {"listener.name.ssl.ssl.keystore.location": str(renewed)})
    )
    assert presented() == "renewed"


def test_a_new_truststore_admits_clients_of_its_ca(tmp_path: Path) -> None:
    security = ListenerSecurity(config(tmp_path))
    other_ca = CertificateAuthority("CN=other-ca")
    issued = other_ca.issue("CN=client")
    client = ClientSecurity.from_properties(
        {
            "security.protocol": "SSL",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": CA.certificate_pem.decode(),
            "ssl.keystore.type": "PEM",
            "ssl.keystore.certificate.chain": issued.chain_pem.decode(),
            "ssl.keystore.key": issued.key_pem().decode(),
        }
    ).ssl_context
    with pytest.raises(ssl.SSLError):
        handshake(client, security.tls["SSL"].current)
    both = tmp_path / "both-cas.pem"
    both.write_bytes(CA.certificate_pem + other_ca.certificate_pem)
    trusting = {
        "listener.name.ssl.ssl.truststore.certificates": "",
        "listener.name.ssl.ssl.truststore.location": str(both),
    }
    assert security.reconfigure(config(tmp_path, trusting)) == ["SSL"]
    handshake(client, security.tls["SSL"].current)
