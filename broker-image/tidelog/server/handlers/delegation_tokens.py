"""CreateDelegationToken, RenewDelegationToken, ExpireDelegationToken and
DescribeDelegationToken (KIP-48), answered as a ZooKeeper-mode Kafka broker answers them
(see :mod:`tidelog.security.delegation_tokens` for the storage).

Without ``delegation.token.secret.key`` every one is DELEGATION_TOKEN_AUTH_DISABLED. A
token may be asked for, renewed, expired or described only by a principal authenticated
otherwise than by a token, on a connection that authenticates it (SASL, or TLS with a
client certificate): else DELEGATION_TOKEN_REQUEST_NOT_ALLOWED. Create: the owner is the
requester, or another one when the authorizer (if any) gives CreateTokens on that user
(else DELEGATION_TOKEN_AUTHORIZATION_FAILED); renewers are users (else
INVALID_PRINCIPAL_TYPE); the lifetime is at most
``delegation.token.max.lifetime.ms`` and the first expiry
``delegation.token.expiry.time.ms`` away. Renew and expire find the token by its HMAC
(DELEGATION_TOKEN_NOT_FOUND), only for its owner or a renewer
(DELEGATION_TOKEN_OWNER_MISMATCH) and while it has not expired
(DELEGATION_TOKEN_EXPIRED); a negative expiry period expires it at once (the token is
deleted). Describe lists the unexpired tokens of the owners asked for (a token is an
owner's when it owns or renews it; all when null, none when empty) that the principal
owns or renews, or may describe (Describe on the token or DescribeTokens on its owner;
anyone, without an authorizer).
"""

from __future__ import annotations

import asyncio
import time

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.security.acls import AclOperation, ResourceType
from tidelog.security.delegation_tokens import TokenInfo, TokenZnodes, new_token_id
from tidelog.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal

__all__ = [
    "handle_create_delegation_token",
    "handle_describe_delegation_token",
    "handle_expire_delegation_token",
    "handle_renew_delegation_token",
]

CreateResponse = response_class(ApiKey.CREATE_DELEGATION_TOKEN)
RenewResponse = response_class(ApiKey.RENEW_DELEGATION_TOKEN)
ExpireResponse = response_class(ApiKey.EXPIRE_DELEGATION_TOKEN)
DescribeResponse = response_class(ApiKey.DESCRIBE_DELEGATION_TOKEN)


def _now_ms() -> int:
    return int(time.time() * 1000)


def _refusal(broker, context) -> int | None:
    """Why no token request is served on this connection, or None (Kafka's order)."""
    authenticator = context.authenticator
    if (
        context.security_protocol == "PLAINTEXT"
        or (context.security_protocol == "SSL" and context.principal == ANONYMOUS)
        or (authenticator is not None and authenticator.token_authenticated)
    ):
        return ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED
    if broker.delegation_tokens is None:
        return ErrorCode.DELEGATION_TOKEN_AUTH_DISABLED
    return None


def _allowed(broker, context, operation, resource_type, name: str) -> bool:
    """Kafka's check of a right the token APIs need: granted without an authorizer."""
    authorizer = broker.authorizer
    return authorizer is None or authorizer.authorize(
        context.principal, context.peer_host, operation, resource_type, name
    )


def _describable(broker, context, token: TokenInfo) -> bool:
    """Its owner and renewers may describe a token; others need Describe on it, or
    DescribeTokens on its owner."""
    return (
        token.may_renew(context.principal)
        or _allowed(
            broker, context, AclOperation.DESCRIBE, ResourceType.DELEGATION_TOKEN, token.token_id
        )
        or _allowed(
            broker, context, AclOperation.DESCRIBE_TOKENS, ResourceType.USER, str(token.owner)
        )
    )


def _created(error_code: int, context, token: TokenInfo | None = None, hmac: bytes = b""):
    owner = token.owner if token is not None else context.principal
    return CreateResponse(
        error_code=error_code,
        principal_type=owner.principal_type,
        principal_name=owner.name,
        token_requester_principal_type=context.principal.principal_type,
        token_requester_principal_name=context.principal.name,
        issue_timestamp_ms=token.issue_timestamp if token else -1,
        expiry_timestamp_ms=token.expiry_timestamp if token else -1,
        max_timestamp_ms=token.max_timestamp if token else -1,
        token_id=token.token_id if token else "",
        hmac=hmac,
    )


