"""Keys and values of the ``__consumer_offsets`` topic, byte-compatible with Apache Kafka 3.9.1.

Every key and every value starts with an int16 schema version; the rest is laid out as in
Kafka's generated message classes (``org.apache.kafka.coordinator.group.generated``).
Integers are big-endian; ``string`` is an int16 length + UTF-8 (-1 for null where
nullable); ``bytes`` is an int32 length + data; an array is an int32 count + elements.
Version 4 of both values is *flexible*: strings and bytes are compact (unsigned varint
length + 1, 0 for null), arrays compact (unsigned varint count + 1), and every struct ends
with a tagged-fields section (unsigned varint count, then tag, size, data per field).

Keys::

    v0, v1  OffsetCommitKey     group string, topic string, partition int32
    v2      GroupMetadataKey    group string
    v3+     records of consumer-protocol (KIP-848) and share groups: not read here
            (:class:`UnknownRecordKey`; Kafka's ZooKeeper-mode loader skips them too)

OffsetCommitValue (the value of an OffsetCommitKey; a null value is a tombstone)::

    v0, v2  offset int64, metadata string, commit_timestamp int64
    v1      offset int64, metadata string, commit_timestamp int64, expire_timestamp int64
    v3      offset int64, leader_epoch int32, metadata string, commit_timestamp int64
    v4      as v3, flexible

GroupMetadataValue (the value of a GroupMetadataKey)::

    protocol_type string, generation int32, protocol nullable string,
    leader nullable string, [v2+] current_state_timestamp int64,
    members array of:
        member_id string, [v3+] group_instance_id nullable string, client_id string,
        client_host string, [v1+] rebalance_timeout int32, session_timeout int32,
        subscription bytes, assignment bytes
    v4: flexible

Versions Kafka 3.9.1 writes (``MetadataVersion.offsetCommitValueVersion`` and
``groupMetadataValueVersion``, used by both the ZooKeeper-mode coordinator,
``kafka.coordinator.group.GroupMetadataManager``, and the new one,
``CoordinatorRecordHelpers``), for any inter-broker protocol / metadata version from 2.3 on
(3.9's default is 3.9-IV0):

* keys: OffsetCommitKey v1, GroupMetadataKey v2;
* OffsetCommitValue v3, but v1 when the commit has an expire timestamp (an OffsetCommit
  request before v5 with a retention time); v1 cannot hold the leader epoch;
* GroupMetadataValue v3.

Versions 0, 2 and 4 are never written by 3.9.1 but are read, as Kafka reads them. Fields a
version lacks decode to their defaults (-1 for epochs and timestamps, ``None`` for the group
instance id), except a v0 member's rebalance timeout, which is its session timeout (as
Kafka's ZooKeeper-mode loader, ``GroupMetadataManager.readGroupMessageValue``, does).
Encoding at a version drops the fields it lacks, as Kafka does for these ignorable fields.
Tagged fields of v4 are skipped on reading (no tags are defined in 3.9.1) and none are
written.

Decoding is strict: truncated data, bad lengths, invalid UTF-8, an unknown value version or
bytes left over raise :class:`MalformedOffsetsRecord` (a ``ValueError``); a key of another
record type raises :class:`UnknownRecordKey`, which the loader skips.

This is one module a little over 500 lines on purpose: this docstring is the format's
specification, and the code follows it record by record; apart, the two would drift.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from tidelog.protocol.primitives import (
    INT16,
    INT32,
    INT64,
    DecodeError,
    encode_unsigned_varint,
    read_bytes,
    read_compact_bytes,
    read_compact_nullable_string,
    read_compact_string,
    read_nullable_string,
    read_string,
    read_tagged_fields,
    read_unsigned_varint,
)

__all__ = [
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MalformedOffsetsRecord",
    "MemberValue",
    "OffsetKey",
    "OffsetValue",
    "UnknownRecordKey",
    "decode_group_value",
    "decode_key",
    "decode_offset_value",
    "encode_group_value",
    "encode_key",
    "encode_offset_key",
    "encode_offset_value",
]

OFFSET_KEY_VERSION = 1  # what Kafka writes; 0 has the same layout
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
OFFSET_VALUE_VERSION_WITH_EXPIRY = 1
GROUP_VALUE_VERSION = 3
MAX_VALUE_VERSION = 4
FLEXIBLE_VERSION = 4

_MAX_STRING_BYTES = 0x7FFF  # Kafka's limit for any string field, flexible or not
KEY_CACHE_SIZE = 65536  # encoded keys kept (a key is ~60 bytes)

_T = TypeVar("_T")


# --------------------------------------------------------------------------------------
# Records


@dataclass(frozen=True)
class OffsetKey:
    """Key of a committed offset (OffsetCommitKey, versions 0 and 1)."""

    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class GroupMetadataKey:
    """Key of a group's metadata (version 2)."""

    group: str


