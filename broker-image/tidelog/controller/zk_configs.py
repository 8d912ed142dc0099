"""Dynamic configs: ``/config/<entity type>/<name>`` and the change notifications under
``/config/changes`` that tell every broker to read one again."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Mapping

from kazoo.exceptions import NoNodeError

from tidelog.controller.zk_data import (
    CONFIG_CHANGES,
    DEFAULT_ENTITY,
    config_path,
    decode_json,
    encode_json,
)
from tidelog.controller.zk_session import ZkSession

__all__ = [
    "CONFIG_CHANGE_EXPIRATION_MS",
    "ConfigZnodes",
    "config_change_number",
    "config_document",
]

# Kafka removes config change notifications this long after they were made.
CONFIG_CHANGE_EXPIRATION_MS = 15 * 60 * 1000
CONFIG_CHANGE_PREFIX = "config_change_"


def config_change_number(name: str) -> int:
    """``config_change_0000000042`` → 42."""
    return int(name[len(CONFIG_CHANGE_PREFIX) :])


def config_document(config: Mapping[str, str]) -> bytes:
    """An entity's configs as its znode holds them (Kafka's version 1 document)."""
    return encode_json({"version": 1, "config": dict(sorted(config.items()))})


class ConfigZnodes(ZkSession):
    """Reading and writing entities' configs, and the notifications of their changes."""

    def entity_config(self, entity_type: str, name: str) -> dict[str, str]:
        try:
            data, _ = self.zk.get(config_path(entity_type, name))
        except NoNodeError:
            return {}
        document = decode_json(data)  # a parent made for a nested entity holds nothing
        return dict(document.get("config", {})) if isinstance(document, dict) else {}

    def config_entities(self, path: str) -> list[str]:
        """The entity names (as ZooKeeper holds them) under ``/config/<path>``, e.g.
        ``users`` or ``users/alice/clients``; none when it does not exist."""
        try:
            return sorted(self.zk.get_children(f"/config/{path}"))
        except NoNodeError:
            return []

    def set_entity_config(self, entity_type: str, name: str, config: Mapping[str, str]) -> None:
        """Write an entity's configs and announce the change (Kafka's notification)."""
        path = config_path(entity_type, name)
        document = config_document(config)
        try:
            self.zk.set(path, document)
        except NoNodeError:
            self.zk.create(path, document, makepath=True)
        self.zk.create(
            f"{CONFIG_CHANGES}/{CONFIG_CHANGE_PREFIX}",
            encode_json({"version": 2, "entity_path": f"{entity_type}/{name}"}),
            sequence=True,
            makepath=True,
        )

    def config_changes(self, watch: Callable | None = None) -> list[str]:
        """The pending change notifications (``config_change_<seq>``), oldest first."""
        children = self.zk.get_children(CONFIG_CHANGES, watch=watch)
        return sorted(c for c in children if c.startswith(CONFIG_CHANGE_PREFIX))

    def config_change(self, name: str) -> tuple[str, str] | None:
        """The (entity type, entity name) a notification announces, or None when it is
        gone or unreadable. Reads both of Kafka's formats: version 2 with
        ``entity_path`` (``topics/orders``) and version 1 with ``entity_type`` and
        ``entity_name``."""
        try:
            data, _ = self.zk.get(f"{CONFIG_CHANGES}/{name}")
            document = decode_json(data)
        except (NoNodeError, ValueError):
            return None
        if not isinstance(document, dict):
            return None
        if "entity_path" in document:
            entity_type, _, entity_name = str(document["entity_path"]).partition("/")
        else:
            entity_type, entity_name = document.get("entity_type"), document.get("entity_name")
        if not entity_type or not entity_name:
            return None
        return entity_type, entity_name

    def purge_config_changes(self, names: list[str], now_ms: int) -> None:
        """Delete the notifications among ``names`` (oldest first) older than Kafka's
        expiration; stops at the first one still young."""
        for name in names:
            path = f"{CONFIG_CHANGES}/{name}"
            stat = self.zk.exists(path)
            if stat is None:
                continue
            if now_ms - stat.ctime <= CONFIG_CHANGE_EXPIRATION_MS:
                return
            with contextlib.suppress(NoNodeError):
                self.zk.delete(path)

    def broker_configs(self, broker_id: int) -> tuple[dict[str, str], dict[str, str]]:
        """(cluster-wide ``<default>``, this broker's) dynamic configs."""
        return (
            self.entity_config("brokers", DEFAULT_ENTITY),
            self.entity_config("brokers", str(broker_id)),
        )
