"""Control records: the key and value layouts of transaction markers.

A control batch (attributes bit 5) holds one control record. Its key is
``version: int16 (0) + type: int16`` and, for COMMIT and ABORT markers, its value is
an end-transaction marker ``version: int16 (0) + coordinatorEpoch: int32``.
"""

from __future__ import annotations

import struct
from enum import IntEnum
from typing import NamedTuple

from .errors import CorruptRecordError

__all__ = [
    "CONTROL_KEY_VERSION",
    "END_TXN_MARKER_VERSION",
    "ControlRecordType",
    "EndTransactionMarker",
    "decode_control_key",
    "decode_end_txn_marker",
    "encode_control_key",
    "encode_end_txn_marker",
]

CONTROL_KEY_VERSION = 0
END_TXN_MARKER_VERSION = 0

_KEY = struct.Struct(">hh")
_END_TXN = struct.Struct(">hi")


class ControlRecordType(IntEnum):
    """Kafka's control record types (the int16 ``type`` of the control key)."""

    ABORT = 0
    COMMIT = 1
    # Written by KRaft metadata logs; listed so that reading them does not fail.
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4


class EndTransactionMarker(NamedTuple):
    control_type: ControlRecordType
    coordinator_epoch: int


def encode_control_key(control_type: int) -> bytes:
    """Key bytes of a control record of ``control_type``."""
    return _KEY.pack(CONTROL_KEY_VERSION, control_type)


def decode_control_key(key: bytes | None) -> int:
    """The control type of a control record key.

    Returns a :class:`ControlRecordType` when the type is known, else the raw int16
    (Kafka reads unknown types as UNKNOWN rather than failing).
    """
    if key is None or len(key) < _KEY.size:
        raise CorruptRecordError("control record key must hold at least 4 bytes")
    version, control_type = _KEY.unpack_from(key)
    if version < 0:
        raise CorruptRecordError(f"invalid control record key version {version}")
    try:
        return ControlRecordType(control_type)
    except ValueError:
        return control_type


def encode_end_txn_marker(coordinator_epoch: int) -> bytes:
    """Value bytes of a COMMIT or ABORT marker."""
    return _END_TXN.pack(END_TXN_MARKER_VERSION, coordinator_epoch)


def decode_end_txn_marker(control_type: int, value: bytes | None) -> EndTransactionMarker:
    """Parse the value of a COMMIT or ABORT control record."""
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise CorruptRecordError(f"control type {control_type} is not a transaction marker")
    if value is None or len(value) < _END_TXN.size:
        raise CorruptRecordError("end transaction marker value must hold at least 6 bytes")
    version, coordinator_epoch = _END_TXN.unpack_from(value)
    if version < 0:
        raise CorruptRecordError(f"invalid end transaction marker version {version}")
    return EndTransactionMarker(ControlRecordType(control_type), coordinator_epoch)
