"""The base of every command of a Cluster pass, what their handlers act through, and
the events a pass posts (``commands`` holds the dispatcher; the handlers of each aspect
live beside its commands)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client

from tidelog.admin import AdminClient

__all__ = ["Command", "Context", "Event"]


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


@dataclass(frozen=True)
class Event:
    """An event of the Cluster or of one of its Users: Warning or Normal, its reason and
    message."""

    warning: bool
    reason: str
    message: str
