"""Delegation tokens (KIP-48) as a ZooKeeper-mode Kafka broker keeps them (seed 003: a
light authentication that complements SASL, created, renewed, expired and described
with ``kafka-delegation-tokens``).

A token is its id, owner, requester, renewers and three timestamps (issued, expires,
may not outlive), stored in ``/delegation_token/tokens/<id>`` as Kafka's version 3
document (principals written as Kafka's ``Sanitizer`` writes them). Its HMAC is never
stored: every broker computes it, HMAC-SHA512 of the id under
``delegation.token.secret.key``, so all brokers sharing that key agree. A client logs in
with SCRAM (``tokenauth=true``), the token id as user and the base64 of the HMAC as
password; each broker keeps, in memory, SCRAM credentials made from that password for
every token (:class:`DelegationTokenCache`), and the authenticated principal is the
token's owner. A change is announced by a sequential
``/delegation_token/token_changes/token_change_<n>`` holding the token id, which every
broker follows (:class:`TokenChangeFollower`) and reads the token again.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import logging
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass

from kazoo.exceptions import ConnectionLoss, NoNodeError

from tidelog.controller.zk_session import SESSION_ERRORS
from tidelog.security.principal import KafkaPrincipal
from tidelog.security.scram_credentials import SCRAM_MECHANISMS, ScramCredential
from tidelog.server.entity_configs import desanitize, sanitize

__all__ = [
    "TOKENS",
    "TOKEN_CHANGES",
    "DelegationTokenCache",
    "TokenChangeFollower",
    "TokenInfo",
    "TokenZnodes",
    "new_token_id",
    "token_hmac",
]

logger = logging.getLogger(__name__)

TOKENS = "/delegation_token/tokens"
TOKEN_CHANGES = "/delegation_token/token_changes"
CHANGE_PREFIX = "token_change_"
VERSION = 3
RETRY_AFTER_FAILURE_S = 1


def new_token_id() -> str:
    """A random id: a UUID's 16 bytes in URL-safe base64 without padding, as Kafka's."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode()


def token_hmac(secret: str, token_id: str) -> bytes:
    """The token's HMAC (its password, once base64-encoded)."""
    return hmac.new(secret.encode(), token_id.encode(), hashlib.sha512).digest()


@dataclass(frozen=True)
class TokenInfo:
    token_id: str
    owner: KafkaPrincipal
    requester: KafkaPrincipal
    renewers: tuple[KafkaPrincipal, ...]
    issue_timestamp: int
    expiry_timestamp: int
    max_timestamp: int

    def to_json(self) -> bytes:
        """Kafka's document in ``/delegation_token/tokens/<id>``."""
        return json.dumps(
            {
                "version": VERSION,
                "owner": sanitize(str(self.owner)),
                "tokenRequester": sanitize(str(self.requester)),
                "renewers": [sanitize(str(r)) for r in self.renewers],
                "issueTimestamp": self.issue_timestamp,
                "maxTimestamp": self.max_timestamp,
                "expiryTimestamp": self.expiry_timestamp,
                "tokenId": self.token_id,
            },
            separators=(",", ":"),
        ).encode()

    @classmethod
    def from_json(cls, data: bytes) -> TokenInfo:
        """A token's document read back (versions 1-3: a requester defaults to the
        owner); ValueError when malformed."""
        try:
            document = json.loads(data)
            owner = KafkaPrincipal.parse(desanitize(document["owner"]))
            return cls(
                document["tokenId"],
                owner,
                KafkaPrincipal.parse(desanitize(document["tokenRequester"]))
                if "tokenRequester" in document
                else owner,
                tuple(KafkaPrincipal.parse(desanitize(r)) for r in document["renewers"]),
                int(document["issueTimestamp"]),
                int(document["expiryTimestamp"]),
                int(document["maxTimestamp"]),
            )
        except (KeyError, TypeError, ValueError) as error:
            raise ValueError(f"malformed delegation token ({error})") from None

    def may_renew(self, principal: KafkaPrincipal) -> bool:
        """Whether ``principal`` may renew, expire or describe it (owner or renewer)."""
        return principal == self.owner or principal in self.renewers


