"""Which partition each cleaner thread works on, and the cleaner checkpoints (seed 001).

``LogCleanerManager`` keeps one cleaning state per partition (see :mod:`.states`) and
changes it only through the transition table, under one lock, so cleaner threads,
truncation and partition removal never work on the same log at once. It picks the
filthiest compacted log for a thread, and owns the ``cleaner-offset-checkpoint`` file
of every log directory: ``topic partition first-dirty-offset`` per compacted log.

Choosing a log (``grab_filthiest_compacted_log``, seed 001's list): ``compact`` in its
``cleanup.policy``; no cleaning state (not in progress, aborted or paused); not marked
uncleanable by an earlier failure; and either dirty enough - cleanable bytes / (clean +
cleanable bytes) ≥ ``min.cleanable.dirty.ratio`` - or holding a dirty record older than
``max.compaction.lag.ms``. Among those, the one with the highest dirty ratio wins.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tidelog.storage.checkpoints import (
    CLEANER_OFFSET_CHECKPOINT,
    CheckpointError,
    read_offset_checkpoint,
    write_offset_checkpoint,
)
from tidelog.storage.cleaner.errors import LogCleaningAbortedError
from tidelog.storage.cleaner.log_to_clean import (
    LogToClean,
    TopicPartition,
    cleanable_offsets,
    max_compaction_delay_ms,
)
from tidelog.storage.cleaner.states import (
    CleaningEvent,
    CleaningState,
    LogCleaningAborted,
    LogCleaningInProgress,
    LogCleaningPaused,
    transition,
)

if TYPE_CHECKING:
    from tidelog.storage.log import Log

__all__ = ["LogCleanerManager", "LogsProvider"]

logger = logging.getLogger(__name__)

LogsProvider = Mapping[TopicPartition, "Log"] | Callable[[], Mapping[TopicPartition, "Log"]]


def _normalize(directory) -> Path:
    return Path(os.path.abspath(directory))


class LogCleanerManager:
    """Cleaning states, log selection and checkpoints for the logs of one broker.

    ``logs`` is the broker's live table of partitions (a mapping, or a function
    returning one), as Kafka's ``LogCleanerManager(logDirs, logs)``.
    """

    def __init__(self, log_dirs: Sequence[Path], logs: LogsProvider):
        self._log_dirs = [_normalize(directory) for directory in log_dirs]
        self._logs = logs
        self._lock = threading.RLock()
        self._paused = threading.Condition(self._lock)
        self._states: dict[TopicPartition, CleaningState] = {}
        self._uncleanable: dict[Path, set[TopicPartition]] = {}

    # -- inputs ----------------------------------------------------------------------------

    def logs(self) -> dict[TopicPartition, Log]:
        """A snapshot of the current logs."""
        source = self._logs() if callable(self._logs) else self._logs
        return dict(source)

    @property
    def log_dirs(self) -> list[Path]:
        return list(self._log_dirs)

    @staticmethod
    def checkpoint_path(log_dir: Path) -> Path:
        return Path(log_dir) / CLEANER_OFFSET_CHECKPOINT

    # -- states ----------------------------------------------------------------------------

    def _apply(self, tp: TopicPartition, event: CleaningEvent) -> CleaningState:
        state = transition(self._states.get(tp), event, tp)
        if state is None:
            self._states.pop(tp, None)
        else:
            self._states[tp] = state
        if isinstance(state, LogCleaningPaused):
            self._paused.notify_all()
        return state

    def cleaning_state(self, tp: TopicPartition) -> CleaningState:
        with self._lock:
            return self._states.get(tp)

    def is_cleaning_in_state_paused(self, tp: TopicPartition) -> bool:
        with self._lock:
            return isinstance(self._states.get(tp), LogCleaningPaused)

    def check_cleaning_aborted(self, tp: TopicPartition) -> None:
        """Raise LogCleaningAbortedError when ``tp``'s cleaning was aborted. Called by the
        cleaner between batches, so it reads the table without the lock (one dict
        lookup, atomic in CPython): an abort is seen at the next batch at the latest."""
        if isinstance(self._states.get(tp), LogCleaningAborted):
            raise LogCleaningAbortedError(f"cleaning of {tp[0]}-{tp[1]} was aborted")

    # -- choosing work ---------------------------------------------------------------------

    def grab_filthiest_compacted_log(self, now_ms: int) -> LogToClean | None:
        """The compacted log most in need of cleaning, now marked in progress; or None."""
        with self._lock:
            checkpoints = self.all_cleaner_checkpoints()
            candidates = []
            for tp, log in self.logs().items():
                if not log.config.compact or tp in self._states:
                    continue
                if self.is_uncleanable_partition(log, tp):
                    continue
                try:
                    to_clean = self._log_to_clean(tp, log, checkpoints.get(tp), now_ms)
                except Exception:  # a log going away under us must not stop the others
                    logger.exception("cannot tell how dirty %s is; skipping it", log)
                    continue
                if to_clean.total_bytes <= 0 or to_clean.cleanable_bytes <= 0:
                    continue
                ratio_due = to_clean.cleanable_ratio >= log.config.min_cleanable_dirty_ratio
                if ratio_due or to_clean.needs_compaction_now:
                    candidates.append(to_clean)
            if not candidates:
                return None
            filthiest = max(candidates, key=lambda candidate: candidate.cleanable_ratio)
            self._apply(filthiest.topic_partition, CleaningEvent.START)
            return filthiest

    def _log_to_clean(
        self, tp: TopicPartition, log: Log, checkpoint: int | None, now_ms: int
    ) -> LogToClean:
        offsets = cleanable_offsets(log, checkpoint, now_ms)
        if offsets.force_update_checkpoint:
            self.update_checkpoints(log.directory.parent, update=(tp, offsets.first_dirty_offset))
        delay = max_compaction_delay_ms(log, offsets.first_dirty_offset, now_ms)
        return LogToClean(
            tp, log, offsets.first_dirty_offset, offsets.first_uncleanable_offset, delay > 0
        )

    def deletable_logs(self) -> list[tuple[TopicPartition, Log]]:
        """Compacted logs free for the deletion pass (retention and the log start offset,
        run by the cleaner thread after each cleaning), now marked in progress."""
        with self._lock:
            found = [
                (tp, log)
                for tp, log in self.logs().items()
                if tp not in self._states
                and log.config.compact
                and not self.is_uncleanable_partition(log, tp)
            ]
            for tp, _ in found:
                self._apply(tp, CleaningEvent.START)
            return found

    def done_deleting(self, tps: Iterable[TopicPartition]) -> None:
        with self._lock:
            for tp in tps:
                self._apply(tp, CleaningEvent.DONE)

    def pause_cleaning_for_non_compacted_partitions(self) -> list[tuple[TopicPartition, Log]]:
        """Pause every non-compacted log that is not busy (the retention thread works on
        them meanwhile); resume them with :meth:`resume_cleaning`."""
        with self._lock:
            found = [
                (tp, log)
                for tp, log in self.logs().items()
                if not log.config.compact and tp not in self._states
            ]
            for tp, _ in found:
                self._apply(tp, CleaningEvent.ABORT_AND_PAUSE)
            return found

    # -- finishing, aborting, pausing ------------------------------------------------------

    def done_cleaning(self, tp: TopicPartition, log_dir: Path, end_offset: int) -> None:
        """A cleaning ended. In progress: checkpoint ``end_offset`` and free the log.
        Aborted: acknowledge the abort (the log becomes paused once)."""
        with self._lock:
            state = self._states.get(tp)
            transition(state, CleaningEvent.DONE, tp)  # refuse before writing anything
            if isinstance(state, LogCleaningInProgress):
                self.update_checkpoints(log_dir, update=(tp, end_offset))
            self._apply(tp, CleaningEvent.DONE)

    def abort_and_pause_cleaning(self, tp: TopicPartition, timeout: float | None = None) -> None:
        """Stop any cleaning of ``tp`` and keep the cleaner away until a matching
        :meth:`resume_cleaning`. Waits until a cleaning in progress has acknowledged the
        abort (its thread stops at the next batch); TimeoutError after ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            self._apply(tp, CleaningEvent.ABORT_AND_PAUSE)
            while not isinstance(self._states.get(tp), LogCleaningPaused):
                remaining = 0.1 if deadline is None else deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"the cleaning of {tp[0]}-{tp[1]} did not stop in time")
                self._paused.wait(min(remaining, 0.1))

    def resume_cleaning(self, tps: Iterable[TopicPartition]) -> None:
        """Undo one pause of each partition."""
        with self._lock:
            for tp in tps:
                self._apply(tp, CleaningEvent.RESUME)

    def abort_cleaning(self, tp: TopicPartition, timeout: float | None = None) -> None:
        """Stop any cleaning of ``tp`` now without leaving it paused (the partition is
        going away, or its log is replaced)."""
        with self._lock:
            self.abort_and_pause_cleaning(tp, timeout)
            self.resume_cleaning([tp])

    # -- uncleanable partitions ------------------------------------------------------------

    def mark_partition_uncleanable(self, log_dir: Path, tp: TopicPartition) -> None:
        """Keep a partition whose cleaning failed away from the cleaner."""
        with self._lock:
            self._uncleanable.setdefault(_normalize(log_dir), set()).add(tp)

    def is_uncleanable_partition(self, log: Log, tp: TopicPartition) -> bool:
        with self._lock:
            return tp in self._uncleanable.get(_normalize(log.directory.parent), ())

    def uncleanable_partitions(self, log_dir: Path) -> set[TopicPartition]:
        with self._lock:
            return set(self._uncleanable.get(_normalize(log_dir), ()))

    # -- checkpoints -----------------------------------------------------------------------

    def all_cleaner_checkpoints(self) -> dict[TopicPartition, int]:
        """Every first dirty offset checkpointed in the log directories."""
        found: dict[TopicPartition, int] = {}
        with self._lock:
            for directory in self._log_dirs:
                try:
                    found.update(read_offset_checkpoint(self.checkpoint_path(directory)))
                except (CheckpointError, OSError) as error:
                    logger.error("cannot read the cleaner checkpoint of %s: %s", directory, error)
        return found

    def update_checkpoints(
        self,
        log_dir: Path,
        update: tuple[TopicPartition, int] | None = None,
        remove: TopicPartition | None = None,
    ) -> None:
        """Rewrite ``log_dir``'s checkpoint: entries of logs that are gone dropped,
        ``update`` added or replaced, ``remove`` removed."""
        directory = _normalize(log_dir)
        with self._lock:
            if directory not in self._log_dirs:
                logger.warning("not checkpointing %s: not a known log directory", directory)
                return
            path = self.checkpoint_path(directory)
            try:
                current = read_offset_checkpoint(path)
            except CheckpointError as error:
                logger.error("rewriting unreadable cleaner checkpoint %s: %s", path, error)
                current = {}
            existing = self.logs()
            offsets = {tp: offset for tp, offset in current.items() if tp in existing}
            if update is not None:
                offsets[update[0]] = update[1]
            if remove is not None:
                offsets.pop(remove, None)
            write_offset_checkpoint(path, offsets)

    def maybe_truncate_checkpoint(self, log_dir: Path, tp: TopicPartition, offset: int) -> None:
        """After a truncation to ``offset``: a checkpoint past it moves back to it."""
        with self._lock:
            path = self.checkpoint_path(_normalize(log_dir))
            current = read_offset_checkpoint(path)
            if current.get(tp, 0) > offset:
                self.update_checkpoints(log_dir, update=(tp, offset))

    def alter_checkpoint_dir(self, tp: TopicPartition, source_dir: Path, dest_dir: Path) -> None:
        """Move ``tp``'s checkpoint with its log to another directory (JBOD)."""
        with self._lock:
            offset = read_offset_checkpoint(self.checkpoint_path(_normalize(source_dir))).get(tp)
            if offset is None:
                return
            self.update_checkpoints(source_dir, remove=tp)
            self.update_checkpoints(dest_dir, update=(tp, offset))

    def handle_log_dir_failure(self, log_dir: Path) -> None:
        """Forget a failed directory: no more checkpoints there, no uncleanable marks."""
        directory = _normalize(log_dir)
        with self._lock:
            if directory in self._log_dirs:
                self._log_dirs.remove(directory)
            self._uncleanable.pop(directory, None)

    def add_log_dir(self, log_dir: Path) -> None:
        with self._lock:
            directory = _normalize(log_dir)
            if directory not in self._log_dirs:
                self._log_dirs.append(directory)
