"""Stores made by Java's keytool, as Kafka users have them: a PKCS12 truststore of
trusted-certificate entries and a PKCS12 keystore are read; a JKS keystore is refused
with one line whose conversion command, run as it is, makes a store that is read."""

from __future__ import annotations

import re
import shlex
import subprocess
from pathlib import Path

import pytest

from kafka_reference import java_executable
from security.tls_pairs import handshake
from tidelog.security.certificates import CertificateAuthority, pkcs12_store
from tidelog.security.tls import client_context, server_context
from tidelog.server.config_key import ConfigError

STORE_PASSWORD = "store-secret"


def keytool(*args: str, cwd: Path) -> None:
    tool = Path(java_executable()).with_name("keytool")
    done = subprocess.run([str(tool), *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


@pytest.fixture
def stores(tmp_path: Path) -> Path:
    ca = CertificateAuthority()
    issued = ca.issue("CN=broker", hosts=["localhost"], rsa_bits=2048)
    (tmp_path / "ca.pem").write_bytes(ca.certificate_pem)
    (tmp_path / "made.p12").write_bytes(pkcs12_store(STORE_PASSWORD, issued))
    keytool(
        *("-importcert", "-noprompt", "-alias", "ca", "-file", "ca.pem"),
        *("-storetype", "PKCS12", "-keystore", "trust.p12", "-storepass", STORE_PASSWORD),
        cwd=tmp_path,
    )
    keytool(
        *("-importkeystore", "-srckeystore", "made.p12", "-srcstoretype", "PKCS12"),
        *("-srcstorepass", STORE_PASSWORD, "-destkeystore", "broker.jks"),
        *("-deststoretype", "JKS", "-deststorepass", STORE_PASSWORD),
        cwd=tmp_path,
    )
    return tmp_path


def truststore(directory: Path) -> dict[str, object]:
    return {
        "ssl.truststore.type": "PKCS12",
        "ssl.truststore.location": str(directory / "trust.p12"),
        "ssl.truststore.password": STORE_PASSWORD,
    }


def keystore(location: Path) -> dict[str, object]:
    return {"ssl.keystore.location": str(location), "ssl.keystore.password": STORE_PASSWORD}


def test_a_jks_keystore_is_refused_with_a_conversion_that_works(stores: Path) -> None:
    with pytest.raises(ConfigError) as refused:
        server_context(keystore(stores / "broker.jks"))
    message = str(refused.value)
    command = re.search(r"`(keytool [^`]*)`", message)[1]
    # The command as the line gives it, with the store's password as keytool asks it.
    words = shlex.split(command)[1:]
    keytool(*words, "-srcstorepass", STORE_PASSWORD, "-deststorepass", STORE_PASSWORD, cwd=stores)
    converted = Path(words[words.index("-destkeystore") + 1])
    server = server_context(keystore(converted) | {"ssl.keystore.type": "PKCS12"})
    handshake(client_context(truststore(stores)), server)
