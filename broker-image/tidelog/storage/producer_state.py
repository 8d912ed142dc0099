"""Idempotent producers: per-partition producer state, duplicate detection, snapshots.

For each producer id the partition keeps its epoch and the metadata of its last five
batches (first/last sequence, first/last offset, max timestamp). A batch is checked
before it is appended:

* an epoch below the known one → INVALID_PRODUCER_EPOCH;
* a batch equal (epoch, first and last sequence) to one of the last five is a retry
  of a batch already written: it is acknowledged with the original offsets and not
  appended again;
* otherwise its first sequence must follow the last one (wrapping at 2^31-1), or be 0
  for a new epoch; any other gap → OUT_OF_ORDER_SEQUENCE_NUMBER;
* a producer id with no state here (its records were deleted by retention or
  DeleteRecords, or it never wrote here) is taken at any sequence, as Kafka does since
  KIP-360: refusing it (UNKNOWN_PRODUCER_ID, Kafka before 2.5) makes a client renumber
  and re-send batches that may already be in the log.

State is snapshotted to ``<offset>.snapshot`` in Kafka's format when a segment rolls
and on close, and rebuilt at load from the newest snapshot plus the batch headers after
it, so a restarted broker keeps deduplicating. Snapshot layout (big-endian)::

    version int16 (1) | crc uint32 (CRC32C of what follows) | count int32 |
    count x (producer_id int64, epoch int16, last_sequence int32, last_offset int64,
             offset_delta int32, timestamp int64, coordinator_epoch int32,
             current_txn_first_offset int64)
"""

from __future__ import annotations

import logging
import os
import re
import struct
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from tidelog.records.batch import BatchHeader
from tidelog.records.crc import crc32c
from tidelog.storage.errors import (
    InvalidProducerEpochError,
    OutOfOrderSequenceError,
)

__all__ = ["SNAPSHOT_SUFFIX", "BatchMetadata", "ProducerStateManager"]

logger = logging.getLogger(__name__)

SNAPSHOT_SUFFIX = ".snapshot"
BATCHES_TO_RETAIN = 5
NO_EPOCH = -1
_SNAPSHOT_NAME = re.compile(r"^(\d{20})\.snapshot$")
_VERSION_AND_CRC = struct.Struct(">hI")
_ENTRY = struct.Struct(">qhiqiqiq")
_MAX_SEQUENCE = 2**31 - 1


class BatchMetadata(NamedTuple):
    first_sequence: int
    last_sequence: int
    first_offset: int
    last_offset: int
    timestamp: int


@dataclass
class ProducerEntry:
    epoch: int = NO_EPOCH
    batches: deque[BatchMetadata] = field(default_factory=lambda: deque(maxlen=BATCHES_TO_RETAIN))

    @property
    def last_sequence(self) -> int:
        return self.batches[-1].last_sequence if self.batches else -1

    def duplicate_of(self, epoch: int, first: int, last: int) -> BatchMetadata | None:
        if epoch != self.epoch:
            return None
        return next(
            (b for b in self.batches if b.first_sequence == first and b.last_sequence == last),
            None,
        )


def _in_sequence(last: int, following: int) -> bool:
    return following == last + 1 or (following == 0 and last == _MAX_SEQUENCE)


def _last_sequence(header: BatchHeader) -> int:
    return (header.base_sequence + header.last_offset_delta) % (_MAX_SEQUENCE + 1)


