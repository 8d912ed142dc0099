"""Compiles a message definition, for one version, into a reader and a writer.

Each struct of the message becomes a reader ``(buf, pos) -> (obj, pos)`` and a writer
``(out, obj)``, each one function generated for the struct's fields: no loop over
per-field steps, no ``setattr`` or ``getattr`` by name, since a request or response of
many partitions passes through them at every request. The writer names no field in its
errors; on an error the same struct is written again by per-field steps, whose error says
which field holds what. Consecutive fixed-size fields (ints, floats, booleans) are read
and written as one run with a single ``struct.Struct``. Fields the version lacks are not
read and take their defaults; writing a non-default value into one of them is an error
unless the field is ``ignorable`` (Kafka's rule). Tagged fields are read from, and
written to, each struct's tagged-fields section (:mod:`._tagged_fields`), only when not
default; unknown tags are kept raw and written back in tag order.

A struct may also be written ahead (:func:`encode_ahead`): the :class:`Encoded` bytes
then stand for it wherever the same version's writer meets them, for a large part of a
response that changes seldom (a topic's partitions in Metadata).
"""

from __future__ import annotations

import struct as _struct
from collections.abc import Callable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from . import primitives as p
from ._schema import FIXED_FORMATS, FieldSpec, MessageSpec, StructSpec
from ._structs import Struct, field_default, message_classes
from ._tagged_fields import NO_TAGS, tags_reader, tags_writer
from .errors import LocalProtocolError

__all__ = ["Codec", "Encoded", "compile_message", "encode_ahead"]


_new = object.__new__
_first = itemgetter(0)

# (type, compact, nullable) -> (reader, writer) for strings, bytes, records and uuids.
_SCALARS: dict[tuple[str, bool, bool], tuple[p.Reader, p.Writer]] = {
    ("string", False, False): (p.read_string, p.write_string),
    ("string", False, True): (p.read_nullable_string, p.write_nullable_string),
    ("string", True, False): (p.read_compact_string, p.write_compact_string),
    ("string", True, True): (p.read_compact_nullable_string, p.write_compact_nullable_string),
    ("bytes", False, False): (p.read_bytes, p.write_bytes),
    ("bytes", False, True): (p.read_nullable_bytes, p.write_nullable_bytes),
    ("bytes", True, False): (p.read_compact_bytes, p.write_compact_bytes),
    ("bytes", True, True): (p.read_compact_nullable_bytes, p.write_compact_nullable_bytes),
    ("records", False, False): (p.read_records, p.write_bytes),
    ("records", False, True): (p.read_nullable_records, p.write_nullable_bytes),
    ("records", True, False): (p.read_compact_records, p.write_compact_bytes),
    ("records", True, True): (p.read_compact_nullable_records, p.write_compact_nullable_bytes),
    ("uuid", False, False): (p.read_uuid, p.write_uuid),
    ("uuid", True, False): (p.read_uuid, p.write_uuid),
}

_COUNT_READERS = {
    (False, False): p.read_array_count,
    (False, True): p.read_nullable_array_count,
    (True, False): p.read_compact_array_count,
    (True, True): p.read_compact_nullable_array_count,
}


@dataclass(frozen=True, slots=True)
class Codec:
    """The compiled reader and writer of one message version (the body, or a header)."""

    name: str
    version: int
    cls: type[Struct]
    read: Callable[[Any, int], tuple[Any, int]]
    write: Callable[[list, Any], None]
    # Every struct of the message, nested ones too, by name: (reader, writer).
    structs: dict[str, tuple[Any, Any]]


class Encoded:
    """A struct written ahead by one version's writer (:func:`encode_ahead`); that writer
    writes these bytes in its place. The struct must not change afterwards: the bytes
    would not follow."""

    __slots__ = ("data", "writer")

    def __init__(self, data: bytes, writer: Callable[[list, Any], None]):
        self.data = data
        self.writer = writer


def encode_ahead(codec: Codec, obj: Struct) -> Encoded:
    """``obj`` (a struct of ``codec``'s message, with no records field) as ``codec``
    writes it, to put in a message in its place."""
    write = codec.structs[type(obj)._spec.name][1]
    parts: list = []
    write(parts, obj)
    return Encoded(b"".join(parts), write)


class _Context:
    def __init__(self, spec: MessageSpec, version: int, strict: bool = True) -> None:
        self.spec = spec
        self.version = version
        self.strict = strict
        self.flexible = version in spec.flexible_versions
        self.classes = message_classes(spec)
        self.structs: dict[str, tuple[Any, Any]] = {}


