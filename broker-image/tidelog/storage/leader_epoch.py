"""The leader epoch cache of one partition and its ``leader-epoch-checkpoint`` file.

Each leader of a partition has an epoch, bumped by every leader change. The cache holds
one entry per epoch that wrote to the log: the epoch and the offset of its first record
(seed 003, 四.5). Entries ascend in both epoch and start offset. With them a replica
finds where its log diverged from the leader's: the end offset of an epoch is the start
offset of the next higher one (OffsetForLeaderEpoch), so a restarted follower truncates
by epoch instead of by its possibly stale high watermark (seed 004).

File format (Kafka's ``LeaderEpochCheckpointFile``), UTF-8 text, ``\\n`` line ends::

    0                       version
    2                       number of entries
    0 0                     epoch, start offset (decimal, one space)
    3 1200

An empty file means no entries (Kafka creates the file empty before its first write).
Writes go to ``leader-epoch-checkpoint.tmp``, which is fsynced and renamed over the file,
and the directory is fsynced: a crash leaves the old or the new content. Truncations
rewrite the file at once. A new epoch may stay in memory for a while (``assign``
without ``write``): the owning log writes it off the thread that appends, because two
fsyncs beside a disk busy with other writes can take hundreds of milliseconds, and the
log writes every entry it holds before its recovery point passes the entry's start
(``write_if_changed``). So the file always holds every epoch of the data below the
recovery point, and the epochs above it come back from their batches after an unclean
shutdown (below).

A file that cannot be parsed raises :class:`LeaderEpochCheckpointError`, a storage error:
the log does not load, and as in Kafka its whole log directory goes offline, the broker
serving on from its other directories. Deleting the file loses no data; the entries of
the segments past the recovery point come back from their batches after an unclean
shutdown, and new leader epochs are recorded as they come.

Thread safety: mutations are serialized by the owning log's lock. Readers take no lock:
the entries are an immutable tuple, replaced whole on every change. Writes of the file
take turns under a lock of their own, each writing the entries current at its turn: the
file never goes back to older entries than a finished write left. The log's deferred
writes hold that lock and not the log's, so appends go on meanwhile.
"""

from __future__ import annotations

import bisect
import logging
import threading
from pathlib import Path
from typing import NamedTuple

from tidelog.storage.checkpoints import (
    CheckpointError,
    read_checkpoint_entries,
    write_checkpoint_entries,
)
from tidelog.storage.errors import KafkaStorageError

__all__ = [
    "LEADER_EPOCH_CHECKPOINT",
    "UNDEFINED_EPOCH",
    "UNDEFINED_EPOCH_OFFSET",
    "EpochEntry",
    "LeaderEpochCache",
    "LeaderEpochCheckpointError",
    "read_leader_epoch_checkpoint",
    "write_leader_epoch_checkpoint",
]

logger = logging.getLogger(__name__)

LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
UNDEFINED_EPOCH = -1
UNDEFINED_EPOCH_OFFSET = -1


class EpochEntry(NamedTuple):
    epoch: int
    start_offset: int


class LeaderEpochCheckpointError(KafkaStorageError):
    """A ``leader-epoch-checkpoint`` that cannot be parsed; names the file and line."""


def write_leader_epoch_checkpoint(path: Path, entries: tuple[EpochEntry, ...]) -> None:
    write_checkpoint_entries(path, [f"{epoch} {start}" for epoch, start in entries])


def read_leader_epoch_checkpoint(path: Path) -> list[EpochEntry]:
    """The file's entries in file order; an absent or empty file has none."""
    try:
        fields = read_checkpoint_entries(path, 2)
    except CheckpointError as error:
        raise LeaderEpochCheckpointError(str(error)) from None
    entries = []
    for number, (epoch, start) in enumerate(fields, start=3):
        try:
            entry = EpochEntry(int(epoch), int(start))
        except ValueError:
            raise LeaderEpochCheckpointError(
                f"{path}: line {number} is not 'epoch startOffset': {epoch} {start}"
            ) from None
        if entry.epoch < 0 or entry.start_offset < 0:
            raise LeaderEpochCheckpointError(f"{path}: line {number} is negative: {entry}")
        entries.append(entry)
    return entries


