"""Extract Apache Kafka's protocol message definitions for ``tidelog.protocol``.

The ``kafka-clients`` jar carries the JSON definitions its code generator reads, under
``common/message/*.json``, written with ``//`` comments. This tool strips the comments and
writes, one file per message, the request and response messages that have an ``apiKey``,
the two headers, and any common struct files they reference, into
``broker-image/tidelog/protocol/messages/``. Each file wraps the untouched definition::

    {"source": "...", "license": "Apache License 2.0", "definition": {...}}

The jar's ``LICENSE`` and ``NOTICE`` files are copied alongside, as the Apache License asks
of a redistribution. The output is deterministic (sorted input, fixed formatting, no
timestamps) and committed,
so that the broker never needs Java. Files left over from an earlier extraction are
removed. Only the standard library is used.

Usage::

    python tools/protocol/extract_messages.py [--jar JAR | --libs DIR] [--kafka-version V]
                                              [--out DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_OUT = REPO_ROOT / "broker-image" / "tidelog" / "protocol" / "messages"
DEFAULT_VERSION = "3.9.1"
JAR_PREFIX = "common/message/"
LEGAL_FILES = ("LICENSE", "NOTICE")
LICENSE = "Apache License 2.0"
PRIMITIVE_TYPES = frozenset(
    {
        "bool",
        "int8",
        "int16",
        "uint16",
        "int32",
        "uint32",
        "int64",
        "float64",
        "string",
        "uuid",
        "bytes",
        "records",
    }
)


def strip_comments(text: str) -> str:
    """Remove ``//`` line comments, leaving ``//`` inside JSON strings alone."""
    out: list[str] = []
    i, n = 0, len(text)
    in_string = False
    while i < n:
        c = text[i]
        if in_string:
            if c == "\\":
                out.append(text[i : i + 2])
                i += 2
                continue
            if c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                raise ValueError("unterminated /* comment")
            i = end + 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def read_definitions(jar: Path) -> dict[str, dict]:
    """Every ``common/message/*.json`` of the jar, parsed, by file stem."""
    definitions: dict[str, dict] = {}
    with zipfile.ZipFile(jar) as archive:
        for name in sorted(archive.namelist()):
            if not (name.startswith(JAR_PREFIX) and name.endswith(".json")):
                continue
            stem = name[len(JAR_PREFIX) : -len(".json")]
            if "/" in stem:
                continue
            text = archive.read(name).decode("utf-8")
            definitions[stem] = json.loads(strip_comments(text))
    if not definitions:
        raise SystemExit(f"{jar}: no {JAR_PREFIX}*.json entries")
    return definitions


def _element_type(type_name: str) -> str:
    return type_name[2:] if type_name.startswith("[]") else type_name


def _struct_names(fields: list[dict], into: set[str]) -> None:
    for field in fields:
        if "fields" in field:
            into.add(_element_type(field["type"]))
            _struct_names(field["fields"], into)


def _defined_structs(definition: dict) -> set[str]:
    names: set[str] = set()
    _struct_names(definition.get("fields", []), names)
    for struct in definition.get("commonStructs", []):
        names.add(struct["name"])
        _struct_names(struct["fields"], names)
    return names


def _used_types(fields: list[dict], into: set[str]) -> None:
    for field in fields:
        into.add(_element_type(field["type"]))
        _used_types(field.get("fields", []), into)


def _referenced_structs(definition: dict) -> set[str]:
    used: set[str] = set()
    _used_types(definition.get("fields", []), used)
    for struct in definition.get("commonStructs", []):
        _used_types(struct["fields"], used)
    return used - PRIMITIVE_TYPES - _defined_structs(definition)


def select(definitions: dict[str, dict]) -> list[str]:
    """Requests and responses with an apiKey, the headers, and struct files they use."""
    chosen = [
        stem
        for stem, d in definitions.items()
        if d.get("type") == "header" or (d.get("type") in ("request", "response") and "apiKey" in d)
    ]
    providers: dict[str, str] = {}
    for stem, d in definitions.items():
        if d.get("type") == "data":
            for name in _defined_structs(d) | {d["name"]}:
                providers.setdefault(name, stem)
    pending = list(chosen)
    while pending:
        stem = pending.pop()
        for struct in sorted(_referenced_structs(definitions[stem])):
            provider = providers.get(struct)
            if provider is None:
                raise SystemExit(f"{stem}: struct type {struct!r} is defined nowhere")
            if provider not in chosen:
                chosen.append(provider)
                pending.append(provider)
    return sorted(chosen)


def render(stem: str, definition: dict, kafka_version: str) -> str:
    wrapped = {
        "source": (
            f"Apache Kafka {kafka_version}, kafka-clients-{kafka_version}.jar "
            f"{JAR_PREFIX}{stem}.json (comments removed)"
        ),
        "license": LICENSE,
        "definition": definition,
    }
    return json.dumps(wrapped, indent=2, ensure_ascii=False) + "\n"


def _write_if_changed(target: Path, data: bytes) -> None:
    if not target.is_file() or target.read_bytes() != data:
        target.write_bytes(data)


def extract(jar: Path, out: Path, kafka_version: str) -> list[str]:
    definitions = read_definitions(jar)
    stems = select(definitions)
    out.mkdir(parents=True, exist_ok=True)
    wanted = {f"{stem}.json" for stem in stems}
    for stale in sorted(out.glob("*.json")):
        if stale.name not in wanted:
            stale.unlink()
    for stem in stems:
        text = render(stem, definitions[stem], kafka_version)
        _write_if_changed(out / f"{stem}.json", text.encode("utf-8"))
    with zipfile.ZipFile(jar) as archive:
        for name in LEGAL_FILES:
            _write_if_changed(out / name, archive.read(name))
    return stems


def default_libs(kafka_version: str) -> Path:
    return Path.home() / ".cache" / "tidelog" / f"kafka-{kafka_version}" / "libs"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--jar", type=Path, help="the kafka-clients jar")
    source.add_argument("--libs", type=Path, help="directory holding kafka-clients-<v>.jar")
    parser.add_argument("--kafka-version", default=DEFAULT_VERSION)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    jar = args.jar
    if jar is None:
        libs = args.libs or default_libs(args.kafka_version)
        jar = libs / f"kafka-clients-{args.kafka_version}.jar"
    if not jar.is_file():
        print(f"{jar}: not found (run `make kafka-libs`)", file=sys.stderr)
        return 1
    stems = extract(jar, args.out, args.kafka_version)
    print(f"{len(stems)} message definitions from {jar.name} written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
