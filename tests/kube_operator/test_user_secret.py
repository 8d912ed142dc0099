"""The Secret a User's application mounts: a SCRAM user's sasl.jaas.config is read back
by the same parser the brokers and tools use (quotes and backslashes included), a TLS
user's PKCS#12 keystore opens with its password and holds its key and certificate; the
password is generated once and kept, or taken from the Secret the spec names."""

from __future__ import annotations

import base64
import string

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from tidelog.security.certificates import CertificateAuthority
from tidelog.security.jaas import parse_jaas_config
from tidelog_operator.user.secret import (
    generate_password,
    jaas_config,
    owned_by,
    password_problem,
    scram_password,
    scram_secret,
    secret_value,
    tls_secret,
    user_labels,
)
from tidelog_operator.user.spec import TLS, UserSpec

ALICE = UserSpec(name="alice", namespace="apps", cluster="events", authentication="scram-sha-512")
CA_PEM = b"-----BEGIN CERTIFICATE-----\nbundle\n-----END CERTIFICATE-----\n"


def decoded(secret: dict) -> dict[str, bytes]:
    return {key: base64.b64decode(value) for key, value in secret["data"].items()}


@pytest.mark.parametrize("password", ["s3cret", 'quo"te', "back\\slash", "sp ace;x=1", "ünï"])
def test_the_jaas_line_parses_back_to_the_username_and_password(password):
    entry = parse_jaas_config(jaas_config("alice", password))
    assert entry.login_module == "org.apache.kafka.common.security.scram.ScramLoginModule"
    assert entry.control_flag == "required"
    assert entry.options == {"username": "alice", "password": password}


def test_generated_passwords_are_32_letters_and_digits_each_new():
    first, second = generate_password(), generate_password()
    assert len(first) == 32 and set(first) <= set(string.ascii_letters + string.digits)
    assert first != second
    assert password_problem(first) is None


@pytest.mark.parametrize(
    ("password", "problem"),
    [("", "empty"), ("secret\n", "control character"), ("a\tb", "control character")],
)
def test_a_password_a_jaas_line_cannot_carry_is_refused(password, problem):
    assert problem in password_problem(password)


def test_a_scram_users_secret():
    secret = scram_secret(ALICE, "pw-1", CA_PEM)
    assert secret["metadata"] == {
        "name": "alice",
        "namespace": "apps",
        "labels": {**user_labels("events", "alice")},
    }
    assert secret["metadata"]["labels"]["tidelog.dev/user"] == "alice"
    assert secret["metadata"]["labels"]["tidelog.dev/cluster"] == "events"
    data = decoded(secret)
    assert set(data) == {"password", "sasl.jaas.config", "ca.crt"}
    assert data["password"] == b"pw-1" and data["ca.crt"] == CA_PEM
    options = parse_jaas_config(data["sasl.jaas.config"].decode()).options
    assert options == {"username": "alice", "password": "pw-1"}
    assert secret_value(secret["data"], "password") == "pw-1"
    assert secret_value(secret["data"], "user.key") is None and secret_value(None, "x") is None


def test_a_tls_users_secret_holds_a_keystore_that_opens_with_its_password():
    bob = UserSpec(name="bob", namespace="apps", cluster="events", authentication=TLS)
    clients_ca = CertificateAuthority("CN=events-clients-ca,O=tidelog.dev")
    issued = clients_ca.issue(bob.certificate_subject)
    data = decoded(tls_secret(bob, issued, CA_PEM, "store-pw"))
    assert set(data) == {"user.crt", "user.key", "user.p12", "user.password", "ca.crt"}
    assert data["user.password"] == b"store-pw" and data["ca.crt"] == CA_PEM
    assert data["user.crt"] == issued.certificate_pem
    key = serialization.load_pem_private_key(data["user.key"], None)
    assert key.private_numbers() == issued.key.private_numbers()
    stored_key, certificate, chain = pkcs12.load_key_and_certificates(data["user.p12"], b"store-pw")
    assert stored_key.private_numbers() == issued.key.private_numbers()
    assert certificate == issued.certificate
    assert certificate.subject.rfc4514_string() == "CN=bob"
    assert chain == [clients_ca.certificate]
    with pytest.raises(ValueError):
        pkcs12.load_key_and_certificates(data["user.p12"], b"wrong")


def test_a_generated_password_is_kept_and_a_referenced_one_wins():
    def generate() -> str:
        return "new"

    assert scram_password(None, None, generate) == ("new", True)  # no Secret yet
    assert scram_password(None, "kept", generate) == ("kept", False)
    assert scram_password("theirs", "kept", generate) == ("theirs", True)  # changed there
    assert scram_password("theirs", "theirs", generate) == ("theirs", False)
    assert scram_password("theirs", None, generate) == ("theirs", True)


def test_only_a_secret_labelled_for_the_user_and_cluster_is_its_own():
    assert owned_by(user_labels("events", "alice"), ALICE)
    assert not owned_by(user_labels("other", "alice"), ALICE)
    assert not owned_by(user_labels("events", "bob"), ALICE)
    assert not owned_by({}, ALICE) and not owned_by(None, ALICE)