class LeaderEpochCache:
    """(epoch, start offset) entries of one partition, ascending, checkpointed to
    ``<partition dir>/leader-epoch-checkpoint``."""

    def __init__(self, directory: Path):
        self.path = Path(directory) / LEADER_EPOCH_CHECKPOINT
        self._entries: tuple[EpochEntry, ...] = ()
        # Loaded through the assignment rules, as Kafka loads it: a file whose entries do
        # not ascend keeps the ones that the later entries leave standing.
        for entry in read_leader_epoch_checkpoint(self.path):
            self._assign(entry)
        self._write_lock = threading.Lock()
        self._written = self._entries  # what the last finished write left in the file

    @property
    def entries(self) -> tuple[EpochEntry, ...]:
        return self._entries

    @property
    def latest_epoch(self) -> int:
        """The newest epoch, or UNDEFINED_EPOCH (-1) when the cache is empty."""
        entries = self._entries
        return entries[-1].epoch if entries else UNDEFINED_EPOCH

    # -- changes ---------------------------------------------------------------------------

    def assign(self, epoch: int, start_offset: int, *, write: bool = True) -> bool:
        """Record that ``epoch`` wrote its first record at ``start_offset``; True (and the
        file rewritten) when the entries changed. Without ``write`` the change stays in
        memory until :meth:`write` or :meth:`write_if_changed` (the owning log's
        ``write_leader_epochs``).

        Nothing changes when ``epoch`` is the latest epoch and starts at or before
        ``start_offset`` - the case of every append but an epoch's first, kept to two
        comparisons. Otherwise the entry goes in, and every entry that would break the
        ascending order (an epoch at or above ``epoch``, or a start offset at or above
        ``start_offset``) goes out, as in Kafka: a lower start for the latest epoch
        corrects it, a lower epoch than the latest replaces the later ones.
        """
        entries = self._entries
        if entries and entries[-1].epoch == epoch and entries[-1].start_offset <= start_offset:
            return False
        if epoch < 0 or start_offset < 0:
            raise ValueError(f"invalid leader epoch entry ({epoch}, {start_offset})")
        self._assign(EpochEntry(epoch, start_offset))
        if write:
            self.write()
        return True

    def _assign(self, entry: EpochEntry) -> None:
        kept = list(self._entries)
        removed = []
        while kept and (
            kept[-1].epoch >= entry.epoch or kept[-1].start_offset >= entry.start_offset
        ):
            removed.append(kept.pop())
        if len(removed) > 1 or (removed and removed[0].start_offset != entry.start_offset):
            logger.warning(
                "%s: new entry %s removes %s, which would not ascend", self.path, entry, removed
            )
        self._entries = (*kept, entry)

    def truncate_from_end(self, end_offset: int) -> bool:
        """Drop the entries of epochs that start at or after ``end_offset`` (the log was
        truncated there); True when any went."""
        entries = self._entries
        if end_offset < 0 or not entries or entries[-1].start_offset < end_offset:
            return False
        keep = bisect.bisect_left(entries, end_offset, key=lambda entry: entry.start_offset)
        self._entries = entries[:keep]
        self.write()
        return True

    def truncate_from_start(self, start_offset: int) -> bool:
        """The log now starts at ``start_offset``: the entries starting at or below it
        collapse into one, the epoch in force there, starting at ``start_offset``."""
        entries = self._entries
        below = bisect.bisect_right(entries, start_offset, key=lambda entry: entry.start_offset)
        if below == 0 or (below == 1 and entries[0].start_offset == start_offset):
            return False
        self._entries = (EpochEntry(entries[below - 1].epoch, start_offset), *entries[below:])
        self.write()
        return True

    def clear(self) -> None:
        if self._entries:
            self._entries = ()
            self.write()

    def write(self) -> None:
        """Checkpoint the entries as they are when this write's turn comes (two fsyncs:
        the file, its directory)."""
        with self._write_lock:
            entries = self._entries
            write_leader_epoch_checkpoint(self.path, entries)
            self._written = entries

    def write_if_changed(self) -> None:
        """Checkpoint the entries unless a finished write already left them in the file."""
        if self._entries is not self._written:
            self.write()

    # -- lookups -----------------------------------------------------------------------------

    def end_offset_for(self, requested_epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) for ``requested_epoch``, as Kafka answers OffsetForLeaderEpoch:

        * the latest epoch ends at ``log_end_offset`` (its leader is still writing);
        * a known earlier epoch ends where the next higher epoch starts;
        * an unknown epoch between two known ones: the largest known epoch below it,
          ending where the next higher one starts (where the logs agree up to);
        * an epoch below every entry: itself, ending at the first entry's start (the
          older data is gone; a follower truncates to there);
        * UNDEFINED (-1, -1) for -1, for an epoch above every entry, or an empty cache.
        """
        entries = self._entries
        if requested_epoch == UNDEFINED_EPOCH or not entries:
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if entries[-1].epoch == requested_epoch:
            return requested_epoch, log_end_offset
        higher = bisect.bisect_right(entries, requested_epoch, key=lambda entry: entry.epoch)
        if higher == len(entries):
            return UNDEFINED_EPOCH, UNDEFINED_EPOCH_OFFSET
        if higher == 0:
            return requested_epoch, entries[0].start_offset
        return entries[higher - 1].epoch, entries[higher].start_offset

    def __repr__(self) -> str:
        return f"LeaderEpochCache({self.path.parent.name}, {list(self._entries)})"
