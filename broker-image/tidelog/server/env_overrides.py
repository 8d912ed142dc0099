"""Broker settings from environment variables, the way Apache Kafka's image takes them.

``TIDELOG_CONFIG_<NAME>=value`` sets the property whose key ``<NAME>`` spells in
upper case, with underscores standing for the characters an environment variable's name
cannot hold: ``_`` is ``.``, ``__`` is ``_`` and ``___`` is ``-``. So
``TIDELOG_CONFIG_BROKER_ID`` is ``broker.id``, ``TIDELOG_CONFIG_ADVERTISED_LISTENERS``
is ``advertised.listeners`` and ``TIDELOG_CONFIG_LISTENER_NAME_INTERNAL_SSL___KEYSTORE``
would be ``listener.name.internal.ssl-keystore``.

A container (or the operator, one pod at a time) sets single keys this way on top of the
file it was given; ``tidelog-server`` applies them after the file and before its
``--override`` arguments. Nothing here reads the process environment itself: callers
pass it in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from tidelog.server.config import BrokerConfig, ConfigError

__all__ = [
    "PREFIX",
    "env_overrides",
    "load_config",
    "property_key",
    "variable_name",
]

PREFIX = "TIDELOG_CONFIG_"

_UNDERSCORES = re.compile(r"_+")
_REPLACEMENTS = {1: ".", 2: "_", 3: "-"}


def property_key(name: str) -> str:
    """The property key a variable name (without :data:`PREFIX`) stands for.

    Raises :class:`ConfigError` for an empty name or a run of more than three underscores,
    which stands for nothing.
    """
    if not name:
        raise ConfigError(f"{PREFIX} names no property")

    def replace(run: re.Match[str]) -> str:
        replacement = _REPLACEMENTS.get(len(run[0]))
        if replacement is None:
            raise ConfigError(
                f"{PREFIX}{name}: a run of {len(run[0])} underscores stands for no character"
                " (_ is '.', __ is '_', ___ is '-')"
            )
        return replacement

    return _UNDERSCORES.sub(replace, name).lower()


def variable_name(key: str) -> str:
    """The variable that sets property ``key``: the inverse of :func:`property_key`, for
    whoever writes a container's environment (the operator, tests)."""
    return PREFIX + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def env_overrides(environ: Mapping[str, str]) -> dict[str, str]:
    """Property key → value for every ``TIDELOG_CONFIG_*`` variable in ``environ``, in
    the order of their keys (two variables naming the same key are an error)."""
    found: dict[str, tuple[str, str]] = {}
    for variable in sorted(environ):
        if not variable.startswith(PREFIX):
            continue
        key = property_key(variable.removeprefix(PREFIX))
        if key in found:
            raise ConfigError(f"{found[key][0]} and {variable} both set {key}")
        found[key] = (variable, environ[variable])
    return {key: value for key, (_, value) in sorted(found.items())}


def load_config(
    path: str, overrides: list[str], environ: Mapping[str, str]
) -> tuple[BrokerConfig, list[str]]:
    """The broker's config as ``tidelog-server`` stacks it (file, environment, then
    ``overrides``), and the keys the environment set."""
    from_environment = env_overrides(environ)
    items = [f"{key}={value}" for key, value in from_environment.items()]
    return BrokerConfig.load(path, [*items, *overrides]), list(from_environment)
