"""The Secret a User's application mounts, built from the credentials it is given (pure
builders: nothing here is random but :func:`generate_password`), and the reading of the
passwords the operator finds in Secrets.

The Secret is named like the User, in its namespace, with the Cluster's labels and
``tidelog.dev/user: <name>`` (which is how the operator knows a Secret of that name is
its own, :func:`owned_by`). Its keys are Strimzi's:

* a SCRAM-SHA-512 user: ``password``, ``sasl.jaas.config`` (Kafka's client property,
  ``ScramLoginModule`` with the username and password quoted), ``ca.crt``;
* a TLS user: ``user.crt`` (its certificate, PEM), ``user.key`` (its private key,
  PKCS#8 PEM), ``user.p12`` (a PKCS#12 keystore of both and the clients CA) with its
  password ``user.password``, ``ca.crt``.

``ca.crt`` holds the certificates a client trusts the brokers by (the Cluster's
``<cluster>-cluster-ca-cert`` bundle), so that the Secret is all an application needs.
"""

from __future__ import annotations

import base64
import secrets
import string
from collections.abc import Callable, Mapping
from typing import Any

from tidelog.security.certificates import Issued, pkcs12_store
from tidelog_operator.names import CLUSTER_LABEL, cluster_labels
from tidelog_operator.user.spec import UserSpec

__all__ = [
    "CA_CERT",
    "PASSWORD",
    "PASSWORD_LENGTH",
    "SASL_JAAS_CONFIG",
    "SCRAM_LOGIN_MODULE",
    "USER_CRT",
    "USER_KEY",
    "USER_LABEL",
    "USER_P12",
    "USER_PASSWORD",
    "generate_password",
    "jaas_config",
    "owned_by",
    "password_problem",
    "scram_password",
    "scram_secret",
    "secret_value",
    "tls_secret",
    "user_labels",
]

PASSWORD = "password"
SASL_JAAS_CONFIG = "sasl.jaas.config"
CA_CERT = "ca.crt"
USER_CRT = "user.crt"
USER_KEY = "user.key"
USER_P12 = "user.p12"
USER_PASSWORD = "user.password"
USER_LABEL = "tidelog.dev/user"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
PASSWORD_LENGTH = 32
_ALPHABET = string.ascii_letters + string.digits


def generate_password(length: int = PASSWORD_LENGTH) -> str:
    """A new password: ``length`` letters and digits from :mod:`secrets`."""
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def password_problem(password: str) -> str | None:
    """Why ``password`` cannot be a SCRAM user's password, or None: it is empty, or it
    holds a control character (a line break, often the end of a file made into a
    Secret), which a ``sasl.jaas.config`` line cannot carry."""
    if not password:
        return "the password is empty"
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in password):
        return "the password holds a control character (a line break at its end?)"
    return None


def _quoted(value: str) -> str:
    """``value`` in double quotes, ``\\`` and ``"`` escaped, as Kafka's JAAS parser reads
    a quoted option."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def jaas_config(username: str, password: str) -> str:
    """Kafka's ``sasl.jaas.config`` for a SCRAM login as ``username``."""
    return (
        f"{SCRAM_LOGIN_MODULE} required "
        f"username={_quoted(username)} password={_quoted(password)};"
    )


def secret_value(data: Mapping[str, str] | None, key: str) -> str | None:
    """The text under ``key`` of a Secret's ``data`` (base64, as the API serves it), or
    None when there is no Secret or no such key."""
    if not data or data.get(key) is None:
        return None
    return base64.b64decode(data[key]).decode()


def scram_password(
    referenced: str | None,
    held: str | None,
    generate: Callable[[], str] = generate_password,
) -> tuple[str, bool]:
    """The password a SCRAM user's credential is made from, and whether it differs from
    the one its Secret holds (then the credential is made again before the Secret is
    written: :attr:`~tidelog_operator.user.plan.Actual.password_changed`).

    ``referenced`` is the password ``spec.authentication.password`` names, ``held`` the
    one the user's Secret holds (None: no Secret yet). Without a reference, the held
    password stays for the life of the User, and a new one is made when there is none.
    """
    password = referenced if referenced is not None else held
    if password is None:
        password = generate()
    return password, password != held


def user_labels(cluster: str, user: str) -> dict[str, str]:
    """The labels of a User's Secret: its Cluster's, and the user's name."""
    return {**cluster_labels(cluster), USER_LABEL: user}


def owned_by(labels: Mapping[str, str] | None, spec: UserSpec) -> bool:
    """Whether a Secret with ``labels`` is the one the operator writes for ``spec`` (a
    Secret of that name that is not must be left alone)."""
    labels = labels or {}
    return labels.get(USER_LABEL) == spec.name and labels.get(CLUSTER_LABEL) == spec.cluster


def _secret(spec: UserSpec, data: Mapping[str, bytes]) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": spec.secret_name,
            "namespace": spec.namespace,
            "labels": user_labels(spec.cluster, spec.name),
        },
        "data": {key: base64.b64encode(value).decode() for key, value in sorted(data.items())},
    }


def scram_secret(spec: UserSpec, password: str, ca_pem: bytes) -> dict[str, Any]:
    """A SCRAM-SHA-512 user's Secret: ``password``, ``sasl.jaas.config``, ``ca.crt``."""
    return _secret(
        spec,
        {
            PASSWORD: password.encode(),
            SASL_JAAS_CONFIG: jaas_config(spec.name, password).encode(),
            CA_CERT: ca_pem,
        },
    )


def tls_secret(
    spec: UserSpec, issued: Issued, ca_pem: bytes, store_password: str
) -> dict[str, Any]:
    """A TLS user's Secret: its certificate (``issued``, from the clients CA) and key as
    PEM, the PKCS#12 keystore of both protected by ``store_password``, that password,
    and ``ca.crt``. The keystore's encryption is salted anew on each call: build the
    Secret when the certificate or the CA bundle changes, not to compare with the one
    there."""
    return _secret(
        spec,
        {
            USER_CRT: issued.certificate_pem,
            USER_KEY: issued.key_pem(),
            USER_P12: pkcs12_store(store_password, issued),
            USER_PASSWORD: store_password.encode(),
            CA_CERT: ca_pem,
        },
    )
