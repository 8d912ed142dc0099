"""Kafka's ``sasl.jaas.config`` syntax: one JAAS login-module entry, as clients and
listeners write it::

    org.apache.kafka.common.security.plain.PlainLoginModule required
        username="alice" password="alice-secret" user_bob='bob"s';

An entry is the login module's class name, a control flag (``required``, ``requisite``,
``sufficient`` or ``optional``, any case), options ``key=value`` (a value bare or quoted
with ``"`` or ``'``; a backslash escapes the next character inside quotes) and a closing
``;``. Comments (``//`` to the end of the line, ``/* ... */``) are skipped, as Java's
``StreamTokenizer`` that Kafka parses with skips them. The property holds exactly one
entry; anything else is a :class:`~tidelog.server.config_key.ConfigError` that names the
problem without echoing option values (they are passwords).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tidelog.server.config_key import ConfigError

__all__ = ["CONTROL_FLAGS", "JaasEntry", "parse_jaas_config"]

CONTROL_FLAGS = frozenset({"required", "requisite", "sufficient", "optional"})

_TOKEN = re.compile(
    r"""
      (?P<space>\s+|//[^\n]*|/\*.*?\*/)
    | (?P<quoted>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<word>[A-Za-z0-9_.$\-]+)
    | (?P<symbol>[=;])
    """,
    re.VERBOSE | re.DOTALL,
)
_ESCAPE = re.compile(r"\\(.)", re.DOTALL)


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    control_flag: str  # lower case
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, value) pairs: ``word`` (bare or quoted, quotes removed) or ``symbol``."""
    tokens: list[tuple[str, str]] = []
    position = 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None:
            raise ConfigError(
                f"sasl.jaas.config: unexpected character {text[position]!r} at {position}"
            )
        position = match.end()
        kind = match.lastgroup
        if kind == "quoted":
            tokens.append(("word", _ESCAPE.sub(r"\1", match.group()[1:-1])))
        elif kind in ("word", "symbol"):
            tokens.append((kind, match.group()))
    return tokens


def parse_jaas_config(text: str) -> JaasEntry:
    """The one login-module entry of ``text``; ConfigError if it is malformed, empty or
    holds more than one entry (Kafka: "JAAS config property contains N login modules,
    should be 1 module")."""
    tokens = _tokens(text)
    entries: list[JaasEntry] = []
    index = 0

    def take(kind: str, what: str) -> str:
        nonlocal index
        if index >= len(tokens) or tokens[index][0] != kind:
            raise ConfigError(f"sasl.jaas.config: expected {what}")
        index += 1
        return tokens[index - 1][1]

    while index < len(tokens):
        login_module = take("word", "a login module class name")
        flag = take("word", "a control flag after the login module").lower()
        if flag not in CONTROL_FLAGS:
            raise ConfigError(
                f"sasl.jaas.config: invalid control flag {flag!r} "
                f"(one of {', '.join(sorted(CONTROL_FLAGS))})"
            )
        options: dict[str, str] = {}
        while index < len(tokens) and tokens[index] != ("symbol", ";"):
            key = take("word", "an option name or ';'")
            take("symbol", f"'=' after option {key!r}")
            options[key] = take("word", f"a value for option {key!r}")
        take("symbol", "';' at the end of the login module entry")
        entries.append(JaasEntry(login_module, flag, options))
    if len(entries) != 1:
        raise ConfigError(
            f"JAAS config property contains {len(entries)} login modules, should be 1 module"
        )
    return entries[0]