def compile_message(spec: MessageSpec, version: int, strict: bool = True) -> Codec:
    """``strict=False`` writes leave out fields the version lacks even when they hold a
    value (a server filling responses for its newest version answers older clients)."""
    context = _Context(spec, version, strict)
    read, write = _struct_codec(context, spec.struct, spec.name)
    return Codec(spec.name, version, context.classes[spec.name], read, write, context.structs)


# --------------------------------------------------------------------------------------
# Structs


def _struct_codec(ctx: _Context, spec: StructSpec, path: str) -> tuple[Any, Any]:
    cached = ctx.structs.get(spec.name)
    if cached is not None:
        return cached
    cls = ctx.classes[spec.name]
    version, flexible = ctx.version, ctx.flexible
    constants: list[tuple[str, Any]] = []  # set before reading: absent and tagged fields
    factories: list[tuple[str, Any]] = []
    steps: list[_Run | _Field] = []
    strict_absent: list[tuple[str, Callable[[Any], bool], str]] = []
    tagged: list[tuple[int, str, p.Reader, p.Writer, Callable[[Any], bool]]] = []
    run: list[FieldSpec] = []

    def flush_run() -> None:
        if run:
            steps.append(_Run.of(run))
            run.clear()

    def add_default(f: FieldSpec) -> None:
        default, is_factory = field_default(f, ctx.classes)
        (factories if is_factory else constants).append((f.attr, default))

    for f in spec.fields:
        field_path = f"{path}.{f.attr}"
        if version not in f.versions:
            add_default(f)
            if not f.ignorable:
                strict_absent.append((f.attr, _is_default(f, ctx), field_path))
        elif flexible and version in f.tagged_versions:
            add_default(f)
            read_value, write_value = _field_codec(ctx, f, field_path)
            tagged.append((f.tag, f.attr, read_value, write_value, _is_default(f, ctx)))
        elif f.type in FIXED_FORMATS:
            run.append(f)
        else:
            flush_run()
            read_value, write_value = _field_codec(ctx, f, field_path)
            steps.append(_Field(f.attr, read_value, write_value, field_path))
    flush_run()
    tagged.sort(key=_first)

    read_tags = tags_reader(tagged) if flexible else None
    read = _generated_reader(cls, constants, factories, steps, read_tags)

    steps_t = tuple(steps)
    strict_absent_t = tuple(strict_absent) if ctx.strict else ()
    write_tags = tags_writer(tagged) if flexible else None

    def check_absent(obj: Any) -> None:
        for name, is_default, field_path in strict_absent_t:
            if not is_default(getattr(obj, name)):
                raise LocalProtocolError(
                    f"{field_path} does not exist in version {version}: "
                    "it must hold its default to be written"
                )

    def write_checked(obj: Any) -> None:
        _write_naming_the_field(steps_t, obj)

    write = _generated_writer(
        cls,
        path,
        steps,
        check_absent if strict_absent_t else None,
        write_tags,
        bool(tagged),
        write_checked,
    )

    ctx.structs[spec.name] = (read, write)
    return read, write


def _generated_writer(
    cls: type,
    path: str,
    steps: list[_Run | _Field],
    check_absent: Callable[[Any], None] | None,
    write_tags: Callable[[list, Any], None] | None,
    has_known_tags: bool,
    write_checked: Callable[[Any], None],
) -> Callable[[list, Any], None]:
    """The writer of one struct as straight-line code: each run of fixed-size fields
    packed at once, each other field by its own writer, then the absent-field check and
    the tagged fields. It names no field in its errors: on any error it runs
    ``write_checked``, whose error says which field holds what, and re-raises its own
    if that one finds nothing."""
    scope: dict[str, Any] = {
        "_cls": cls,
        "_Encoded": Encoded,
        "_LocalProtocolError": LocalProtocolError,
        "_check_absent": check_absent,
        "_write_tags": write_tags,
        "_write_checked": write_checked,
        "_NO_TAGS": NO_TAGS,
    }
    ahead_error = f"{path}: written ahead for another version"
    body = []
    for index, step in enumerate(steps):
        if isinstance(step, _Run):
            scope[f"_pack{index}"] = step.packer.pack
            values = ", ".join(f"obj.{name}" for name in step.names)
            body.append(f"out.append(_pack{index}({values}))")
        else:
            scope[f"_write{index}"] = step.write
            body.append(f"_write{index}(out, obj.{step.name})")
    lines = [
        "def write(out, obj):",
        "    if type(obj) is not _cls:",
        "        if type(obj) is _Encoded:",
        "            if obj.writer is not write:",
        f"                raise _LocalProtocolError({ahead_error!r})",
        "            out.append(obj.data)",
        "            return",
        "        if type(obj) is dict:",
        "            obj = _cls.from_dict(obj)",
    ]
    if body:
        lines += ["    try:", *(f"        {line}" for line in body)]
        lines += ["    except Exception:", "        _write_checked(obj)", "        raise"]
    if check_absent is not None:
        lines.append("    _check_absent(obj)")
    if write_tags is not None and has_known_tags:
        lines.append("    _write_tags(out, obj)")
    elif write_tags is not None:  # only unknown tags, kept from a read, can be present
        lines += [
            "    if obj._unknown_tagged_fields:",
            "        _write_tags(out, obj)",
            "    else:",
            "        out.append(_NO_TAGS)",
        ]
    return _defined("write", lines, scope)


