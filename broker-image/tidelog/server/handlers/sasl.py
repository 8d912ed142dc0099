"""SaslHandshake (v0-1) and SaslAuthenticate (v0-2): the connection's authenticator
(:mod:`tidelog.security.authenticator`) answers them. On a listener without SASL, or
once authenticated, they get ILLEGAL_SASL_STATE as Kafka's request handlers answer."""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode

__all__ = ["handle_sasl_authenticate", "handle_sasl_handshake"]

SaslHandshakeResponse = response_class(ApiKey.SASL_HANDSHAKE)
SaslAuthenticateResponse = response_class(ApiKey.SASL_AUTHENTICATE)


async def handle_sasl_handshake(broker, header, request, context):
    authenticator = context.authenticator
    if authenticator is None:
        return SaslHandshakeResponse(error_code=ErrorCode.ILLEGAL_SASL_STATE, mechanisms=[])
    error_code, mechanisms = authenticator.handshake(request.mechanism, header.request_api_version)
    return SaslHandshakeResponse(error_code=error_code, mechanisms=mechanisms)


async def handle_sasl_authenticate(broker, header, request, context):
    authenticator = context.authenticator
    if authenticator is None:
        return SaslAuthenticateResponse(
            error_code=ErrorCode.ILLEGAL_SASL_STATE,
            error_message="SaslAuthenticate request received after successful authentication",
            auth_bytes=b"",
        )
    result = await authenticator.authenticate(request.auth_bytes)
    return SaslAuthenticateResponse(
        error_code=result.error_code,
        error_message=result.error_message,
        auth_bytes=result.auth_bytes,
        session_lifetime_ms=result.session_lifetime_ms,
    )
