"""Dynamic broker passwords encoded as Kafka encodes them in ZooKeeper."""

from __future__ import annotations

import pytest

from tidelog.security.password_encoder import (
    PasswordEncoder,
    decode_passwords,
    encode_passwords,
)
from tidelog.server.config import BrokerConfig, ConfigError

KEY = "listener.name.ssl.ssl.keystore.password"


def config(**secrets: str) -> BrokerConfig:
    return BrokerConfig(
        {
            "zookeeper.connect": "127.0.0.1:2181",
            **{f"password.encoder.{k.replace('_', '.')}": v for k, v in secrets.items()},
        }
    )


def test_an_encoded_password_is_kafkas_fields_and_opens_with_the_secret() -> None:
    encoder = PasswordEncoder("s3cret")
    encoded = encoder.encode("keystore-pass")
    fields = dict(item.split(":", 1) for item in encoded.split(","))
    assert sorted(fields) == sorted(
        [
            "keyFactoryAlgorithm",
            "cipherAlgorithm",
            "keyLength",
            "salt",
            "iterations",
            "initializationVector",
            "encryptedPassword",
            "passwordLength",
        ]
    )
    assert "keystore-pass" not in encoded
    assert encoder.decode(encoded) == "keystore-pass"
    assert PasswordEncoder("s3cret", "PBKDF2WithHmacSHA1").decode(encoded) == "keystore-pass"
    with pytest.raises(ValueError):
        PasswordEncoder("other").decode(encoded)


def test_a_set_is_stored_with_its_passwords_encoded_and_read_back() -> None:
    broker = config(secret="s3cret")
    stored = encode_passwords(broker, {KEY: "pass", "log.retention.ms": "1000"})
    assert stored["log.retention.ms"] == "1000" and stored[KEY] != "pass"
    assert decode_passwords(broker, stored) == {KEY: "pass", "log.retention.ms": "1000"}


def test_without_a_secret_no_password_is_stored() -> None:
    with pytest.raises(ConfigError, match="Password encoder secret not configured"):
        encode_passwords(config(), {KEY: "pass"})
    assert encode_passwords(config(), {"log.retention.ms": "1"}) == {"log.retention.ms": "1"}


def test_the_old_secret_opens_what_the_new_one_does_not() -> None:
    stored = encode_passwords(config(secret="old"), {KEY: "pass"})
    rotated = config(secret="new", old_secret="old")
    assert decode_passwords(rotated, stored) == {KEY: "pass"}
    with pytest.raises(ConfigError, match=KEY):
        decode_passwords(config(secret="new"), stored)


def test_only_kafkas_algorithms_that_tidelog_offers_are_taken() -> None:
    with pytest.raises(ConfigError, match="password.encoder.cipher.algorithm"):
        PasswordEncoder("s", cipher_algorithm="AES/GCM/NoPadding")
    with pytest.raises(ConfigError, match="password.encoder.keyfactory.algorithm"):
        PasswordEncoder("s", "PBKDF2WithHmacMD5")