@dataclass(frozen=True)
class _Run:
    """Consecutive fixed-size fields, read and written together by one ``struct.Struct``."""

    names: tuple[str, ...]
    packer: _struct.Struct

    @classmethod
    def of(cls, fields: list[FieldSpec]) -> _Run:
        fmt = "".join(FIXED_FORMATS[f.type] for f in fields)
        return cls(tuple(f.attr for f in fields), _struct.Struct(">" + fmt))


@dataclass(frozen=True)
class _Field:
    """One field with a reader ``(buf, pos) -> (value, pos)`` and a writer of its own;
    ``path`` names it in errors (``Message.struct.field``)."""

    name: str
    read: p.Reader
    write: p.Writer
    path: str


def _generated_reader(
    cls: type,
    constants: list[tuple[str, Any]],
    factories: list[tuple[str, Any]],
    steps: list[_Run | _Field],
    read_tags: Callable[[Any, int, Any], int] | None,
) -> Callable[[Any, int], tuple[Any, int]]:
    """The reader of one struct as straight-line code: defaults set, then each step in
    order, then the tagged fields (flexible versions; an empty section, the usual case,
    is one byte checked inline). Truncated input fails in the step that meets it, with
    the error that step raises (``struct.error`` or ``DecodeError``)."""
    scope: dict[str, Any] = {"_new": _new, "_cls": cls, "_read_tags": read_tags}
    lines = ["def read(buf, pos):", "    obj = _new(_cls)"]
    for index, (name, value) in enumerate(constants):
        scope[f"_constant{index}"] = value
        lines.append(f"    obj.{name} = _constant{index}")
    for index, (name, factory) in enumerate(factories):
        scope[f"_factory{index}"] = factory
        lines.append(f"    obj.{name} = _factory{index}()")
    for index, step in enumerate(steps):
        if isinstance(step, _Run):
            scope[f"_unpack{index}"] = step.packer.unpack_from
            targets = "".join(f"obj.{name}, " for name in step.names)
            lines.append(f"    {targets}= _unpack{index}(buf, pos)")
            lines.append(f"    pos += {step.packer.size}")
        else:
            scope[f"_read{index}"] = step.read
            lines.append(f"    obj.{step.name}, pos = _read{index}(buf, pos)")
    if read_tags is None:
        lines += ["    obj._unknown_tagged_fields = ()", "    return obj, pos"]
    else:
        lines += [
            "    if pos < len(buf) and buf[pos] == 0:",
            "        obj._unknown_tagged_fields = ()",
            "        return obj, pos + 1",
            "    return obj, _read_tags(buf, pos, obj)",
        ]
    return _defined("read", lines, scope)


def _defined(name: str, lines: list[str], scope: dict[str, Any]) -> Callable:
    """The function ``name`` that the source ``lines`` define, run in ``scope``. The
    source is made here from the schema's field names and the scope's own values."""
    exec("\n".join(lines), scope)
    return scope[name]


def _write_naming_the_field(steps: tuple[_Run | _Field, ...], obj: Any) -> None:
    """Write ``obj`` step by step, each step's error naming its field and value: run on
    a struct the generated writer failed on, to say what is wrong with it."""
    out: list = []
    for step in steps:
        if isinstance(step, _Run):
            values = [getattr(obj, name) for name in step.names]
            try:
                out.append(step.packer.pack(*values))
            except (_struct.error, TypeError) as e:
                names = step.names[0] if len(step.names) == 1 else f"({', '.join(step.names)})"
                raise LocalProtocolError(f"{type(obj).__qualname__}.{names}: {e}") from e
            continue
        value = getattr(obj, step.name)
        try:
            step.write(out, value)
        except LocalProtocolError:
            raise
        except (_struct.error, TypeError, AttributeError, ValueError) as e:
            raise LocalProtocolError(f"{step.path} = {_short(value)}: {e}") from e


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------------------
# Fields


