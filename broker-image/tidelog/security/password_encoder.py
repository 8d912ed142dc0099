"""Dynamic broker passwords as Kafka keeps them in ZooKeeper: encrypted with
``password.encoder.secret``, never in the clear (a listener's
``ssl.keystore.password``, ``ssl.key.password``, ``ssl.truststore.password``, a
listener's ``sasl.jaas.config``: every key of type password).

Kafka's format, which Kafka's brokers read and write too: comma-separated ``name:value``
pairs ``keyFactoryAlgorithm``, ``cipherAlgorithm``, ``keyLength`` (bits), ``salt``
(256 random bytes, base64), ``iterations``, ``initializationVector`` (base64),
``encryptedPassword`` (base64) and ``passwordLength`` (characters). The key is PBKDF2 of
the secret (``password.encoder.keyfactory.algorithm``, PBKDF2WithHmacSHA512 by default,
or PBKDF2WithHmacSHA1); the cipher AES/CBC/PKCS5Padding (the only one tidelog offers).
A broker started with ``password.encoder.old.secret`` decodes with that one what the
current secret does not open.
"""

from __future__ import annotations

import base64
import hashlib
import os
from collections.abc import Mapping

from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from tidelog.server.config import ConfigError, Scope, config_key_of

__all__ = ["PasswordEncoder", "decode_passwords", "encode_passwords"]

_CBC = "AES/CBC/PKCS5Padding"
_DIGESTS = {"PBKDF2WithHmacSHA512": "sha512", "PBKDF2WithHmacSHA1": "sha1"}
_SALT_BYTES = 256


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _java_length(text: str) -> int:
    """The length of a Java string: UTF-16 code units."""
    return len(text.encode("utf-16-le")) // 2


class PasswordEncoder:
    def __init__(
        self,
        secret: str,
        key_factory_algorithm: str | None = None,
        cipher_algorithm: str = _CBC,
        key_length: int = 128,
        iterations: int = 4096,
    ):
        self._secret = secret
        self._key_factory = key_factory_algorithm or "PBKDF2WithHmacSHA512"
        if self._key_factory not in _DIGESTS:
            raise ConfigError(
                f"Invalid value {self._key_factory} for configuration "
                f"password.encoder.keyfactory.algorithm: tidelog offers {', '.join(_DIGESTS)}"
            )
        if cipher_algorithm != _CBC:
            raise ConfigError(
                f"Invalid value {cipher_algorithm} for configuration "
                f"password.encoder.cipher.algorithm: tidelog offers {_CBC}"
            )
        self._key_length = key_length
        self._iterations = iterations

    def _key(self, factory: str, salt: bytes, iterations: int, bits: int) -> bytes:
        return hashlib.pbkdf2_hmac(
            _DIGESTS[factory], self._secret.encode(), salt, iterations, dklen=bits // 8
        )

    def encode(self, password: str) -> str:
        salt, iv = os.urandom(_SALT_BYTES), os.urandom(16)
        key = self._key(self._key_factory, salt, self._iterations, self._key_length)
        padder = padding.PKCS7(128).padder()
        data = padder.update(password.encode()) + padder.finalize()
        encryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
        encrypted = encryptor.update(data) + encryptor.finalize()
        fields = {
            "keyFactoryAlgorithm": self._key_factory,
            "cipherAlgorithm": _CBC,
            "keyLength": str(self._key_length),
            "salt": _b64(salt),
            "iterations": str(self._iterations),
            "initializationVector": _b64(iv),
            "encryptedPassword": _b64(encrypted),
            "passwordLength": str(_java_length(password)),
        }
        return ",".join(f"{name}:{value}" for name, value in fields.items())

    def decode(self, encoded: str) -> str:
        """The password; ValueError when the text is not an encoded password this
        secret opens."""
        try:
            fields = dict(item.split(":", 1) for item in encoded.split(","))
            if fields["cipherAlgorithm"] != _CBC or fields["keyFactoryAlgorithm"] not in _DIGESTS:
                raise ValueError("an algorithm tidelog does not offer")
            key = self._key(
                fields["keyFactoryAlgorithm"],
                base64.b64decode(fields["salt"]),
                int(fields["iterations"]),
                int(fields["keyLength"]),
            )
            iv = base64.b64decode(fields["initializationVector"])
            decryptor = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
            data = decryptor.update(base64.b64decode(fields["encryptedPassword"]))
            data += decryptor.finalize()
            unpadder = padding.PKCS7(128).unpadder()
            password = (unpadder.update(data) + unpadder.finalize()).decode()
        except (KeyError, ValueError, UnicodeDecodeError) as error:
            raise ValueError(f"not a password this secret encoded ({error})") from None
        if _java_length(password) != int(fields["passwordLength"]):
            raise ValueError("not a password this secret encoded (length differs)")
        return password

    @classmethod
    def of(cls, config, secret_key: str = "password.encoder.secret") -> PasswordEncoder | None:
        """The encoder a broker's ``password.encoder.*`` settings make; None without a
        secret."""
        secret = config[secret_key]
        if not secret:
            return None
        return cls(
            str(secret),
            config["password.encoder.keyfactory.algorithm"],
            config["password.encoder.cipher.algorithm"],
            config["password.encoder.key.length"],
            config["password.encoder.iterations"],
        )


def _sensitive(key: str) -> bool:
    definition = config_key_of(key)
    return (
        definition is not None and definition.sensitive and definition.scope is not Scope.READ_ONLY
    )


def encode_passwords(config, values: Mapping[str, str]) -> dict[str, str]:
    """A dynamic config set as it is stored: its password values encoded. ConfigError
    when it has a password and the broker no ``password.encoder.secret``."""
    passwords = [k for k in values if _sensitive(k)]
    if not passwords:
        return dict(values)
    encoder = PasswordEncoder.of(config)
    if encoder is None:
        raise ConfigError(
            f"Password encoder secret not configured: {', '.join(sorted(passwords))} cannot "
            "be stored (set password.encoder.secret on every broker)"
        )
    return {k: encoder.encode(v) if k in passwords else v for k, v in values.items()}


def decode_passwords(config, values: Mapping[str, str]) -> dict[str, str]:
    """A stored dynamic config set with its passwords decoded (with the secret, else
    the old secret); ConfigError names a password neither opens."""
    encoders = [
        e
        for e in (
            PasswordEncoder.of(config),
            PasswordEncoder.of(config, "password.encoder.old.secret"),
        )
        if e
    ]
    decoded = dict(values)
    for key, value in values.items():
        if not _sensitive(key):
            continue
        for encoder in encoders:
            try:
                decoded[key] = encoder.decode(value)
                break
            except ValueError:
                continue
        else:
            raise ConfigError(
                f"{key}: the stored password cannot be decoded with password.encoder.secret "
                "(or password.encoder.old.secret)"
            )
    return decoded
