"""One broker config key's definition (name, type, default, scope, validator) and the
error a configuration that cannot be used raises: the vocabulary that
:mod:`tidelog.server.config` and the key tables of each area (:mod:`tidelog.security`'s
among them) share."""

from __future__ import annotations

import enum
from dataclasses import dataclass

from tidelog.storage.config import LogConfigError
from tidelog.storage.config_values import Validator, parse_value

__all__ = ["ConfigError", "ConfigKey", "Scope", "keys_by_name"]


class ConfigError(ValueError):
    """A configuration that cannot be used; one clear line for the operator."""

    error_code = 40  # INVALID_CONFIG


class Scope(enum.Enum):
    READ_ONLY = "read-only"
    PER_BROKER = "per-broker"
    CLUSTER_WIDE = "cluster-wide"


@dataclass(frozen=True)
class ConfigKey:
    name: str
    type: str  # short, int, long, double, boolean, string, list, password
    default: object
    scope: Scope = Scope.READ_ONLY
    doc: str = ""
    validator: Validator | None = None  # Kafka's, beside its type

    @property
    def sensitive(self) -> bool:
        return self.type == "password"

    def parse(self, raw: object) -> object:
        """``raw`` read as Kafka's ConfigDef reads this key (see
        :mod:`tidelog.storage.config_values`) and checked by its validator."""
        if raw is None:
            return None
        try:
            value = parse_value(self.name, self.type, raw)
            if self.validator is not None:
                self.validator(self.name, value)
        except LogConfigError as error:
            raise ConfigError(str(error)) from None
        return value


def keys_by_name(*keys: ConfigKey) -> dict[str, ConfigKey]:
    return {key.name: key for key in keys}
