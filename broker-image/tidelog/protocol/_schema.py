"""Apache Kafka's message definitions (``messages/*.json``) as typed specs.

The JSON files are those of Kafka's code generator, extracted by
``tools/protocol/extract_messages.py``. Terms used here, as Kafka defines them:

* ``versions``: the message versions a field exists in; outside them it is absent from
  the bytes and takes its default.
* ``nullableVersions``: versions in which the field may be null.
* ``taggedVersions`` + ``tag``: versions in which the field travels in the tagged-fields
  section (only written when it differs from its default) instead of in line.
* ``flexibleVersions`` (per message, overridable per field): versions using compact
  strings, bytes and arrays and carrying a tagged-fields section in every struct.
* ``default``: the value of a field that is absent or not given; otherwise the type's
  default (0, false, "", empty bytes, the zero uuid, an empty array, a default struct;
  null for records).
* ``ignorable``: whether writing a non-default value in a version lacking the field is
  silently dropped (true) or an error (false).
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from importlib import resources
from typing import Any

from .primitives import ZERO_UUID, parse_kafka_uuid

__all__ = [
    "FIXED_FORMATS",
    "FieldSpec",
    "MessageSpec",
    "StructSpec",
    "Versions",
    "load_message",
    "load_messages",
    "snake_case",
]

MAX_VERSION = 0x7FFF

# Fixed-size types and their struct format characters.
FIXED_FORMATS = {
    "int8": "b",
    "int16": "h",
    "int32": "i",
    "int64": "q",
    "uint16": "H",
    "uint32": "I",
    "float64": "d",
    "bool": "?",
}
VARIABLE_TYPES = frozenset({"string", "bytes", "records", "uuid"})


@dataclass(frozen=True, slots=True)
class Versions:
    """An inclusive range of versions; ``Versions.parse("3+")``, ``("0-2")``, ``("none")``."""

    low: int
    high: int

    @classmethod
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), MAX_VERSION)
        if "-" in text:
            low, high = text.split("-")
            return cls(int(low), int(high))
        return cls(int(text), int(text))

    def __contains__(self, version: int) -> bool:
        return self.low <= version <= self.high

    def __bool__(self) -> bool:
        return self.low <= self.high

    def __iter__(self):
        return iter(range(self.low, self.high + 1))

    def __str__(self) -> str:
        if not self:
            return "none"
        if self.high == MAX_VERSION:
            return f"{self.low}+"
        return f"{self.low}-{self.high}"


NO_VERSIONS = Versions(1, 0)


def snake_case(name: str) -> str:
    """Kafka's snake case of a field name (as in its protocol guide): an underscore before
    each capital that follows a non-capital, everything lower case."""
    out = []
    previous_upper = True
    for c in name:
        if c.isupper():
            if not previous_upper:
                out.append("_")
            out.append(c.lower())
            previous_upper = True
        else:
            out.append(c)
            previous_upper = False
    return "".join(out)


@dataclass(frozen=True, slots=True)
class FieldSpec:
    name: str  # as in the JSON (e.g. "ThrottleTimeMs")
    attr: str  # snake case (e.g. "throttle_time_ms")
    type: str  # as in the JSON (e.g. "int32", "[]FetchTopic", "SnapshotId")
    versions: Versions
    nullable_versions: Versions
    tagged_versions: Versions
    tag: int | None
    ignorable: bool
    default: str | None  # the JSON's default, unparsed
    flexible_versions: Versions | None  # a per-field override of the message's
    about: str

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        """Whether the field (or, for an array, each element) is a struct."""
        element = self.element_type
        return element not in FIXED_FORMATS and element not in VARIABLE_TYPES

    def default_value(self) -> Any:
        """The parsed default of a scalar field (not an array or a struct)."""
        kind = self.type
        text = self.default
        if kind in ("int8", "int16", "int32", "int64", "uint16", "uint32"):
            return int(text, 0) if text else 0
        if kind == "bool":
            return (text or "false").lower() == "true"
        if kind == "float64":
            return float(text) if text else 0.0
        if kind == "string":
            return None if text == "null" else (text or "")
        if kind == "bytes":
            return None if text == "null" else b""
        if kind == "records":
            return None
        if kind == "uuid":
            return parse_kafka_uuid(text) if text else ZERO_UUID
        raise TypeError(f"{self.name}: no scalar default for type {kind}")


@dataclass(frozen=True, slots=True)
class StructSpec:
    name: str
    fields: tuple[FieldSpec, ...]


@dataclass(frozen=True)
class MessageSpec:
    name: str  # e.g. "FetchRequest"
    kind: str  # request, response, header
    api_key: int | None
    valid_versions: Versions
    flexible_versions: Versions
    deprecated_versions: Versions
    listeners: tuple[str, ...]
    latest_version_unstable: bool
    struct: StructSpec  # the top-level struct, named like the message
    structs: dict[str, StructSpec] = field(repr=False)  # every struct it uses, by name


def _default_text(default: Any) -> str | None:
    # Most defaults are strings ("-1", "0x7fffffff", "null"); a few are JSON literals.
    if default is None or isinstance(default, str):
        return default
    return json.dumps(default)


def _parse_fields(fields: list[dict], structs: dict[str, StructSpec]) -> tuple[FieldSpec, ...]:
    specs = []
    for raw in fields:
        versions = Versions.parse(raw["versions"])
        spec = FieldSpec(
            name=raw["name"],
            attr=snake_case(raw["name"]),
            type=raw["type"],
            versions=versions,
            nullable_versions=Versions.parse(raw.get("nullableVersions", "none")),
            tagged_versions=Versions.parse(raw.get("taggedVersions", "none")),
            tag=int(raw["tag"]) if "tag" in raw else None,  # one file has "tag": "0"
            ignorable=bool(raw.get("ignorable", False)),
            default=_default_text(raw.get("default")),
            flexible_versions=(
                Versions.parse(raw["flexibleVersions"]) if "flexibleVersions" in raw else None
            ),
            about=raw.get("about", ""),
        )
        if "fields" in raw:
            name = spec.element_type
            if name in structs:
                raise ValueError(f"struct {name} defined twice")
            structs[name] = StructSpec(name, _parse_fields(raw["fields"], structs))
        specs.append(spec)
    return tuple(specs)


def _check_resolved(message: str, structs: dict[str, StructSpec]) -> None:
    for struct in structs.values():
        for f in struct.fields:
            if f.is_struct and f.element_type not in structs:
                raise ValueError(f"{message}.{f.name}: unknown struct type {f.element_type}")


def parse_message(definition: dict) -> MessageSpec:
    structs: dict[str, StructSpec] = {}
    for common in definition.get("commonStructs", []):
        structs[common["name"]] = StructSpec(
            common["name"], _parse_fields(common["fields"], structs)
        )
    name = definition["name"]
    top = StructSpec(name, _parse_fields(definition["fields"], structs))
    structs[name] = top
    _check_resolved(name, structs)
    return MessageSpec(
        name=name,
        kind=definition["type"],
        api_key=definition.get("apiKey"),
        valid_versions=Versions.parse(definition["validVersions"]),
        flexible_versions=Versions.parse(definition["flexibleVersions"]),
        deprecated_versions=Versions.parse(definition.get("deprecatedVersions", "none")),
        listeners=tuple(definition.get("listeners", ())),
        latest_version_unstable=bool(definition.get("latestVersionUnstable", False)),
        struct=top,
        structs=structs,
    )


def _messages_folder():
    return resources.files(__package__) / "messages"


@functools.cache
def load_message(name: str) -> MessageSpec:
    """One message definition shipped with the package (e.g. ``"RequestHeader"``)."""
    entry = _messages_folder() / f"{name}.json"
    return parse_message(json.loads(entry.read_text(encoding="utf-8"))["definition"])


@functools.cache
def load_messages() -> dict[str, MessageSpec]:
    """Every message definition shipped with the package, by message name."""
    names = sorted(
        entry.name[: -len(".json")]
        for entry in _messages_folder().iterdir()
        if entry.name.endswith(".json")
    )
    return {name: load_message(name) for name in names}