@dataclass(slots=True)
class OffsetValue:
    """A committed offset (OffsetCommitValue); -1 means "none" for the epoch and times.
    One per partition a group committed, made at every commit: slots make it smaller
    and quicker to make."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int = -1


@dataclass
class MemberValue:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int
    members: list[MemberValue]


class UnknownRecordKey(Exception):
    """A key of a record type this codec does not read (version 3 and up, or negative)."""

    def __init__(self, version: int):
        super().__init__(f"unknown __consumer_offsets key version {version}")
        self.version = version


class MalformedOffsetsRecord(ValueError):
    """The bytes are not a valid ``__consumer_offsets`` key or value."""


# --------------------------------------------------------------------------------------
# Reading and writing one record


class _Reader:
    """A cursor over one record, reading the plain or the compact (flexible) forms."""

    def __init__(self, data: bytes, flexible: bool = False):
        self.data = data
        self.pos = 0
        self.flexible = flexible

    def _fixed(self, fmt: struct.Struct) -> int:
        if self.pos + fmt.size > len(self.data):
            raise DecodeError(f"{fmt.size}-byte integer runs past the end of the data")
        (value,) = fmt.unpack_from(self.data, self.pos)
        self.pos += fmt.size
        return value

    def int16(self) -> int:
        return self._fixed(INT16)

    def int32(self) -> int:
        return self._fixed(INT32)

    def int64(self) -> int:
        return self._fixed(INT64)

    def _read(self, plain: Any, compact: Any) -> Any:
        value, self.pos = (compact if self.flexible else plain)(self.data, self.pos)
        return value

    def string(self) -> str:
        return self._read(read_string, read_compact_string)

    def nullable_string(self) -> str | None:
        return self._read(read_nullable_string, read_compact_nullable_string)

    def blob(self) -> bytes:
        return self._read(read_bytes, read_compact_bytes)

    def array_count(self) -> int:
        if self.flexible:
            n, self.pos = read_unsigned_varint(self.data, self.pos)
            if n == 0:
                raise DecodeError("null in a non-nullable array")
            n -= 1
        else:
            n = self.int32()
            if n < 0:
                raise DecodeError("null in a non-nullable array")
        if n > len(self.data) - self.pos:
            raise DecodeError(f"array of {n} elements is longer than the data left")
        return n

    def tagged_fields(self) -> None:
        """Skip a struct's tagged fields (flexible versions only)."""
        if self.flexible:
            _, self.pos = read_tagged_fields(self.data, self.pos)

    def end(self) -> None:
        if self.pos != len(self.data):
            raise DecodeError(f"{len(self.data) - self.pos} bytes left after the record")


class _Writer:
    def __init__(self, version: int, flexible: bool = False):
        self.parts: list[bytes] = [INT16.pack(version)]
        self.flexible = flexible

    def int32(self, value: int) -> None:
        self.parts.append(INT32.pack(value))

    def int64(self, value: int) -> None:
        self.parts.append(INT64.pack(value))

    def _length(self, n: int | None) -> None:
        if self.flexible:
            self.parts.append(encode_unsigned_varint(0 if n is None else n + 1))
        else:
            self.parts.append(INT16.pack(-1 if n is None else n))

    def nullable_string(self, value: str | None) -> None:
        if value is None:
            self._length(None)
            return
        data = value.encode("utf-8")
        if len(data) > _MAX_STRING_BYTES:
            raise ValueError(f"string of {len(data)} bytes is longer than {_MAX_STRING_BYTES}")
        self._length(len(data))
        self.parts.append(data)

    def string(self, value: str) -> None:
        self.nullable_string(value)

    def blob(self, value: bytes) -> None:
        if self.flexible:
            self.parts.append(encode_unsigned_varint(len(value) + 1))
        else:
            self.parts.append(INT32.pack(len(value)))
        self.parts.append(bytes(value))

    def array_count(self, n: int) -> None:
        self.parts.append(encode_unsigned_varint(n + 1) if self.flexible else INT32.pack(n))

    def tagged_fields(self) -> None:
        if self.flexible:
            self.parts.append(b"\x00")  # none

    def getvalue(self) -> bytes:
        return b"".join(self.parts)


