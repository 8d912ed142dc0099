"""The base of every command of a Cluster pass and what their handlers act through
(``commands`` holds the dispatcher; the handlers of each aspect live beside its
commands)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from tidelog.admin import AdminClient

__all__ = ["Command", "Context"]


class Command:
    """A base for the commands of a pass (frozen dataclasses)."""


@dataclass(frozen=True)
class Context:
    """What the handlers act through: the API client, the Cluster's namespace and
    name, the brokers' admin client (made on first use), and for the handlers that make
    objects from the spec, the spec and the Cluster's owner reference."""

    api: client.ApiClient
    namespace: str
    cluster: str
    admin: Callable[[], AdminClient]
    spec: Any = None  # ClusterSpec
    owner: Mapping[str, Any] = field(default_factory=dict)
