"""The tagged-fields section that ends each struct of a flexible version, read and
written for :mod:`._compiler`: an unsigned varint count, then per field an unsigned
varint tag, an unsigned varint size and the field's bytes, in ascending tag order.

Each tagged field is given as ``(tag, attribute, read_value, write_value, is_default)``
with its value's reader and writer already compiled. A field is written only when not
default; a tag the version does not know is kept raw on the struct
(``_unknown_tagged_fields``) and written back in tag order.
"""

from __future__ import annotations

from collections.abc import Callable
from operator import itemgetter
from typing import Any

from . import primitives as p

__all__ = ["NO_TAGS", "tags_reader", "tags_writer"]

_first = itemgetter(0)
# An empty tagged-fields section.
NO_TAGS = p.encode_unsigned_varint(0)


def tags_reader(tagged: list) -> Callable[[Any, int, Any], int]:
    known = {tag: (name, read_value) for tag, name, read_value, _, _ in tagged}
    read_uvarint = p.read_unsigned_varint

    def read_tags(buf: Any, pos: int, obj: Any) -> int:
        n, pos = read_uvarint(buf, pos)
        if n == 0:
            obj._unknown_tagged_fields = ()
            return pos
        unknown = []
        for _ in range(n):
            tag, pos = read_uvarint(buf, pos)
            size, pos = read_uvarint(buf, pos)
            end = pos + size
            if end > len(buf):
                raise p.DecodeError(f"tagged field {tag} runs past the end of the buffer")
            entry = known.get(tag)
            if entry is None:
                unknown.append((tag, bytes(buf[pos:end])))
            else:
                value, stop = entry[1](buf[:end], pos)
                if stop != end:
                    raise p.DecodeError(f"tagged field {tag}: {size} bytes announced")
                setattr(obj, entry[0], value)
            pos = end
        obj._unknown_tagged_fields = unknown or ()
        return pos

    return read_tags


def tags_writer(tagged: list) -> Callable[[list, Any], None]:
    fields = tuple(
        (tag, name, write_value, is_default) for tag, name, _, write_value, is_default in tagged
    )

    def write_tags(out: list, obj: Any) -> None:
        present = []
        for tag, name, write_value, is_default in fields:
            value = getattr(obj, name)
            if not is_default(value):
                pieces: list = []
                write_value(pieces, value)
                present.append((tag, pieces))
        unknown = getattr(obj, "_unknown_tagged_fields", ())
        if unknown:
            present.extend((tag, [data]) for tag, data in unknown)
            present.sort(key=_first)
        if present:
            p.write_tagged_fields(out, present)
        else:
            out.append(NO_TAGS)

    return write_tags
