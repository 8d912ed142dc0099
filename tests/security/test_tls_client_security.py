"""How a client connects, from Kafka client properties and, for the broker's own
connections, from its inter-broker listener's settings."""

from __future__ import annotations

import ssl

import pytest

from tidelog.security.certificates import CertificateAuthority
from tidelog.security.client_security import ClientSecurity
from tidelog.server.config import BrokerConfig, ConfigError

CA = CertificateAuthority()
PLAIN_JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="{u}" '
    'password="{p}" user_{u}="{p}";'
)


def test_plaintext_by_default() -> None:
    security = ClientSecurity.from_properties({})
    assert (security.protocol, security.ssl_context, security.sasl_mechanism) == (
        "PLAINTEXT",
        None,
        None,
    )


def test_ssl_properties_make_a_verifying_context() -> None:
    security = ClientSecurity.from_properties(
        {
            "security.protocol": "ssl",
            "ssl.truststore.type": "PEM",
            "ssl.truststore.certificates": CA.certificate_pem.decode(),
            "ssl.endpoint.identification.algorithm": "",
        }
    )
    assert security.protocol == "SSL" and security.uses_tls and not security.uses_sasl
    assert security.ssl_context.verify_mode is ssl.CERT_REQUIRED
    assert security.ssl_context.check_hostname is False


def test_sasl_ssl_properties_carry_the_mechanism_and_credentials() -> None:
    security = ClientSecurity.from_properties(
        {
            "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512",
            "sasl.jaas.config": "org.apache.kafka.common.security.scram.ScramLoginModule "
            'required username="alice" password="alice-secret";',
        }
    )
    assert security.uses_tls and security.ssl_context.check_hostname
    assert (security.sasl_mechanism, security.sasl_username, security.sasl_password) == (
        "SCRAM-SHA-512",
        "alice",
        "alice-secret",
    )


@pytest.mark.parametrize(
    ("properties", "message"),
    [
        ({"security.protocol": "TLS"}, "security.protocol"),
        ({"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "PLAIN"}, "sasl.jaas.config"),
        (
            {"security.protocol": "SSL", "ssl.truststore.location": "/nonexistent"},
            "ssl.truststore",
        ),
    ],
)
def test_unusable_properties_are_refused_naming_them(properties, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ClientSecurity.from_properties(properties)


def test_the_inter_broker_listener_gives_the_brokers_own_connections_their_security() -> None:
    issued = CA.issue("CN=broker", hosts=["127.0.0.1"])
    config = BrokerConfig(
        {
            "zookeeper.connect": "127.0.0.1:2181",
            "listeners": "CLIENTS://:9092,INTERNAL://:9093",
            "listener.security.protocol.map": "CLIENTS:PLAINTEXT,INTERNAL:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.mechanism.inter.broker.protocol": "PLAIN",
            "listener.name.internal.plain.sasl.jaas.config": PLAIN_JAAS.format(
                u="broker", p="broker-secret"
            ),
            "listener.name.internal.ssl.keystore.type": "PEM",
            "listener.name.internal.ssl.keystore.certificate.chain": issued.chain_pem.decode(),
            "listener.name.internal.ssl.keystore.key": issued.key_pem().decode(),
            "listener.name.internal.ssl.truststore.type": "PEM",
            "listener.name.internal.ssl.truststore.certificates": CA.certificate_pem.decode(),
        }
    )
    security = ClientSecurity.inter_broker(config)
    assert security.protocol == "SASL_SSL" and security.uses_tls
    assert (security.sasl_mechanism, security.sasl_username, security.sasl_password) == (
        "PLAIN",
        "broker",
        "broker-secret",
    )
    assert ClientSecurity.for_listener(config, "CLIENTS") == ClientSecurity()
