"""Broker config keys of the authorizer area, with Kafka 3.9's names, types and defaults.

``authorizer.class.name`` takes Kafka's ZooKeeper-mode ACL authorizer
(``kafka.security.authorizer.AclAuthorizer``) or tidelog's name for the same
(``tidelog.security.authorizer.AclAuthorizer``); empty, the default, means no
authorizer: every request is allowed and the ACL APIs answer SECURITY_DISABLED. Any
other class is refused when the configuration is read, with one line that names the
accepted ones. ``super.users`` and ``allow.everyone.if.no.acl.found`` are the keys
Kafka's AclAuthorizer reads from the broker's properties.
"""

from __future__ import annotations

from tidelog.server.config_key import ConfigKey
from tidelog.storage.config_values import invalid

__all__ = ["ACL_AUTHORIZER_CLASSES", "AUTHORIZER_KEYS"]

ACL_AUTHORIZER_CLASSES = (
    "kafka.security.authorizer.AclAuthorizer",
    "tidelog.security.authorizer.AclAuthorizer",
)


def _known_authorizer(key: str, value: object) -> None:
    if value and value not in ACL_AUTHORIZER_CLASSES:
        raise invalid(
            key,
            value,
            f"tidelog's broker runs only Kafka's ACL authorizer: set {key} to "
            f"{ACL_AUTHORIZER_CLASSES[0]} (or {ACL_AUTHORIZER_CLASSES[1]}), or leave it empty",
        )


def _principals(key: str, value: object) -> None:
    for item in str(value or "").split(";"):
        principal_type, sep, _ = item.strip().partition(":")
        if item.strip() and (not sep or not principal_type):
            raise invalid(key, value, f"{item.strip()!r} is not <type>:<name> (e.g. User:admin)")


AUTHORIZER_KEYS: tuple[ConfigKey, ...] = (
    ConfigKey("authorizer.class.name", "string", "", validator=_known_authorizer),
    ConfigKey("super.users", "string", "", validator=_principals),
    ConfigKey("allow.everyone.if.no.acl.found", "boolean", False),
)