def _field_codec(ctx: _Context, f: FieldSpec, path: str) -> tuple[p.Reader, p.Writer]:
    version = ctx.version
    compact = ctx.flexible and (f.flexible_versions is None or version in f.flexible_versions)
    nullable = version in f.nullable_versions
    if f.is_array:
        return _array_codec(ctx, f, compact, nullable, path)
    if f.is_struct:
        read, write = _struct_codec(ctx, ctx.spec.structs[f.element_type], path)
        return _nullable_struct(read, write) if nullable else (read, write)
    return _scalar_codec(f.type, compact, nullable, path)


def _scalar_codec(kind: str, compact: bool, nullable: bool, path: str) -> tuple[Any, Any]:
    fmt = FIXED_FORMATS.get(kind)
    if fmt is not None:
        packer = _struct.Struct(">" + fmt)
        unpack, pack, size = packer.unpack_from, packer.pack, packer.size

        def read_fixed(buf: Any, pos: int) -> tuple[Any, int]:
            return unpack(buf, pos)[0], pos + size

        def write_fixed(out: list, value: Any) -> None:
            out.append(pack(value))

        return read_fixed, write_fixed
    codec = _SCALARS.get((kind, compact, nullable))
    if codec is None:
        raise ValueError(f"{path}: unsupported type {kind} (nullable={nullable})")
    return codec


def _array_codec(
    ctx: _Context, f: FieldSpec, compact: bool, nullable: bool, path: str
) -> tuple[p.Reader, p.Writer]:
    read_count = _COUNT_READERS[compact, nullable]
    encode_count = p.encode_compact_array_count if compact else p.encode_array_count
    null = p.COMPACT_ARRAY_NULL if compact else p.ARRAY_NULL
    element = f.element_type
    fmt = FIXED_FORMATS.get(element)

    if fmt is not None:
        size = _struct.calcsize(">" + fmt)

        def read_fixed_items(buf: Any, pos: int) -> tuple[Any, int]:
            n, pos = read_count(buf, pos)
            if n is None:
                return None, pos
            return list(_struct.unpack_from(f">{n}{fmt}", buf, pos)), pos + n * size

        def write_fixed_items(out: list, values: Any) -> None:
            if values is None:
                if not nullable:
                    raise LocalProtocolError(f"{path}: null in a non-nullable array")
                out.append(null)
                return
            out.append(encode_count(len(values)))
            out.append(_struct.pack(f">{len(values)}{fmt}", *values))

        return read_fixed_items, write_fixed_items

    if f.is_struct:
        read_item, write_item = _struct_codec(ctx, ctx.spec.structs[element], path + "[]")
    else:
        read_item, write_item = _scalar_codec(element, compact, False, path + "[]")

    def read_items(buf: Any, pos: int) -> tuple[Any, int]:
        n, pos = read_count(buf, pos)
        if n is None:
            return None, pos
        items = []
        append = items.append
        for _ in range(n):
            item, pos = read_item(buf, pos)
            append(item)
        return items, pos

    def write_items(out: list, values: Any) -> None:
        if values is None:
            if not nullable:
                raise LocalProtocolError(f"{path}: null in a non-nullable array")
            out.append(null)
            return
        out.append(encode_count(len(values)))
        for value in values:
            write_item(out, value)

    return read_items, write_items


_STRUCT_NULL = p.INT8.pack(-1)
_STRUCT_PRESENT = p.INT8.pack(1)


def _nullable_struct(read: Any, write: Any) -> tuple[p.Reader, p.Writer]:
    """A nullable struct is preceded by an int8 marker: -1 for null, 1 otherwise."""

    def read_nullable(buf: Any, pos: int) -> tuple[Any, int]:
        if p.INT8.unpack_from(buf, pos)[0] < 0:
            return None, pos + 1
        return read(buf, pos + 1)

    def write_nullable(out: list, value: Any) -> None:
        if value is None:
            out.append(_STRUCT_NULL)
        else:
            out.append(_STRUCT_PRESENT)
            write(out, value)

    return read_nullable, write_nullable


def _is_default(f: FieldSpec, ctx: _Context) -> Callable[[Any], bool]:
    """Kafka's test of whether a field holds its default (tagged and absent fields)."""
    if f.is_array:
        if f.default == "null":
            return lambda v: v is None
        return lambda v: not v
    if f.is_struct:
        if f.default == "null":
            return lambda v: v is None
        cls = ctx.classes[f.element_type]
        default_values = cls._values(cls())

        def is_default_struct(v: Any) -> bool:
            return (
                type(v) is cls and not v._unknown_tagged_fields and cls._values(v) == default_values
            )

        return is_default_struct
    if f.type == "records":
        return lambda v: v is None
    default = f.default_value()
    if f.type == "bytes":
        if default is None:
            return lambda v: v is None
        return lambda v: v is not None and len(v) == 0
    if default is None:
        return lambda v: v is None
    return lambda v: v == default
