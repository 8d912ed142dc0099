"""What the SASL integration tests share: a broker's SASL listener settings (Kafka's
keys and JAAS entries), SCRAM users made through AlterUserScramCredentials, and the wait
until a broker lets a user log in (its cache of /config/users has caught up)."""

from __future__ import annotations

import os

from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.sasl_client import SaslAuthenticationFailed, authenticate
from tidelog.security.scram_credentials import SCRAM_MECHANISMS
from waiting import wait_until

__all__ = [
    "ADMIN",
    "MECHANISMS",
    "PLAIN_MODULE",
    "SCRAM_MODULE",
    "create_scram_user",
    "jaas",
    "sasl_listener_overrides",
    "wait_for_login",
]

MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
ADMIN = ("admin", "admin-secret")


def jaas(module: str, username: str, password: str, **options: str) -> str:
    """One JAAS entry as Kafka's sasl.jaas.config takes it."""
    extra = "".join(f' {key}="{value}"' for key, value in options.items())
    return f'{module} required username="{username}" password="{password}"{extra};'


def sasl_listener_overrides(
    listener: str, mechanisms: tuple[str, ...], plain_users: dict[str, str]
) -> dict[str, str]:
    """A SASL listener's mechanisms and their JAAS entries (PLAIN's with its users, the
    broker itself logging in as ``admin``)."""
    prefix = f"listener.name.{listener.lower()}."
    overrides = {f"{prefix}sasl.enabled.mechanisms": ",".join(mechanisms)}
    for mechanism in mechanisms:
        if mechanism == "PLAIN":
            users = {f"user_{name}": password for name, password in plain_users.items()}
            entry = jaas(PLAIN_MODULE, *ADMIN, **users)
        else:
            entry = jaas(SCRAM_MODULE, *ADMIN)
        overrides[f"{prefix}{mechanism.lower()}.sasl.jaas.config"] = entry
    return overrides


def create_scram_user(
    port: int, user: str, password: str, mechanisms=tuple(SCRAM_MECHANISMS)
) -> None:
    """The user's credentials, through a broker's PLAINTEXT listener on ``port``."""
    upsertions = []
    for name in mechanisms:
        mechanism = SCRAM_MECHANISMS[name]
        salt = os.urandom(16)
        upsertions.append(
            {
                "name": user,
                "mechanism": mechanism.wire_type,
                "iterations": 4096,
                "salt": salt,
                "salted_password": mechanism.salted_password(password, salt, 4096),
            }
        )
    with BrokerConnection("127.0.0.1", port) as connection:
        answer = connection.request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {"deletions": [], "upsertions": upsertions}
        )
    assert [r.error_code for r in answer.results] == [ErrorCode.NONE], answer


def logs_in(port: int, mechanism: str, user: str, password: str) -> bool:
    with BrokerConnection("127.0.0.1", port) as connection:
        try:
            authenticate(connection.request, mechanism, user, password)
        except SaslAuthenticationFailed:
            return False
    return True


def wait_for_login(port: int, mechanism: str, user: str, password: str) -> None:
    """Until the broker behind the SASL listener on ``port`` accepts the user."""
    wait_until(
        lambda: logs_in(port, mechanism, user, password),
        f"{user} logs in with {mechanism} on port {port}",
    )
