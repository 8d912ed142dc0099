"""DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554), on the
credentials Kafka keeps in ``/config/users/<user>`` (see
:mod:`tidelog.security.scram_credentials`), with the answers of a ZooKeeper-mode Kafka
broker.

Describe: no users (or an empty list) describes every user that has a credential, sorted;
named users are answered once each, in the order asked, RESOURCE_NOT_FOUND for one
without credentials or with an empty name, DUPLICATE_RESOURCE for one named twice.
Credentials are described by mechanism and iterations only.

Alter: the client sends salted passwords (salt, SaltedPassword, iterations), never a
password; the broker keeps the derived keys. Each user's alterations are checked as a
whole, and a user with one bad alteration gets its error and none of its alterations:
an empty name or too few/many iterations is UNACCEPTABLE_CREDENTIAL, a mechanism other
than SCRAM-SHA-256/512 UNSUPPORTED_SASL_MECHANISM, the same (user, mechanism) twice
DUPLICATE_RESOURCE, the deletion of a credential that does not exist RESOURCE_NOT_FOUND.
A user's good alterations are written together, one znode write and one change
notification, keeping the znode's other keys (its quotas). Results come in Kafka's order:
the illegal users, the duplicated, those with a missing deletion, then those altered.
(Both APIs are checked against Kafka 3.9 in tests/integration/test_sasl_kafka_parity.py.)
"""

from __future__ import annotations

import asyncio
from collections import Counter, defaultdict

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.security.scram_credentials import (
    MAX_ITERATIONS,
    SCRAM_MECHANISMS,
    ScramCredential,
    user_credentials,
)
from tidelog.security.scram_store import alter_user_credentials
from tidelog.server.entity_configs import USERS, desanitize, sanitize

__all__ = ["handle_alter_user_scram_credentials", "handle_describe_user_scram_credentials"]

DescribeResponse = response_class(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS)
AlterResponse = response_class(ApiKey.ALTER_USER_SCRAM_CREDENTIALS)

_BY_TYPE = {mechanism.wire_type: mechanism for mechanism in SCRAM_MECHANISMS.values()}


def _stored(broker, user: str) -> dict[str, ScramCredential]:
    """A user's credentials as ZooKeeper holds them now (blocking)."""
    return user_credentials(broker.zk.entity_config(USERS, sanitize(user)))


def _all_stored(broker) -> dict[str, dict[str, ScramCredential]]:
    """Every user with a credential (blocking)."""
    found = {}
    for name in broker.zk.config_entities(USERS):
        credentials = user_credentials(broker.zk.entity_config(USERS, name))
        if credentials:
            found[desanitize(name)] = credentials
    return found


def _described(user: str, credentials: dict[str, ScramCredential]):
    return DescribeResponse.DescribeUserScramCredentialsResult(
        user=user,
        error_code=ErrorCode.NONE,
        credential_infos=[
            DescribeResponse.CredentialInfo(
                mechanism=SCRAM_MECHANISMS[name].wire_type, iterations=credential.iterations
            )
            for name, credential in sorted(
                credentials.items(), key=lambda item: SCRAM_MECHANISMS[item[0]].wire_type
            )
        ],
    )


def _user_error(user: str, error_code: int, message: str):
    return DescribeResponse.DescribeUserScramCredentialsResult(
        user=user, error_code=error_code, error_message=message, credential_infos=[]
    )


async def handle_describe_user_scram_credentials(broker, header, request, context):
    names = [user.name for user in request.users or ()]
    if not names:
        everyone = await asyncio.to_thread(_all_stored, broker)
        results = [_described(user, everyone[user]) for user in sorted(everyone)]
        return DescribeResponse(error_code=ErrorCode.NONE, results=results)
    counts = Counter(names)
    results = []
    for user in dict.fromkeys(names):
        if not user:
            results.append(
                _user_error(
                    user,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    "Username must not be empty",
                )
            )
        elif counts[user] > 1:
            results.append(
                _user_error(
                    user,
                    ErrorCode.DUPLICATE_RESOURCE,
                    "Cannot describe SCRAM credentials for the same user twice in a single "
                    f"request: {user}",
                )
            )
        else:
            credentials = await asyncio.to_thread(_stored, broker, user)
            results.append(
                _described(user, credentials)
                if credentials
                else _user_error(
                    user,
                    ErrorCode.RESOURCE_NOT_FOUND,
                    f"Attempt to describe a user credential that does not exist: {user}",
                )
            )
    return DescribeResponse(error_code=ErrorCode.NONE, results=results)


def _refusal(alteration, upsertion: bool) -> tuple[int, str] | None:
    """The error of one alteration on its own, or None."""
    if not alteration.name:
        return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"
    mechanism = _BY_TYPE.get(alteration.mechanism)
    if mechanism is None:
        return ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"
    if upsertion:
        if alteration.iterations < mechanism.min_iterations:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"
        if alteration.iterations > MAX_ITERATIONS:
            return ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"
    return None


def _alter(broker, user: str, deletions: list, upsertions: list) -> tuple[int, str]:
    """One user's alterations, checked against ZooKeeper and written (blocking)."""
    stored = _stored(broker, user)
    deleted = [_BY_TYPE[d.mechanism].name for d in deletions]
    if any(name not in stored for name in deleted):
        return (
            ErrorCode.RESOURCE_NOT_FOUND,
            "Attempt to delete a user credential that does not exist",
        )
    upserted = {}
    for upsertion in upsertions:
        mechanism = _BY_TYPE[upsertion.mechanism]
        upserted[mechanism.name] = ScramCredential.from_salted_password(
            mechanism, bytes(upsertion.salt), bytes(upsertion.salted_password), upsertion.iterations
        )
    alter_user_credentials(broker.zk, user, upserted, deleted)
    return ErrorCode.NONE, ""


async def handle_alter_user_scram_credentials(broker, header, request, context):
    upsertions, deletions = list(request.upsertions), list(request.deletions)
    illegal: dict[str, tuple[int, str]] = {}
    for alteration, upserting in [(u, True) for u in upsertions] + [(d, False) for d in deletions]:
        refusal = _refusal(alteration, upsertion=upserting)
        if refusal is not None:
            illegal.setdefault(alteration.name, refusal)
    pairs = Counter(
        (a.name, a.mechanism) for a in (*upsertions, *deletions) if a.name not in illegal
    )
    duplicated = dict.fromkeys(user for (user, _), count in pairs.items() if count > 1)
    alterations: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for kind, items in enumerate((upsertions, deletions)):  # (upserted, deleted) a user
        for alteration in items:
            if alteration.name not in illegal and alteration.name not in duplicated:
                alterations[alteration.name][kind].append(alteration)
    outcomes = {}
    for user, (upserted, deleted) in alterations.items():
        outcomes[user] = await asyncio.to_thread(_alter, broker, user, deleted, upserted)
    # in Kafka's order: the illegal, the duplicated, the missing deletions, the done
    duplicate = (
        ErrorCode.DUPLICATE_RESOURCE,
        "A user credential cannot be altered twice in the same request",
    )
    answered = [
        *illegal.items(),
        *((user, duplicate) for user in duplicated),
        *((u, o) for u, o in outcomes.items() if o[0] != ErrorCode.NONE),
        *((u, o) for u, o in outcomes.items() if o[0] == ErrorCode.NONE),
    ]
    return AlterResponse(
        results=[
            AlterResponse.AlterUserScramCredentialsResult(
                user=user, error_code=error_code, error_message=message
            )
            for user, (error_code, message) in answered
        ]
    )