class TokenZnodes:
    """Tokens and their change notifications in ZooKeeper; blocking (worker threads)."""

    def __init__(self, zk):  # a kazoo client
        self.zk = zk

    def ensure_paths(self) -> None:
        self.zk.ensure_path(TOKENS)
        self.zk.ensure_path(TOKEN_CHANGES)

    def read(self, token_id: str) -> TokenInfo | None:
        try:
            data, _ = self.zk.get(f"{TOKENS}/{token_id}")
        except NoNodeError:
            return None
        try:
            return TokenInfo.from_json(data)
        except ValueError as error:
            logger.warning("delegation token %s ignored: %s", token_id, error)
            return None

    def read_all(self) -> list[TokenInfo]:
        found = (self.read(token_id) for token_id in self.zk.get_children(TOKENS))
        return [token for token in found if token is not None]

    def write(self, token: TokenInfo) -> None:
        path = f"{TOKENS}/{token.token_id}"
        try:
            self.zk.set(path, token.to_json())
        except NoNodeError:
            self.zk.create(path, token.to_json(), makepath=True)
        self._announce(token.token_id)

    def delete(self, token_id: str) -> None:
        with contextlib.suppress(NoNodeError):
            self.zk.delete(f"{TOKENS}/{token_id}")
        self._announce(token_id)

    def delete_all(self, token_ids: list[str]) -> None:
        """Delete tokens: the expiry of those past their expiry timestamp, which every
        broker does each ``delegation.token.expiry.check.interval.ms``."""
        for token_id in token_ids:
            self.delete(token_id)

    def _announce(self, token_id: str) -> None:
        self.zk.create(
            f"{TOKEN_CHANGES}/{CHANGE_PREFIX}", token_id.encode(), sequence=True, makepath=True
        )

    def changes(self, watch: Callable | None = None) -> list[tuple[int, str]]:
        """(number, token id) of each pending notification, oldest first."""
        found = []
        for name in self.zk.get_children(TOKEN_CHANGES, watch=watch):
            if not name.startswith(CHANGE_PREFIX):
                continue
            try:
                number = int(name[len(CHANGE_PREFIX) :])
                data, _ = self.zk.get(f"{TOKEN_CHANGES}/{name}")
            except (ValueError, NoNodeError):
                continue
            found.append((number, data.decode(errors="replace")))
        return sorted(found)


class DelegationTokenCache:
    """The tokens this broker knows, with their HMACs and the SCRAM credentials that log
    in with them (made once per token, each with a salt of its own)."""

    def __init__(self, secret: str, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)):
        self._secret = secret
        self._clock_ms = clock_ms
        self._tokens: dict[str, TokenInfo] = {}
        self._credentials: dict[str, dict[str, ScramCredential]] = {}

    def hmac(self, token_id: str) -> bytes:
        return token_hmac(self._secret, token_id)

    def set(self, token: TokenInfo) -> None:
        password = base64.b64encode(self.hmac(token.token_id)).decode()
        self._tokens[token.token_id] = token
        self._credentials[token.token_id] = {
            name: ScramCredential.from_password(mechanism, password)
            for name, mechanism in SCRAM_MECHANISMS.items()
        }

    def remove(self, token_id: str) -> None:
        self._tokens.pop(token_id, None)
        self._credentials.pop(token_id, None)

    def tokens(self) -> list[TokenInfo]:
        return list(self._tokens.values())

    def by_hmac(self, token_hmac_bytes: bytes) -> TokenInfo | None:
        for token in self._tokens.values():
            if hmac.compare_digest(self.hmac(token.token_id), token_hmac_bytes):
                return token
        return None

    def scram_login(self, token_id: str, mechanism: str) -> tuple[ScramCredential, str, int] | None:
        """(credential, owner's name, expiry) for a SCRAM login with an unexpired token."""
        token = self._tokens.get(token_id)
        if token is None or token.expiry_timestamp < self._clock_ms():
            return None
        return self._credentials[token_id][mechanism], token.owner.name, token.expiry_timestamp

    def expired(self) -> list[str]:
        """The ids of the tokens past their expiry."""
        now = self._clock_ms()
        return [t.token_id for t in self._tokens.values() if t.expiry_timestamp < now]


class TokenChangeFollower:
    """Keeps a cache equal to ZooKeeper: :meth:`load` at start, then :meth:`follow`
    reads each token a notification names. Made on the event loop."""

    def __init__(self, znodes: TokenZnodes, cache: DelegationTokenCache):
        self.znodes = znodes
        self.cache = cache
        self._last = -1
        self._changed = asyncio.Event()
        self._loop = asyncio.get_running_loop()

    async def load(self) -> None:
        await asyncio.to_thread(self.znodes.ensure_paths)
        changes = await asyncio.to_thread(self.znodes.changes)
        if changes:
            self._last = changes[-1][0]
        for token in await asyncio.to_thread(self.znodes.read_all):
            self.cache.set(token)
        self.read_again()

    def read_again(self) -> None:
        """Read the notifications (again) and arm their watch: at start, and on a new
        ZooKeeper session."""
        self._changed.set()

    def _watch(self, _event=None) -> None:
        """kazoo's thread: hand over to the event loop."""
        with contextlib.suppress(RuntimeError):  # a closed loop: the broker has stopped
            self._loop.call_soon_threadsafe(self._changed.set)

    async def follow(self) -> None:
        """Forever: apply each change announced."""
        while True:
            await self._changed.wait()
            self._changed.clear()
            try:
                for number, token_id in await asyncio.to_thread(self.znodes.changes, self._watch):
                    if number <= self._last:
                        continue
                    token = await asyncio.to_thread(self.znodes.read, token_id)
                    if token is None:
                        self.cache.remove(token_id)
                    else:
                        self.cache.set(token)
                    self._last = number
            except ConnectionLoss:  # kazoo holds the next try until it has reconnected
                self._changed.set()
            except SESSION_ERRORS:
                logger.warning("following delegation tokens: ZooKeeper session lost")
            except Exception:
                logger.exception("processing delegation token changes failed; retrying")
                await asyncio.sleep(RETRY_AFTER_FAILURE_S)
                self._changed.set()
