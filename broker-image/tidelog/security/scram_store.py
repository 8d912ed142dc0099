"""SCRAM credentials written where Kafka keeps them: the user's config znode,
``/config/users/<user>`` (the name sanitized as Kafka writes it), under the mechanism's
name. The same znode holds the user's quotas (``producer_byte_rate``...): a write reads
the znode first and keeps its other keys, then announces the change in
``/config/changes`` (``users/<user>``), so that every broker reads it again."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from tidelog.controller.zk_configs import ConfigZnodes
from tidelog.security.scram_credentials import ScramCredential
from tidelog.server.entity_configs import USERS, sanitize

__all__ = ["alter_user_credentials"]


def alter_user_credentials(
    znodes: ConfigZnodes,
    user: str,
    upsertions: Mapping[str, ScramCredential],
    deletions: Iterable[str] = (),
) -> None:
    """Set and delete credentials of ``user`` (mechanism names) in its config znode,
    keeping the znode's other keys, and announce the change. Blocking (ZooKeeper)."""
    name = sanitize(user)
    config = znodes.entity_config(USERS, name)
    for mechanism in deletions:
        config.pop(mechanism, None)
    for mechanism, credential in upsertions.items():
        config[mechanism] = credential.to_config_value()
    znodes.set_entity_config(USERS, name, config)