def _decoding(what: str, data: bytes, read: Callable[[_Reader, int], _T]) -> _T:
    """Run ``read(reader, version)`` over ``data``, turning any failure into a ValueError."""
    try:
        reader = _Reader(bytes(data))
        version = reader.int16()
        value = read(reader, version)
        reader.end()
        return value
    except MalformedOffsetsRecord:
        raise
    except (DecodeError, struct.error, IndexError, ValueError) as exc:
        raise MalformedOffsetsRecord(f"malformed {what}: {exc}") from exc


def _encoding(what: str, write: Callable[[], bytes]) -> bytes:
    try:
        return write()
    except struct.error as exc:
        raise ValueError(f"cannot encode {what}: {exc}") from exc


def _check_value_version(what: str, version: int) -> None:
    if not 0 <= version <= MAX_VALUE_VERSION:
        raise MalformedOffsetsRecord(f"unknown {what} version {version}")


# --------------------------------------------------------------------------------------
# Keys


@functools.lru_cache(maxsize=KEY_CACHE_SIZE)
def encode_offset_key(group: str, topic: str, partition: int) -> bytes:
    """``encode_key(OffsetKey(group, topic, partition))``, cached by its three parts (a
    group commits the same partitions over and over; hashing the parts is cheaper than
    making and hashing a key object)."""
    return encode_key(OffsetKey(group, topic, partition))


def encode_key(key: OffsetKey | GroupMetadataKey) -> bytes:
    """A key as Kafka 3.9.1 writes it: OffsetCommitKey v1 or GroupMetadataKey v2."""

    def write() -> bytes:
        if isinstance(key, OffsetKey):
            w = _Writer(OFFSET_KEY_VERSION)
            w.string(key.group)
            w.string(key.topic)
            w.int32(key.partition)
        elif isinstance(key, GroupMetadataKey):
            w = _Writer(GROUP_KEY_VERSION)
            w.string(key.group)
        else:
            raise TypeError(f"not a __consumer_offsets key: {key!r}")
        return w.getvalue()

    return _encoding("key", write)


def decode_key(data: bytes) -> OffsetKey | GroupMetadataKey:
    """The key of a ``__consumer_offsets`` record; :class:`UnknownRecordKey` for a key of
    another record type (version 3 and up)."""

    def read(r: _Reader, version: int) -> OffsetKey | GroupMetadataKey:
        if version in (0, 1):
            return OffsetKey(r.string(), r.string(), r.int32())
        if version == GROUP_KEY_VERSION:
            return GroupMetadataKey(r.string())
        raise UnknownRecordKey(version)

    return _decoding("key", data, read)


# --------------------------------------------------------------------------------------
# Offset values


def encode_offset_value(value: OffsetValue, *, version: int | None = None) -> bytes:
    """An OffsetCommitValue at the version Kafka 3.9.1 picks (v3, or v1 when the commit
    has an expire timestamp), or at ``version`` (0-4; fields it lacks are dropped)."""
    if version is None:
        has_expiry = value.expire_timestamp != -1
        version = OFFSET_VALUE_VERSION_WITH_EXPIRY if has_expiry else OFFSET_VALUE_VERSION
        if not has_expiry:  # every commit but an old client's with a retention time
            try:
                return _offset_value_v3(value)
            except (struct.error, ValueError):
                pass  # the general writer below names what is wrong
    elif not 0 <= version <= MAX_VALUE_VERSION:
        raise ValueError(f"no OffsetCommitValue version {version}")

    def write() -> bytes:
        w = _Writer(version, flexible=version >= FLEXIBLE_VERSION)
        w.int64(value.offset)
        if version >= 3:
            w.int32(value.leader_epoch)
        w.string(value.metadata)
        w.int64(value.commit_timestamp)
        if version == 1:
            w.int64(value.expire_timestamp)
        w.tagged_fields()
        return w.getvalue()

    return _encoding("OffsetCommitValue", write)


_OFFSET_VALUE_V3_HEAD = struct.Struct(">hqih")  # version, offset, leader epoch, metadata length
# The same, then the commit timestamp: the whole value when the metadata is empty.
_OFFSET_VALUE_V3_NO_METADATA = struct.Struct(">hqihq")


