"""Sample messages for every API and version, and their JSON form for Kafka's converters.

Two variants of each message version:

* ``full``: every field present in the version holds a value different from its default
  (nested arrays of two structs, three scalars; strings with non-ASCII characters; uint16
  above 32767), so that every field is written, tagged ones included.
* ``empty``: nullable fields are null, arrays empty, every other field at its default, so
  that tagged fields are left out and nulls are encoded.

:func:`to_kafka_json` gives the form read by Kafka's generated ``*DataJsonConverter``
classes: field names in camel case, bytes and records in base64, uuids in Kafka's text form.
"""

from __future__ import annotations

import base64
import itertools
import uuid
from collections.abc import Iterator
from typing import Any

from tidelog.protocol import ApiSpec, RequestHeader, ResponseHeader, api_specs
from tidelog.protocol._schema import FieldSpec, MessageSpec, StructSpec, load_message
from tidelog.protocol._structs import Struct, message_classes
from tidelog.protocol.api import request_header_version, response_header_version
from tidelog.protocol.primitives import kafka_uuid_str

VARIANTS = ("full", "empty")
KINDS = ("request", "response")


def all_message_versions() -> Iterator[tuple[ApiSpec, int, str]]:
    """``(api, version, kind)`` for every API, version and direction."""
    for api in api_specs().values():
        for version in range(api.min_version, api.max_version + 1):
            for kind in KINDS:
                yield api, version, kind


def sample_id(api: ApiSpec, version: int, kind: str, variant: str) -> str:
    return f"{api.name}{kind.capitalize()}-v{version}-{variant}"


class _Counter:
    def __init__(self, seed: int) -> None:
        self._next = itertools.count(seed)

    def __call__(self) -> int:
        return next(self._next)


def _full_scalar(f: FieldSpec, kind: str, n: int) -> Any:
    default = f.default_value() if f.type == kind else None
    if kind == "int8":
        value = 1 + n % 100
    elif kind == "int16":
        value = 1000 + n
    elif kind == "int32":
        value = 100_000 + n
    elif kind == "int64":
        value = 10**12 + n
    elif kind == "uint16":
        value = 40_000 + n % 20_000
    elif kind == "uint32":
        value = 3_000_000_000 + n
    elif kind == "float64":
        return n + 0.5
    elif kind == "bool":
        return not default
    elif kind == "string":
        return f"s{n}-é"
    elif kind == "bytes":
        return bytes((n % 256, 0, 255))
    elif kind == "records":
        return bytes(range(n % 7, n % 7 + 12))
    elif kind == "uuid":
        return uuid.UUID(int=(n * 0x9E3779B97F4A7C15_F39CC0605CEDC835) % (1 << 128) or 1)
    else:
        raise TypeError(kind)
    return value + 1 if value == default else value


def _empty_scalar(f: FieldSpec, nullable: bool) -> Any:
    if nullable:
        return None
    default = f.default_value()
    if default is None:  # a "null" default in a version where the field is not nullable
        return b"" if f.type in ("bytes", "records") else ""
    return default


def _sample_struct(
    spec: MessageSpec, struct: StructSpec, version: int, full: bool, counter: _Counter
) -> Struct:
    classes = message_classes(spec)
    values: dict[str, Any] = {}
    for f in struct.fields:
        if version not in f.versions:
            continue
        nullable = version in f.nullable_versions
        if f.is_array:
            if not full:
                values[f.attr] = None if nullable else []
            elif f.is_struct:
                element = spec.structs[f.element_type]
                values[f.attr] = [
                    _sample_struct(spec, element, version, full, counter) for _ in range(2)
                ]
            else:
                values[f.attr] = [_full_scalar(f, f.element_type, counter()) for _ in range(3)]
        elif f.is_struct:
            element = spec.structs[f.element_type]
            if full:
                values[f.attr] = _sample_struct(spec, element, version, full, counter)
            elif nullable:
                values[f.attr] = None
            else:
                values[f.attr] = classes[element.name]()
        elif full:
            values[f.attr] = _full_scalar(f, f.type, counter())
        else:
            values[f.attr] = _empty_scalar(f, nullable)
    return classes[struct.name](**values)


def sample_body(spec: MessageSpec, version: int, variant: str, seed: int = 1) -> Struct:
    return _sample_struct(spec, spec.struct, version, variant == "full", _Counter(seed))


def sample_header(api_key: int, version: int, kind: str, correlation_id: int) -> Struct:
    if kind == "request":
        return RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=correlation_id,
            client_id="client-é" if request_header_version(api_key, version) > 0 else "",
        )
    return ResponseHeader(correlation_id=correlation_id)


def header_spec(kind: str) -> MessageSpec:
    return load_message("RequestHeader" if kind == "request" else "ResponseHeader")


def header_version(api_key: int, version: int, kind: str) -> int:
    if kind == "request":
        return request_header_version(api_key, version)
    return response_header_version(api_key, version)


# --------------------------------------------------------------------------------------
# Kafka's JSON form


def camel_case(name: str) -> str:
    return name[:1].lower() + name[1:]


def _json_scalar(value: Any) -> Any:
    if isinstance(value, uuid.UUID):
        return kafka_uuid_str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return base64.b64encode(bytes(value)).decode("ascii")
    return value


def to_kafka_json(obj: Struct, spec: MessageSpec, version: int) -> dict[str, Any]:
    """The fields of ``obj`` present in ``version``, as Kafka's JSON converters write them."""
    return _struct_json(obj, spec, spec.structs[type(obj).__name__], version)


def _struct_json(obj: Struct, spec: MessageSpec, struct: StructSpec, version: int) -> dict:
    out = {}
    for f in struct.fields:
        if version not in f.versions:
            continue
        value = getattr(obj, f.attr)
        if value is None:
            out[camel_case(f.name)] = None
        elif f.is_struct:
            element = spec.structs[f.element_type]
            if f.is_array:
                out[camel_case(f.name)] = [_struct_json(v, spec, element, version) for v in value]
            else:
                out[camel_case(f.name)] = _struct_json(value, spec, element, version)
        elif f.is_array:
            out[camel_case(f.name)] = [_json_scalar(v) for v in value]
        else:
            out[camel_case(f.name)] = _json_scalar(value)
    return out


def tagged_or_records(spec: MessageSpec, version: int) -> set[str]:
    """Camel-case names of fields that Kafka's JSON writer may leave out or blank: tagged
    fields at their default, and records."""
    names = set()
    for struct in spec.structs.values():
        for f in struct.fields:
            if version in f.tagged_versions or f.type == "records":
                names.add(camel_case(f.name))
    return names
