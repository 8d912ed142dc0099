"""A Cluster's ``spec.brokers.config`` checked against the broker's own config table
(``tidelog.server.config.BROKER_CONFIGS``), and the ``server.properties`` the brokers
get: the operator's own keys first, then the accepted keys of the spec.

A key is refused when the broker does not know it, when the operator sets it itself
(each broker's id, rack, listeners and log dirs, the ZooKeeper connect string, the
listeners' security, stores and authorizer: ``spec.listeners`` and
``spec.authorization`` say those), or when
its value does not parse as the key's type; the rest are checked together as the broker
checks its file (e.g. ``message.max.bytes`` within ``socket.request.max.bytes``), and a
whole set the broker would refuse is refused. Refused keys are left out, and the
Cluster's ConfigValid condition names them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from tidelog.server.config import BROKER_CONFIGS, BrokerConfig, ConfigError

__all__ = [
    "OPERATOR_KEYS",
    "CheckedConfig",
    "check_config",
    "server_properties",
    "set_by_operator",
]

# Keys whose values the operator derives from the Cluster and each pod.
OPERATOR_KEYS = frozenset(
    {
        "broker.id",
        "broker.rack",
        "listeners",
        "advertised.listeners",
        "listener.security.protocol.map",
        "inter.broker.listener.name",
        "log.dirs",
        "log.dir",
        "zookeeper.connect",
        # security: spec.listeners, spec.authorization and the Cluster's certificates
        "security.inter.broker.protocol",
        "ssl.client.auth",
        "ssl.key.password",
        "ssl.principal.mapping.rules",
        "sasl.enabled.mechanisms",
        "sasl.mechanism.inter.broker.protocol",
        "authorizer.class.name",
        "super.users",
        "zookeeper.set.acl",
        "zookeeper.clientCnxnSocket",
    }
)
# ... and every key of the brokers' keystores and truststores
OPERATOR_PREFIXES = ("ssl.keystore.", "ssl.truststore.", "listener.name.", "zookeeper.ssl.")


def set_by_operator(key: str) -> bool:
    return key in OPERATOR_KEYS or key.startswith(OPERATOR_PREFIXES)


@dataclass(frozen=True)
class CheckedConfig:
    """The keys accepted (as strings) and one line per key refused."""

    accepted: dict[str, str]
    refused: dict[str, str] = field(default_factory=dict)

    @property
    def valid(self) -> bool:
        return not self.refused

    def message(self) -> str:
        return "; ".join(f"{key}: {why}" for key, why in sorted(self.refused.items()))


def _text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def check_config(config: Mapping[str, object], operator_keys: Mapping[str, str]) -> CheckedConfig:
    """``config`` (the spec's) checked with ``operator_keys`` (every key the operator
    sets, as one broker has them: the checks that relate keys need them all)."""
    accepted: dict[str, str] = {}
    refused: dict[str, str] = {}
    for key, value in sorted(config.items()):
        text = _text(value)
        definition = BROKER_CONFIGS.get(key)
        if set_by_operator(key):
            refused[key] = "set by the operator"
        elif definition is None:
            refused[key] = "not a broker config"
        else:
            try:
                definition.parse(text)
            except ConfigError as error:
                refused[key] = str(error).removeprefix(f"{key}: ")
            else:
                accepted[key] = text
    try:
        BrokerConfig({**operator_keys, **accepted})
    except ConfigError as error:
        return CheckedConfig({}, {**refused, "(all)": str(error)})
    return CheckedConfig(accepted, refused)


def server_properties(
    operator_keys: Mapping[str, str],
    accepted: Mapping[str, str],
    defaults: Mapping[str, str],
) -> str:
    """The brokers' ``server.properties``: the operator's keys and its defaults that the
    user does not set, then the user's."""
    lines = ["# Written by the tidelog operator: the operator's keys, then spec.brokers.config."]
    chosen = {**{k: v for k, v in defaults.items() if k not in accepted}, **operator_keys}
    lines += [f"{key}={value}" for key, value in sorted(chosen.items())]
    lines += [f"{key}={value}" for key, value in sorted(accepted.items())]
    return "\n".join(lines) + "\n"