def _offset_value_v3(value: OffsetValue) -> bytes:
    """OffsetCommitValue v3 in one piece: the layout of the general writer above."""
    if not value.metadata:  # what consumers commit: one pack
        return _OFFSET_VALUE_V3_NO_METADATA.pack(
            OFFSET_VALUE_VERSION, value.offset, value.leader_epoch, 0, value.commit_timestamp
        )
    metadata = value.metadata.encode("utf-8")
    if len(metadata) > _MAX_STRING_BYTES:
        raise ValueError("metadata too long")  # the general writer says so properly
    head = _OFFSET_VALUE_V3_HEAD.pack(
        OFFSET_VALUE_VERSION, value.offset, value.leader_epoch, len(metadata)
    )
    return head + metadata + INT64.pack(value.commit_timestamp)


def decode_offset_value(data: bytes) -> OffsetValue:
    """An OffsetCommitValue of any version 0-4."""

    def read(r: _Reader, version: int) -> OffsetValue:
        _check_value_version("OffsetCommitValue", version)
        r.flexible = version >= FLEXIBLE_VERSION
        offset = r.int64()
        leader_epoch = r.int32() if version >= 3 else -1
        metadata = r.string()
        commit_timestamp = r.int64()
        expire_timestamp = r.int64() if version == 1 else -1
        r.tagged_fields()
        return OffsetValue(offset, leader_epoch, metadata, commit_timestamp, expire_timestamp)

    return _decoding("OffsetCommitValue", data, read)


# --------------------------------------------------------------------------------------
# Group metadata values


def encode_group_value(value: GroupMetadataValue, *, version: int | None = None) -> bytes:
    """A GroupMetadataValue at the version Kafka 3.9.1 writes (v3), or at ``version``
    (0-4; fields it lacks are dropped)."""
    if version is None:
        version = GROUP_VALUE_VERSION
    elif not 0 <= version <= MAX_VALUE_VERSION:
        raise ValueError(f"no GroupMetadataValue version {version}")

    def write() -> bytes:
        w = _Writer(version, flexible=version >= FLEXIBLE_VERSION)
        w.string(value.protocol_type)
        w.int32(value.generation)
        w.nullable_string(value.protocol)
        w.nullable_string(value.leader)
        if version >= 2:
            w.int64(value.current_state_timestamp)
        w.array_count(len(value.members))
        for m in value.members:
            w.string(m.member_id)
            if version >= 3:
                w.nullable_string(m.group_instance_id)
            w.string(m.client_id)
            w.string(m.client_host)
            if version >= 1:
                w.int32(m.rebalance_timeout)
            w.int32(m.session_timeout)
            w.blob(m.subscription)
            w.blob(m.assignment)
            w.tagged_fields()
        w.tagged_fields()
        return w.getvalue()

    return _encoding("GroupMetadataValue", write)


def decode_group_value(data: bytes) -> GroupMetadataValue:
    """A GroupMetadataValue of any version 0-4."""

    def read_member(r: _Reader, version: int) -> MemberValue:
        member_id = r.string()
        group_instance_id = r.nullable_string() if version >= 3 else None
        client_id = r.string()
        client_host = r.string()
        rebalance_timeout = r.int32() if version >= 1 else None
        session_timeout = r.int32()
        subscription = r.blob()
        assignment = r.blob()
        r.tagged_fields()
        if rebalance_timeout is None:  # v0: Kafka's loader uses the session timeout
            rebalance_timeout = session_timeout
        return MemberValue(
            member_id,
            group_instance_id,
            client_id,
            client_host,
            rebalance_timeout,
            session_timeout,
            subscription,
            assignment,
        )

    def read(r: _Reader, version: int) -> GroupMetadataValue:
        _check_value_version("GroupMetadataValue", version)
        r.flexible = version >= FLEXIBLE_VERSION
        protocol_type = r.string()
        generation = r.int32()
        protocol = r.nullable_string()
        leader = r.nullable_string()
        current_state_timestamp = r.int64() if version >= 2 else -1
        members = [read_member(r, version) for _ in range(r.array_count())]
        r.tagged_fields()
        return GroupMetadataValue(
            protocol_type, generation, protocol, leader, current_state_timestamp, members
        )

    return _decoding("GroupMetadataValue", data, read)
