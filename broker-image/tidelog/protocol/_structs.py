"""The classes of decoded messages: one ``__slots__`` class per struct of a message.

A message's top-level class is named like the message (``FetchRequest``) and carries its
nested struct classes as attributes (``FetchRequest.FetchTopic``). Every class has all the
fields of all versions, as snake-case attributes; fields a version lacks hold their
defaults. Unknown tagged fields read from the wire are kept in ``_unknown_tagged_fields``
(``[(tag, bytes)]``) and written back.
"""

from __future__ import annotations

import keyword
import threading
from collections.abc import Callable
from operator import attrgetter
from typing import Any, ClassVar

from ._schema import FieldSpec, MessageSpec

__all__ = ["Struct", "field_default", "message_classes"]


class Struct:
    """Base of every message and nested struct class.

    ``Cls(**fields)`` sets the given fields and defaults the others (each message class
    gets an ``__init__`` compiled for its fields, see :func:`_compile_init`; an unknown
    field is a TypeError); ``Cls.from_dict(d)``
    does the same from (nested) dicts; ``obj.to_dict()`` is the inverse. Equality compares
    every field.
    """

    __slots__ = ("_unknown_tagged_fields",)

    _fields: ClassVar[tuple[str, ...]] = ()
    _field_set: ClassVar[frozenset[str]] = frozenset({"_unknown_tagged_fields"})
    # Defaults: immutable values, and factories of fresh lists and structs.
    _constants: ClassVar[tuple[tuple[str, Any], ...]] = ()
    _factories: ClassVar[tuple[tuple[str, Any], ...]] = ()
    # All field values as a tuple (for equality).
    _values: ClassVar[Callable[[Any], Any]] = staticmethod(lambda obj: ())
    # attribute -> (struct class, whether the field is an array of it)
    _struct_fields: ClassVar[dict[str, tuple[type[Struct], bool]]] = {}
    _spec: ClassVar[Any] = None  # the StructSpec the class was made from (introspection)

    def __init__(self, **values: Any) -> None:
        for name, value in self._constants:
            setattr(self, name, value)
        for name, factory in self._factories:
            if name not in values:
                setattr(self, name, factory())
        self._unknown_tagged_fields = ()
        if values:
            fields = self._field_set
            for name, value in values.items():
                if name not in fields:
                    raise TypeError(f"{type(self).__qualname__} has no field {name!r}")
                setattr(self, name, value)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Struct:
        values = {}
        for name, value in data.items():
            nested = cls._struct_fields.get(name)
            if nested is not None and value is not None:
                struct_class, is_array = nested
                if is_array:
                    value = [struct_class.from_dict(v) if isinstance(v, dict) else v for v in value]
                elif isinstance(value, dict):
                    value = struct_class.from_dict(value)
            values[name] = value
        return cls(**values)

    def to_dict(self) -> dict[str, Any]:
        out = {}
        for name in self._fields:
            value = getattr(self, name)
            if isinstance(value, Struct):
                value = value.to_dict()
            elif isinstance(value, list) and value and isinstance(value[0], Struct):
                value = [v.to_dict() for v in value]
            out[name] = value
        return out

    def __eq__(self, other: object) -> bool:
        if type(other) is not type(self):
            return NotImplemented
        return self._values(self) == other._values(other) and list(
            self._unknown_tagged_fields
        ) == list(other._unknown_tagged_fields)

    __hash__ = None  # mutable

    def __repr__(self) -> str:
        fields = ", ".join(f"{n}={getattr(self, n, '<unset>')!r}" for n in self._fields)
        return f"{type(self).__qualname__}({fields})"


def field_default(field: FieldSpec, classes: dict[str, type[Struct]]) -> tuple[Any, bool]:
    """``(value, False)`` for an immutable default, ``(factory, True)`` otherwise."""
    if field.is_array:
        return (None, False) if field.default == "null" else (list, True)
    if field.is_struct:
        if field.default == "null":
            return None, False
        return classes[field.element_type], True
    return field.default_value(), False


_MISSING = object()


def _unknown_field(obj: Struct, unknown: dict[str, Any]) -> None:
    raise TypeError(f"{type(obj).__qualname__} has no field {next(iter(unknown))!r}")


def _compile_init(cls: type[Struct]) -> None:
    """Give ``cls`` an ``__init__`` written for its fields (keyword-only, defaults as the
    class declares them): what :meth:`Struct.__init__` does, without its loops over the
    fields and its checks by name, which cost most of the making of a response. A class
    with a field named like a Python keyword keeps the general one."""
    names = [name for name, _ in (*cls._constants, *cls._factories)]
    if any(keyword.iskeyword(name) or name.startswith("_") for name in names):
        return
    scope: dict[str, Any] = {"_MISSING": _MISSING}
    parameters, lines = [], []
    for index, (name, value) in enumerate(cls._constants):
        scope[f"_default{index}"] = value
        parameters.append(f"{name}=_default{index}")
        lines.append(f"self.{name} = {name}")
    for index, (name, factory) in enumerate(cls._factories):
        scope[f"_factory{index}"] = factory
        parameters.append(f"{name}=_MISSING")
        lines.append(f"self.{name} = _factory{index}() if {name} is _MISSING else {name}")
    lines.append("self._unknown_tagged_fields = _unknown_tagged_fields")
    lines.append("if unknown:")
    lines.append("    _unknown_field(self, unknown)")
    scope["_unknown_field"] = _unknown_field
    signature = ", ".join([*parameters, "_unknown_tagged_fields=()", "**unknown"])
    source = f"def __init__(self, *, {signature}):\n" + "".join(f"    {line}\n" for line in lines)
    exec(source, scope)  # the source is made above from the class's field names
    init = scope["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    cls.__init__ = init


_lock = threading.Lock()
_classes: dict[str, dict[str, type[Struct]]] = {}


def message_classes(spec: MessageSpec) -> dict[str, type[Struct]]:
    """The classes of a message's structs by struct name, created once per message."""
    classes = _classes.get(spec.name)
    if classes is not None:
        return classes
    with _lock:
        classes = _classes.get(spec.name)
        if classes is None:
            classes = _create_classes(spec)
            _classes[spec.name] = classes
    return classes


def _create_classes(spec: MessageSpec) -> dict[str, type[Struct]]:
    classes: dict[str, type[Struct]] = {}
    for name, struct in spec.structs.items():
        attrs = tuple(f.attr for f in struct.fields)
        qualname = name if name == spec.name else f"{spec.name}.{name}"
        namespace = {
            "__slots__": attrs,
            "__qualname__": qualname,
            "__module__": "tidelog.protocol.messages",
            "__doc__": f"Kafka's {qualname} (all versions of {spec.name}).",
            "_fields": attrs,
            "_spec": struct,
        }
        classes[name] = type(name, (Struct,), namespace)
    for name, struct in spec.structs.items():
        cls = classes[name]
        constants, factories, nested = [], [], {}
        for f in struct.fields:
            default, is_factory = field_default(f, classes)
            (factories if is_factory else constants).append((f.attr, default))
            if f.is_struct:
                nested[f.attr] = (classes[f.element_type], f.is_array)
        cls._constants = tuple(constants)
        cls._factories = tuple(factories)
        cls._struct_fields = nested
        cls._field_set = frozenset((*cls._fields, "_unknown_tagged_fields"))
        if cls._fields:
            # attrgetter is not a descriptor: no staticmethod needed.
            cls._values = attrgetter(*cls._fields)
        _compile_init(cls)
    top = classes[spec.name]
    for name, cls in classes.items():
        if cls is not top:
            setattr(top, name, cls)
    return classes