async def handle_create_delegation_token(broker, header, request, context):
    refusal = _refusal(broker, context)
    if refusal == ErrorCode.DELEGATION_TOKEN_REQUEST_NOT_ALLOWED:
        return _created(refusal, context)
    requester = context.principal
    owner = requester
    if header.request_api_version >= 3 and request.owner_principal_name:
        owner = KafkaPrincipal(request.owner_principal_type, request.owner_principal_name)
        if owner != requester and not _allowed(
            broker, context, AclOperation.CREATE_TOKENS, ResourceType.USER, str(owner)
        ):
            return _created(ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED, context)
    renewers = tuple(KafkaPrincipal(r.principal_type, r.principal_name) for r in request.renewers)
    if any(r.principal_type != USER_TYPE for r in renewers):
        return _created(ErrorCode.INVALID_PRINCIPAL_TYPE, context)
    if refusal is not None:  # Kafka checks the rest first
        return _created(refusal, context)
    config, now = broker.config, _now_ms()
    longest = config["delegation.token.max.lifetime.ms"]
    lifetime = longest if request.max_lifetime_ms <= 0 else min(request.max_lifetime_ms, longest)
    token = TokenInfo(
        new_token_id(),
        owner,
        requester,
        renewers,
        now,
        min(now + lifetime, now + config["delegation.token.expiry.time.ms"]),
        now + lifetime,
    )
    await asyncio.to_thread(TokenZnodes(broker.zk.zk).write, token)
    broker.delegation_tokens.set(token)
    return _created(ErrorCode.NONE, context, token, broker.delegation_tokens.hmac(token.token_id))


def _renewable(broker, context, hmac: bytes) -> tuple[int, TokenInfo | None]:
    refusal = _refusal(broker, context)
    if refusal is not None:
        return refusal, None
    token = broker.delegation_tokens.by_hmac(bytes(hmac))
    if token is None:
        return ErrorCode.DELEGATION_TOKEN_NOT_FOUND, None
    if not token.may_renew(context.principal):
        return ErrorCode.DELEGATION_TOKEN_OWNER_MISMATCH, None
    now = _now_ms()
    if token.max_timestamp < now or token.expiry_timestamp < now:
        return ErrorCode.DELEGATION_TOKEN_EXPIRED, None
    return ErrorCode.NONE, token


async def _store(broker, token: TokenInfo) -> None:
    await asyncio.to_thread(TokenZnodes(broker.zk.zk).write, token)
    broker.delegation_tokens.set(token)


async def handle_renew_delegation_token(broker, header, request, context):
    error_code, token = _renewable(broker, context, request.hmac)
    if token is None:
        return RenewResponse(error_code=error_code, expiry_timestamp_ms=-1)
    period = request.renew_period_ms
    if period < 0:
        period = broker.config["delegation.token.expiry.time.ms"]
    expiry = min(token.max_timestamp, _now_ms() + period)
    await _store(broker, _with_expiry(token, expiry))
    return RenewResponse(error_code=ErrorCode.NONE, expiry_timestamp_ms=expiry)


async def handle_expire_delegation_token(broker, header, request, context):
    error_code, token = _renewable(broker, context, request.hmac)
    if token is None:
        return ExpireResponse(error_code=error_code, expiry_timestamp_ms=-1)
    now = _now_ms()
    if request.expiry_time_period_ms < 0:
        await asyncio.to_thread(TokenZnodes(broker.zk.zk).delete, token.token_id)
        broker.delegation_tokens.remove(token.token_id)
        return ExpireResponse(error_code=ErrorCode.NONE, expiry_timestamp_ms=now)
    expiry = min(token.max_timestamp, now + request.expiry_time_period_ms)
    await _store(broker, _with_expiry(token, expiry))
    return ExpireResponse(error_code=ErrorCode.NONE, expiry_timestamp_ms=expiry)


def _with_expiry(token: TokenInfo, expiry: int) -> TokenInfo:
    return TokenInfo(
        token.token_id,
        token.owner,
        token.requester,
        token.renewers,
        token.issue_timestamp,
        expiry,
        token.max_timestamp,
    )


async def handle_describe_delegation_token(broker, header, request, context):
    refusal = _refusal(broker, context)
    if refusal is not None:
        return DescribeResponse(error_code=refusal, tokens=[])
    owners = (
        None
        if request.owners is None
        else {KafkaPrincipal(o.principal_type, o.principal_name) for o in request.owners}
    )
    now, cache = _now_ms(), broker.delegation_tokens
    described = [
        DescribeResponse.DescribedDelegationToken(
            principal_type=token.owner.principal_type,
            principal_name=token.owner.name,
            token_requester_principal_type=token.requester.principal_type,
            token_requester_principal_name=token.requester.name,
            issue_timestamp=token.issue_timestamp,
            expiry_timestamp=token.expiry_timestamp,
            max_timestamp=token.max_timestamp,
            token_id=token.token_id,
            hmac=cache.hmac(token.token_id),
            renewers=[
                DescribeResponse.DescribedDelegationTokenRenewer(
                    principal_type=r.principal_type, principal_name=r.name
                )
                for r in token.renewers
            ],
        )
        for token in sorted(cache.tokens(), key=lambda t: t.issue_timestamp)
        if token.expiry_timestamp >= now
        and (owners is None or any(token.may_renew(owner) for owner in owners))
        and _describable(broker, context, token)
    ]
    return DescribeResponse(error_code=ErrorCode.NONE, tokens=described)
