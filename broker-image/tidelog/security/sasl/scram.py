"""SCRAM-SHA-256 and SCRAM-SHA-512, server side (RFC 5802, RFC 7677), as Kafka serves
them.

Two round trips. The client's first message (``n,,n=<user>,r=<nonce>``, with an optional
``a=<authzid>`` and extensions) gets ``r=<nonce+server nonce>,s=<salt>,i=<iterations>``
from the user's stored credential; the client's final message
(``c=<gs2 header>,r=<nonce>,p=<proof>``) is checked against the stored key and gets
``v=<server signature>``. Kafka's differences from the RFC: no channel binding (the gs2
flag is ``n`` or ``y``), no SASLprep, the only extension is ``tokenauth=true`` (a
delegation token's id as the user and its HMAC as the password; the authenticated user is
then the token's owner), and any failure is a :class:`SaslFailure` (the client learns no
more than "invalid credentials"), but for an authzid that is not the user.
"""

from __future__ import annotations

import base64
import binascii
import hmac
import re
import secrets
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.security.sasl.mechanism import SaslAuthenticationError, SaslFailure
from tidelog.security.scram_credentials import SCRAM_MECHANISMS, ScramCredential

__all__ = ["CredentialLookup", "ScramServer", "TokenLookup"]

CredentialLookup = Callable[[str], ScramCredential | None]
"""user → its credential for the mechanism, or None."""

TokenLookup = Callable[[str], tuple[ScramCredential, str, int] | None]
"""delegation token id → (its credential for the mechanism, its owner, when it expires in
ms since the epoch), or None."""

SUPPORTED_EXTENSIONS = frozenset({"tokenauth"})

# gs2 header, then the bare message: [m=...,]n=<saslname>,r=<nonce>[,<extensions>]
_CLIENT_FIRST = re.compile(
    r"(?P<gs2>[ny],(?:a=(?P<authzid>[^,]*))?,)"
    r"(?P<bare>n=(?P<saslname>[^,]*),r=(?P<nonce>[\x21-\x2b\x2d-\x7e]+)(?P<extensions>(?:,[^,]*)*))"
)
_CLIENT_FINAL = re.compile(
    r"(?P<without_proof>c=(?P<binding>[^,]*),r=(?P<nonce>[^,]+)(?:,[^,]*)*?),p=(?P<proof>[^,]+)"
)
_SASLNAME_ESCAPES = re.compile(r"=2C|=3D|=")


def sasl_name_to_user(saslname: str) -> str:
    """RFC 5802's escaping undone (``=2C`` → ``,``, ``=3D`` → ``=``); SaslFailure for a
    lone ``=``."""

    def unescape(match: re.Match) -> str:
        if match.group() == "=":
            raise SaslFailure("Invalid SCRAM username: bad escape")
        return "," if match.group() == "=2C" else "="

    return _SASLNAME_ESCAPES.sub(unescape, saslname)


def _extensions(text: str) -> dict[str, str]:
    pairs = {}
    for item in text.split(",")[1:]:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise SaslFailure(f"Invalid SCRAM extension {item!r}")
        pairs[key] = value
    return pairs


@dataclass
class _First:
    gs2_header: str
    bare: str
    server_first: str
    nonce: str
    credential: ScramCredential
    user: str


class ScramServer:
    """One SCRAM exchange: :meth:`evaluate` the client-first message, then the
    client-final one; complete after the second."""

    def __init__(
        self,
        mechanism: str,
        credentials: CredentialLookup,
        tokens: TokenLookup | None = None,
        nonce: Callable[[], str] = lambda: secrets.token_urlsafe(24),
    ):
        self.name = mechanism
        self._mechanism = SCRAM_MECHANISMS[mechanism]
        self._credentials = credentials
        self._tokens = tokens
        self._new_nonce = nonce
        self._first: _First | None = None
        self._user: str | None = None
        self._failed = False
        self.token_authenticated = False
        # when the credential expires (a delegation token's expiry), in ms since the epoch
        self.credential_expiry_ms: int | None = None

    @property
    def complete(self) -> bool:
        return self._user is not None

    @property
    def authorization_id(self) -> str:
        if self._user is None:
            raise RuntimeError(f"{self.name} authentication has not completed")
        return self._user

    def evaluate(self, token: bytes) -> bytes:
        if self._failed or self.complete:
            raise SaslFailure(f"{self.name} exchange is over")
        try:
            text = token.decode()
            if self._first is None:
                return self._client_first(text).encode()
            return self._client_final(text).encode()
        except SaslFailure:
            self._failed = True
            raise
        except UnicodeDecodeError:
            self._failed = True
            raise SaslFailure(f"{self.name} message is not UTF-8") from None

    def _client_first(self, text: str) -> str:
        match = _CLIENT_FIRST.fullmatch(text)
        if match is None:
            raise SaslFailure(f"Invalid {self.name} client first message")
        extensions = _extensions(match["extensions"])
        unsupported = set(extensions) - SUPPORTED_EXTENSIONS
        if unsupported:
            raise SaslFailure(f"Unsupported SCRAM extensions {sorted(unsupported)}")
        user = sasl_name_to_user(match["saslname"])
        if extensions.get("tokenauth", "false").lower() == "true":
            found = self._tokens(user) if self._tokens is not None else None
            credential, owner, expiry = found if found is not None else (None, "", None)
            self.token_authenticated = True
            self.credential_expiry_ms = expiry
        else:
            credential, owner = self._credentials(user), user
        if credential is None:
            raise SaslFailure(f"no {self.name} credential for {user!r}")
        authzid = match["authzid"]
        if authzid and authzid != user:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is "
                "different from username"
            )
        if credential.iterations < self._mechanism.min_iterations:
            raise SaslFailure(
                f"Iterations {credential.iterations} is less than the minimum "
                f"{self._mechanism.min_iterations} for {self.name}"
            )
        nonce = match["nonce"] + self._new_nonce()
        server_first = (
            f"r={nonce},s={base64.b64encode(credential.salt).decode()},i={credential.iterations}"
        )
        self._first = _First(match["gs2"], match["bare"], server_first, nonce, credential, owner)
        return server_first

    def _client_final(self, text: str) -> str:
        first = self._first
        match = _CLIENT_FINAL.fullmatch(text)
        if match is None:
            raise SaslFailure(f"Invalid {self.name} client final message")
        try:
            binding = base64.b64decode(match["binding"], validate=True)
            proof = base64.b64decode(match["proof"], validate=True)
        except (binascii.Error, ValueError):
            raise SaslFailure(f"Invalid base64 in {self.name} client final message") from None
        if binding != first.gs2_header.encode():
            raise SaslFailure("Invalid channel binding")
        if match["nonce"] != first.nonce:
            raise SaslFailure("Invalid nonce")
        mechanism, credential = self._mechanism, first.credential
        auth_message = f"{first.bare},{first.server_first},{match['without_proof']}".encode()
        signature = mechanism.hmac(credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise SaslFailure("Invalid client proof")
        client_key = bytes(a ^ b for a, b in zip(proof, signature, strict=True))
        if not hmac.compare_digest(mechanism.hash(client_key), credential.stored_key):
            raise SaslFailure("Invalid client credentials")
        self._user = first.user
        server_signature = mechanism.hmac(credential.server_key, auth_message)
        return f"v={base64.b64encode(server_signature).decode()}"
