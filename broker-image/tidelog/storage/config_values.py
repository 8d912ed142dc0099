"""Config values read as Kafka 3.9's ConfigDef reads them, for topic and broker keys alike.

A raw value is first trimmed as Java's ``String.trim`` trims (characters up to U+0020,
nothing else), then parsed by its key's type:

- ``boolean``: ``true`` or ``false`` in any case;
- ``short``, ``int``, ``long``: an optional sign and decimal digits (any Unicode decimal
  digit, as Java's ``parseInt`` takes; no ``_``, no spaces inside), within the type;
- ``double``: Java's ``Double.parseDouble`` grammar: ``NaN``, ``Infinity``, decimal
  (``1.``, ``.5``, ``1e3``) or hexadecimal (``0x1p-1``) with an optional ``f``/``d``
  suffix; ASCII digits only, no ``inf`` or ``nan``;
- ``list``: empty, or the parts between commas with the blanks around each comma removed
  (an empty part stays, for the validator to refuse);
- ``string``, ``password``: the trimmed text.

Then a validator may refuse it: :func:`at_least` (Kafka's ``Range``: a NaN passes, as
every comparison with it is false), :func:`one_of` (``ValidString``, case-sensitive),
:func:`each_one_of` (``ValidList``: an empty list passes, an empty member does not).
Every refusal is a :class:`LogConfigError` whose message names the key and the value:
``Invalid value <v> for configuration <key>: ...``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

__all__ = [
    "LIMITS",
    "LogConfigError",
    "Validator",
    "at_least",
    "check_range",
    "each_one_of",
    "invalid",
    "one_of",
    "parse_value",
]

LIMITS = {
    "short": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}

_JAVA_BLANKS = "".join(chr(c) for c in range(0x21))
_INTEGER = re.compile(r"[+-]?\d+")
_DECIMAL = r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_HEX = r"0[xX](?:[0-9a-fA-F]+\.?|[0-9a-fA-F]*\.[0-9a-fA-F]+)[pP][+-]?[0-9]+"
_DOUBLE = re.compile(rf"([+-]?)(?:(NaN|Infinity)|({_DECIMAL})[fFdD]?|({_HEX})[fFdD]?)")
_LIST_SEPARATOR = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")


class LogConfigError(ValueError):
    """A topic or broker setting that cannot be used (Kafka: INVALID_CONFIG)."""

    error_code = 40


def invalid(key: str, value: object, reason: str) -> LogConfigError:
    """Kafka's ConfigException wording, the value written as Java writes it."""
    return LogConfigError(f"Invalid value {_java_text(value)} for configuration {key}: {reason}")


def _java_text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    return str(value)


def parse_value(key: str, kind: str, raw: object) -> object:
    """``raw`` (text, or an already typed value) as a ``kind`` value; see the module."""
    if not isinstance(raw, str):
        return raw
    text = raw.strip(_JAVA_BLANKS)
    if kind == "boolean":
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise invalid(key, text, "Expected value to be either true or false")
    if kind in LIMITS:
        low, high = LIMITS[kind]
        if _INTEGER.fullmatch(text) and low <= int(text) <= high:
            return int(text)
        raise invalid(key, text, f"Not a number of type {kind.upper()}")
    if kind == "double":
        return _parse_double(key, text)
    if kind == "list":
        return [] if not text else _LIST_SEPARATOR.split(text)
    return text


def _parse_double(key: str, text: str) -> float:
    match = _DOUBLE.fullmatch(text)
    if match is None:
        raise invalid(key, text, "Not a number of type DOUBLE")
    sign = -1.0 if match[1] == "-" else 1.0
    if match[2]:
        return math.nan if match[2] == "NaN" else sign * math.inf
    return sign * (float(match[3]) if match[3] else float.fromhex(match[4]))


def check_range(key: str, value: float, low: float | None, high: float | None = None) -> None:
    """Kafka's ``Range.between`` / ``Range.atLeast``."""
    if low is not None and value < low:
        raise invalid(key, value, f"Value must be at least {low}")
    if high is not None and value > high:
        raise invalid(key, value, f"Value must be no more than {high}")


Validator = Callable[[str, object], None]


def at_least(low: float, high: float | None = None) -> Validator:
    """Kafka's ``Range.atLeast(low)``, or ``Range.between(low, high)``."""
    return lambda key, value: check_range(key, value, low, high)


def one_of(*names: str) -> Validator:
    """Kafka's ``ValidString.in``."""

    def check(key: str, value) -> None:
        if value not in names:
            raise invalid(key, value, f"String must be one of: {', '.join(names)}")

    return check


def each_one_of(*names: str) -> Validator:
    """Kafka's ``ValidList.in``."""

    def check(key: str, value) -> None:
        for item in value:
            if item not in names:
                raise invalid(key, ",".join(value), f"String must be one of: {', '.join(names)}")

    return check
