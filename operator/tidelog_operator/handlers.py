"""Every handler of the operator: importing this module is what
``kopf run -m tidelog_operator.handlers`` (``python -m tidelog_operator``) does."""

from __future__ import annotations

from tidelog_operator import settings
from tidelog_operator.cluster import handlers as cluster_handlers
from tidelog_operator.consumer_group import handlers as consumer_group_handlers
from tidelog_operator.topic import handlers as topic_handlers
from tidelog_operator.user import handlers as user_handlers

__all__ = [
    "cluster_handlers",
    "consumer_group_handlers",
    "settings",
    "topic_handlers",
    "user_handlers",
]
