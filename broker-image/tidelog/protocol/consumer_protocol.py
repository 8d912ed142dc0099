"""The consumer protocol's embedded messages: what a member of a group with protocol type
``consumer`` puts in JoinGroup's protocol metadata (its subscription) and what the leader
hands out in SyncGroup (each member's assignment). The coordinator stores both as opaque
bytes and reads only the subscribed topics (OffsetDelete refuses a subscribed topic);
DescribeGroups returns them, and tools decode them to show who owns what.

Both are plain (non-flexible) Kafka structs behind an int16 version, versions 0 to 3:

* subscription: topics ``[string]``, user data (nullable bytes); v1+ adds the partitions
  the member owns ``[topic string, partitions [int32]]``; v2+ its generation (int32);
  v3+ its rack (nullable string).
* assignment: partitions ``[topic string, partitions [int32]]``, user data (nullable
  bytes), the same in every version.

A version above 3 is read as version 3, ignoring what follows: newer versions only add
fields at the end, which is what lets old members and tools read new ones.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

__all__ = [
    "HIGHEST_VERSION",
    "PROTOCOL_TYPE",
    "ConsumerProtocolAssignment",
    "ConsumerProtocolError",
    "ConsumerProtocolSubscription",
    "decode_assignment",
    "decode_subscription",
    "encode_assignment",
    "encode_subscription",
]

PROTOCOL_TYPE = "consumer"
HIGHEST_VERSION = 3

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


class ConsumerProtocolError(ValueError):
    """Bytes that are not a consumer protocol subscription or assignment."""


@dataclass(frozen=True)
class ConsumerProtocolSubscription:
    version: int
    topics: tuple[str, ...]
    user_data: bytes | None = None
    owned_partitions: tuple[tuple[str, int], ...] = ()
    generation_id: int = -1
    rack_id: str | None = None


@dataclass(frozen=True)
class ConsumerProtocolAssignment:
    version: int
    partitions: tuple[tuple[str, int], ...]
    user_data: bytes | None = None


class _Reader:
    def __init__(self, data: bytes | bytearray | memoryview, what: str):
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def _take(self, size: int) -> bytes:
        end = self.pos + size
        if size < 0 or end > len(self.data):
            raise ConsumerProtocolError(
                f"{self.what}: {len(self.data)} bytes end before byte {end} "
                f"(a field at byte {self.pos} needs {size})"
            )
        chunk = self.data[self.pos : end]
        self.pos = end
        return chunk

    def int16(self) -> int:
        return _INT16.unpack(self._take(2))[0]

    def int32(self) -> int:
        return _INT32.unpack(self._take(4))[0]

    def string(self, *, nullable: bool = False) -> str | None:
        size = self.int16()
        if size == -1 and nullable:
            return None
        if size < 0:
            raise ConsumerProtocolError(f"{self.what}: negative string length {size}")
        try:
            return self._take(size).decode("utf-8")
        except UnicodeDecodeError as error:
            raise ConsumerProtocolError(f"{self.what}: a string is not UTF-8: {error}") from None

    def nullable_bytes(self) -> bytes | None:
        size = self.int32()
        if size == -1:
            return None
        if size < 0:
            raise ConsumerProtocolError(f"{self.what}: negative bytes length {size}")
        return self._take(size)

    def count(self) -> int:
        count = self.int32()
        if count < 0:
            raise ConsumerProtocolError(f"{self.what}: negative array length {count}")
        # Each element takes at least two bytes: no allocation beyond the data.
        if count > len(self.data) - self.pos:
            raise ConsumerProtocolError(f"{self.what}: array of {count} exceeds the data")
        return count

    def topic_partitions(self) -> tuple[tuple[str, int], ...]:
        out = []
        for _ in range(self.count()):
            topic = self.string()
            for _ in range(self.count()):
                out.append((topic, self.int32()))
        return tuple(out)

    def version(self) -> int:
        version = self.int16()
        if version < 0:
            raise ConsumerProtocolError(f"{self.what}: unsupported version {version}")
        return version


def decode_subscription(data: bytes | bytearray | memoryview) -> ConsumerProtocolSubscription:
    """A member's protocol metadata; raises :class:`ConsumerProtocolError`."""
    reader = _Reader(data, "consumer protocol subscription")
    version = reader.version()
    read_as = min(version, HIGHEST_VERSION)
    topics = tuple(reader.string() for _ in range(reader.count()))
    user_data = reader.nullable_bytes()
    owned = reader.topic_partitions() if read_as >= 1 else ()
    generation = reader.int32() if read_as >= 2 else -1
    rack = reader.string(nullable=True) if read_as >= 3 else None
    return ConsumerProtocolSubscription(version, topics, user_data, owned, generation, rack)


def decode_assignment(data: bytes | bytearray | memoryview) -> ConsumerProtocolAssignment:
    """A member's assignment; raises :class:`ConsumerProtocolError`."""
    reader = _Reader(data, "consumer protocol assignment")
    version = reader.version()
    partitions = reader.topic_partitions()
    user_data = reader.nullable_bytes()
    return ConsumerProtocolAssignment(version, partitions, user_data)


# -- encoding (what a consumer sends; tests and tools that act as members) ----------------


def _string(value: str | None) -> bytes:
    if value is None:
        return _INT16.pack(-1)
    raw = value.encode("utf-8")
    return _INT16.pack(len(raw)) + raw


def _nullable_bytes(value: bytes | None) -> bytes:
    return _INT32.pack(-1) if value is None else _INT32.pack(len(value)) + bytes(value)


def _topic_partitions(pairs: Iterable[tuple[str, int]]) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in pairs:
        by_topic.setdefault(topic, []).append(partition)
    out = [_INT32.pack(len(by_topic))]
    for topic, partitions in by_topic.items():
        out.append(_string(topic))
        out.append(_INT32.pack(len(partitions)))
        out.extend(_INT32.pack(p) for p in partitions)
    return b"".join(out)


def _check_version(version: int) -> None:
    if not 0 <= version <= HIGHEST_VERSION:
        raise ConsumerProtocolError(f"cannot write consumer protocol version {version}")


def encode_subscription(
    topics: Sequence[str],
    *,
    version: int = HIGHEST_VERSION,
    user_data: bytes | None = None,
    owned_partitions: Iterable[tuple[str, int]] = (),
    generation_id: int = -1,
    rack_id: str | None = None,
) -> bytes:
    _check_version(version)
    out = [_INT16.pack(version), _INT32.pack(len(topics))]
    out.extend(_string(t) for t in topics)
    out.append(_nullable_bytes(user_data))
    if version >= 1:
        out.append(_topic_partitions(owned_partitions))
    if version >= 2:
        out.append(_INT32.pack(generation_id))
    if version >= 3:
        out.append(_string(rack_id))
    return b"".join(out)


def encode_assignment(
    partitions: Iterable[tuple[str, int]],
    *,
    version: int = HIGHEST_VERSION,
    user_data: bytes | None = None,
) -> bytes:
    _check_version(version)
    return _INT16.pack(version) + _topic_partitions(partitions) + _nullable_bytes(user_data)
