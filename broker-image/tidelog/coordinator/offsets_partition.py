"""Reading a ``__consumer_offsets`` partition back into groups and committed offsets.

The partition is a compacted log of two kinds of records (``offsets_records``): a
group's metadata under its group key, and each committed offset under its (group,
topic, partition) key. The last record of a key wins; a tombstone (null value) removes
it. A new coordinator replays its partitions this way before it answers for their groups.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from tidelog.coordinator.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetValue,
    UnknownRecordKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from tidelog.records.reader import iter_decoded_batches
from tidelog.storage.log import Log

__all__ = ["LoadedPartition", "load_offsets_partition"]

logger = logging.getLogger(__name__)

READ_CHUNK_BYTES = 4 * 1024 * 1024  # Kafka's offsets.load.buffer.size is 5 MiB


@dataclass
class LoadedPartition:
    groups: dict[str, GroupMetadataValue] = field(default_factory=dict)
    offsets: dict[str, dict[tuple[str, int], OffsetValue]] = field(default_factory=dict)


def load_offsets_partition(log: Log, end_offset: int) -> LoadedPartition:
    """Replay ``log`` from its start up to ``end_offset``. Blocking: run it in a thread."""
    loaded = LoadedPartition()
    offset = log.log_start_offset
    while offset < end_offset:
        found = log.read(offset, READ_CHUNK_BYTES, end_offset, min_one_message=True)
        if found is None:
            break
        next_offset = offset
        for batch in iter_decoded_batches(found.records.to_bytes(), allow_partial=True):
            next_offset = batch.header.next_offset
            if batch.is_control:
                continue
            for record in batch.records:
                _apply(loaded, record.key, record.value)
        if next_offset <= offset:
            break
        offset = next_offset
    return loaded


def _apply(loaded: LoadedPartition, key_bytes: bytes | None, value: bytes | None) -> None:
    if key_bytes is None:
        return
    try:
        key = decode_key(key_bytes)
    except UnknownRecordKey:
        return  # records of Kafka's newer group protocols, which tidelog does not serve
    if isinstance(key, GroupMetadataKey):
        if value is None:
            loaded.groups.pop(key.group, None)
        else:
            loaded.groups[key.group] = decode_group_value(value)
    elif isinstance(key, OffsetKey):
        offsets = loaded.offsets.setdefault(key.group, {})
        if value is None:
            offsets.pop((key.topic, key.partition), None)
        else:
            offsets[(key.topic, key.partition)] = decode_offset_value(value)