class ProducerStateManager:
    def __init__(self, directory: Path):
        self.directory = Path(directory)
        self.producers: dict[int, ProducerEntry] = {}

    # -- checks and updates ---------------------------------------------------------------

    def check(self, batches: Sequence[BatchHeader]) -> BatchMetadata | None:
        """Validate an append's idempotent batches against the state (no change made).
        Returns the original metadata when the append is a retry of a written batch."""
        pending: dict[int, tuple[int, int]] = {}  # producer -> (epoch, last sequence)
        for header in batches:
            producer_id = header.producer_id
            if producer_id < 0:
                continue
            entry = self.producers.get(producer_id)
            known_epoch, known_last = pending.get(
                producer_id,
                (entry.epoch, entry.last_sequence) if entry else (NO_EPOCH, -1),
            )
            first, last = header.base_sequence, _last_sequence(header)
            if header.producer_epoch < known_epoch:
                raise InvalidProducerEpochError(
                    f"producer {producer_id} sent epoch {header.producer_epoch}, "
                    f"below its current epoch {known_epoch}"
                )
            if entry is not None and producer_id not in pending:
                duplicate = entry.duplicate_of(header.producer_epoch, first, last)
                if duplicate is not None and len(batches) == 1:
                    return duplicate
            if header.producer_epoch != known_epoch:
                if first != 0 and known_epoch != NO_EPOCH:
                    raise OutOfOrderSequenceError(
                        f"new epoch {header.producer_epoch} of producer {producer_id} "
                        f"starts at sequence {first}, not 0"
                    )
            elif not _in_sequence(known_last, first):
                raise OutOfOrderSequenceError(
                    f"producer {producer_id} sent sequence {first}, expected "
                    f"{(known_last + 1) % (_MAX_SEQUENCE + 1)}"
                )
            pending[producer_id] = (header.producer_epoch, last)
        return None

    def update(self, batches: Iterable[BatchHeader]) -> None:
        """Record appended batches (offsets assigned) — leader and follower alike."""
        for header in batches:
            if header.producer_id < 0:
                continue
            entry = self.producers.setdefault(header.producer_id, ProducerEntry())
            if header.producer_epoch != entry.epoch:
                entry.epoch = header.producer_epoch
                entry.batches.clear()
            entry.batches.append(
                BatchMetadata(
                    header.base_sequence,
                    _last_sequence(header),
                    header.base_offset,
                    header.last_offset,
                    header.max_timestamp,
                )
            )

    def clear(self) -> None:
        self.producers.clear()

    # -- snapshots -------------------------------------------------------------------------

    def snapshot_offsets(self) -> list[int]:
        offsets = []
        for path in self.directory.iterdir():
            match = _SNAPSHOT_NAME.match(path.name)
            if match:
                offsets.append(int(match[1]))
        return sorted(offsets)

    def _path(self, offset: int) -> Path:
        return self.directory / f"{offset:020d}{SNAPSHOT_SUFFIX}"

    def take_snapshot(self, offset: int) -> None:
        entries = b"".join(
            _ENTRY.pack(
                pid,
                e.epoch,
                b.last_sequence,
                b.last_offset,
                b.last_offset - b.first_offset,
                b.timestamp,
                -1,
                -1,
            )
            for pid, e in sorted(self.producers.items())
            if e.batches
            for b in (e.batches[-1],)
        )
        count = len(entries) // _ENTRY.size
        body = count.to_bytes(4, "big", signed=True) + entries
        data = _VERSION_AND_CRC.pack(1, crc32c(body)) + body
        temporary = self._path(offset).with_suffix(".snapshot.tmp")
        temporary.write_bytes(data)
        os.replace(temporary, self._path(offset))

    def load_snapshot(self, offset: int) -> bool:
        """Replace the state with the snapshot at ``offset``; False (and the file
        removed) when it is damaged."""
        path = self._path(offset)
        data = path.read_bytes()
        try:
            version, crc = _VERSION_AND_CRC.unpack_from(data, 0)
            body = data[_VERSION_AND_CRC.size :]
            if version != 1 or crc32c(body) != crc:
                raise ValueError("bad version or CRC")
            (count,) = struct.unpack_from(">i", body, 0)
            if 4 + count * _ENTRY.size != len(body):
                raise ValueError("wrong length")
        except (struct.error, ValueError) as error:
            logger.warning("ignoring damaged producer snapshot %s: %s", path, error)
            path.unlink()
            return False
        self.producers.clear()
        for fields in _ENTRY.iter_unpack(body[4:]):
            pid, epoch, last_seq, last_offset, delta, timestamp, _, _ = fields
            first_seq = (last_seq - delta) % (_MAX_SEQUENCE + 1)
            entry = ProducerEntry(epoch)
            entry.batches.append(
                BatchMetadata(first_seq, last_seq, last_offset - delta, last_offset, timestamp)
            )
            self.producers[pid] = entry
        return True

    def load(self, upto: int, replay) -> int:
        """Load the newest intact snapshot at or below ``upto``, delete any above it,
        then ``replay(from_offset)`` must yield the headers of the batches after it.
        Returns the offset replay started from."""
        for offset in reversed(self.snapshot_offsets()):
            if offset > upto:
                self._path(offset).unlink()
        start = 0
        self.producers.clear()
        for offset in reversed(self.snapshot_offsets()):
            if self.load_snapshot(offset):
                start = offset
                break
        self.update(h for h in replay(start) if h.base_offset >= start)
        return start

    def delete_snapshots_below(self, offset: int) -> None:
        """Drop snapshots older than ``offset``, but keep the newest one."""
        offsets = self.snapshot_offsets()
        for old in offsets[:-1]:
            if old < offset:
                self._path(old).unlink(missing_ok=True)
