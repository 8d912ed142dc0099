"""The broker's cache of the user and client-id configs Kafka keeps in ZooKeeper:
``/config/users/<user>``, ``/config/clients/<client-id>`` and
``/config/users/<user>/clients/<client-id>``, each name possibly ``<default>``.

They hold client quotas (``producer_byte_rate``, ...) and, for users, SCRAM credentials
(``SCRAM-SHA-256``, ``SCRAM-SHA-512``) in the same document, as Kafka keeps them: whoever
writes one reads it first and keeps the keys it does not own.

Names in ZooKeeper paths and in change notifications are sanitized as Kafka's
``Sanitizer`` does (URL-encoded as Java's ``URLEncoder``, with ``%20`` for a space and
``%2A`` for ``*``); ``<default>`` is written as it is. The cache and its accessors use the
names themselves (``user("CN=a b")``), never the sanitized ones.

Loaded once at start-up (:meth:`EntityConfigs.load`, blocking: in a worker thread) after
the broker has read ``/config/changes``, then refreshed on the event loop for each
notification of entity type ``users`` or ``clients`` (:meth:`EntityConfigs.refresh`,
called by :mod:`.dynamic_config`); subscribers hear of each refreshed entity.
"""

from __future__ import annotations

import asyncio
import urllib.parse
from collections.abc import Callable

from tidelog.controller.zk_configs import ConfigZnodes
from tidelog.controller.zk_data import DEFAULT_ENTITY

__all__ = [
    "CLIENTS",
    "USERS",
    "EntityConfigs",
    "QuotaEntity",
    "desanitize",
    "entity_path",
    "parse_entity_path",
    "read_all_entities",
    "sanitize",
]

USERS = "users"
CLIENTS = "clients"

QuotaEntity = tuple[str | None, str | None]
"""(user, client id) of a config entity; None where the entity has no such part
(``/config/users/alice`` is ("alice", None)); ``<default>`` for a default."""

Subscriber = Callable[[str, str], None]


def sanitize(name: str) -> str:
    """A name as Kafka writes it in a ZooKeeper path (``<default>`` stays as it is)."""
    if name == DEFAULT_ENTITY:
        return name
    return urllib.parse.quote(name, safe="").replace("~", "%7E")


def desanitize(name: str) -> str:
    """The inverse of :func:`sanitize` (Java's ``URLDecoder``: ``+`` is a space)."""
    if name == DEFAULT_ENTITY:
        return name
    return urllib.parse.unquote_plus(name)


def entity_path(user: str | None, client: str | None) -> tuple[str, str]:
    """(entity type, name under ``/config/<type>/``) of an entity, sanitized:
    ("alice", "c1") → ("users", "alice/clients/c1"); ValueError for (None, None)."""
    if user is not None:
        name = sanitize(user)
        if client is not None:
            name += f"/{CLIENTS}/{sanitize(client)}"
        return USERS, name
    if client is not None:
        return CLIENTS, sanitize(client)
    raise ValueError("a config entity names a user, a client id or both")


def parse_entity_path(entity_type: str, name: str) -> QuotaEntity | None:
    """The inverse of :func:`entity_path`; None when it names no user or client entity."""
    if entity_type == CLIENTS and name and "/" not in name:
        return None, desanitize(name)
    if entity_type != USERS or not name:
        return None
    user, sep, rest = name.partition("/")
    if not sep:
        return desanitize(user), None
    clients, sep, client = rest.partition("/")
    if clients != CLIENTS or not client or "/" in client:
        return None
    return desanitize(user), desanitize(client)


def read_all_entities(zk: ConfigZnodes) -> dict[QuotaEntity, dict[str, str]]:
    """Every user, client and user-client entity with a config in ZooKeeper, read now
    (blocking: run in a worker thread). A user znode made only as the parent of its
    clients' (no config) is left out."""
    found: dict[QuotaEntity, dict[str, str]] = {}
    for sanitized in zk.config_entities(CLIENTS):
        found[None, desanitize(sanitized)] = zk.entity_config(CLIENTS, sanitized)
    for sanitized_user in zk.config_entities(USERS):
        user = desanitize(sanitized_user)
        found[user, None] = zk.entity_config(USERS, sanitized_user)
        for sanitized in zk.config_entities(f"{USERS}/{sanitized_user}/{CLIENTS}"):
            name = f"{sanitized_user}/{CLIENTS}/{sanitized}"
            found[user, desanitize(sanitized)] = zk.entity_config(USERS, name)
    return {entity: config for entity, config in found.items() if config}


class EntityConfigs:
    """The configs of users, clients and user-clients, as last read from ZooKeeper.
    Accessors answer an empty dict for an entity without configs; the dicts they answer
    are the cache's own and must not be changed."""

    def __init__(self, zk: ConfigZnodes):
        self._zk = zk
        self._configs: dict[QuotaEntity, dict[str, str]] = {}
        self._subscribers: list[Subscriber] = []

    def load(self) -> None:
        """Read every entity (blocking: run in a worker thread, before serving)."""
        self._configs = read_all_entities(self._zk)

    def user(self, name: str) -> dict[str, str]:
        return self._configs.get((name, None), {})

    def client(self, client_id: str) -> dict[str, str]:
        return self._configs.get((None, client_id), {})

    def user_client(self, user: str, client_id: str) -> dict[str, str]:
        return self._configs.get((user, client_id), {})

    def entities(self) -> dict[QuotaEntity, dict[str, str]]:
        """Every entity with configs, by (user, client id)."""
        return self._configs

    def subscribe(self, callback: Subscriber) -> None:
        """``callback(entity_type, name)`` after each refresh, on the event loop, with
        the entity as a notification names it: type ``users`` or ``clients`` and the
        sanitized name under it (``alice``, ``alice/clients/c1``, ``<default>``);
        :func:`parse_entity_path` turns them into (user, client id)."""
        self._subscribers.append(callback)

    async def refresh(self, entity_type: str, name: str) -> None:
        """Read one entity again (a ``/config/changes`` notification named it) and tell
        the subscribers; a path naming no user or client entity is ignored."""
        entity = parse_entity_path(entity_type, name)
        if entity is None:
            return
        config = await asyncio.to_thread(self._zk.entity_config, entity_type, name)
        if config:
            self._configs[entity] = config
        else:
            self._configs.pop(entity, None)
        for callback in self._subscribers:
            callback(entity_type, name)
