"""The broker's log cleaner: ``log.cleaner.threads`` daemon threads (seed 001).

Each thread loops: grab the filthiest compacted log from the manager, clean it with its
own offset map (``log.cleaner.dedupe.buffer.size`` / threads bytes), report it done
(which checkpoints the new first dirty offset), then run the deletion pass (retention
and the log start offset) over the compacted logs; when there was nothing to clean it
sleeps ``log.cleaner.backoff.ms``. A cleaning checks between batches whether it was
aborted or the cleaner is shutting down, and then stops, deleting its ``.cleaned``
files. A cleaning that fails otherwise marks its partition uncleanable, so one bad log
does not stop the others.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from tidelog.storage.cleaner.cleaner import Cleaner, CleanerStats
from tidelog.storage.cleaner.cleaner_manager import LogCleanerManager, LogsProvider
from tidelog.storage.cleaner.config import CleanerConfig
from tidelog.storage.cleaner.errors import CleanerShutdownError, LogCleaningAbortedError
from tidelog.storage.cleaner.log_to_clean import LogToClean, TopicPartition
from tidelog.storage.cleaner.offset_map import OffsetMap

if TYPE_CHECKING:
    from tidelog.storage.log import Log

__all__ = ["CleanerThread", "LogCleaner"]

logger = logging.getLogger(__name__)


class CleanerThread(threading.Thread):
    def __init__(self, cleaner: LogCleaner, index: int):
        super().__init__(name=f"kafka-log-cleaner-thread-{index}", daemon=True)
        self._owner = cleaner
        config = cleaner.config
        self.cleaner = Cleaner(
            OffsetMap(config.dedupe_buffer_per_thread, config.log_cleaner_io_buffer_load_factor),
            check_done=self._check_done,
            io_buffer_size=config.log_cleaner_io_buffer_size,
        )
        self.last_stats: CleanerStats | None = None

    def _check_done(self, tp: TopicPartition) -> None:
        if self._owner._stopping.is_set():
            raise CleanerShutdownError("the log cleaner is shutting down")
        self._owner.manager.check_cleaning_aborted(tp)

    def run(self) -> None:
        owner = self._owner
        backoff = owner.config.log_cleaner_backoff_ms / 1000
        while not owner._stopping.is_set():
            try:
                cleaned = self.try_clean_filthiest_log()
            except CleanerShutdownError:
                break
            except Exception:  # never let one failure kill the thread
                logger.exception("%s: unexpected error", self.name)
                cleaned = False
            if not cleaned:
                owner._wakeup.wait(backoff)
                owner._wakeup.clear()

    def try_clean_filthiest_log(self) -> bool:
        """One round: clean the filthiest log (if any) and run the deletion pass.
        Returns whether a log was cleaned."""
        owner = self._owner
        manager = owner.manager
        to_clean = manager.grab_filthiest_compacted_log(owner.now_ms())
        cleaned = to_clean is not None
        if to_clean is not None:
            self._clean_log(to_clean)
        deletable = manager.deletable_logs()
        try:
            for tp, log in deletable:
                try:
                    log.delete_old_segments()
                except Exception:
                    logger.exception("deleting old segments of %s failed", log)
                    manager.mark_partition_uncleanable(log.directory.parent, tp)
        finally:
            manager.done_deleting(tp for tp, _ in deletable)
        return cleaned

    def _clean_log(self, to_clean: LogToClean) -> None:
        manager = self._owner.manager
        tp = to_clean.topic_partition
        log = to_clean.log
        end_offset = to_clean.first_dirty_offset
        log_start_offset = log.log_start_offset
        try:
            end_offset, self.last_stats = self.cleaner.clean(to_clean)
        except LogCleaningAbortedError as error:
            logger.info("cleaning of %s stopped: %s", log, error)
            if isinstance(error, CleanerShutdownError):
                raise
        except Exception:
            if log.log_start_offset > log_start_offset:
                # Retention or DeleteRecords removed segments under the cleaning.
                logger.info("segments of %s were deleted under its cleaning; retrying", log)
            else:
                logger.exception("cleaning %s failed; marking it uncleanable", log)
                manager.mark_partition_uncleanable(log.directory.parent, tp)
        finally:
            manager.done_cleaning(tp, log.directory.parent, end_offset)


class LogCleaner:
    """The cleaner threads of one broker and the manager they share."""

    def __init__(
        self,
        config: CleanerConfig,
        log_dirs: Sequence[Path],
        logs: LogsProvider,
        *,
        clock: Callable[[], float] = time.time,
    ):
        self.config = config
        self.clock = clock
        self.manager = LogCleanerManager(log_dirs, logs)
        self._stopping = threading.Event()
        self._wakeup = threading.Event()
        self.threads: list[CleanerThread] = []

    def now_ms(self) -> int:
        return int(self.clock() * 1000)

    # -- lifecycle -------------------------------------------------------------------------

    def start(self) -> None:
        """Start the cleaner threads (none when ``log.cleaner.enable`` is false)."""
        if not self.config.log_cleaner_enable or self.threads:
            return
        self._stopping.clear()
        self.threads = [
            CleanerThread(self, index) for index in range(self.config.log_cleaner_threads)
        ]
        logger.info(
            "starting %d log cleaner threads; record passes: %s",
            len(self.threads),
            self.threads[0].cleaner.passes.name,
        )
        for thread in self.threads:
            thread.start()

    def shutdown(self, timeout: float | None = None) -> None:
        """Stop every thread (a cleaning in progress stops at its next batch) and join."""
        self._stopping.set()
        self._wakeup.set()
        for thread in self.threads:
            thread.join(timeout)
        self.threads = []

    def wakeup(self) -> None:
        """End the threads' back-off now (they look for work at once)."""
        self._wakeup.set()

    @property
    def is_running(self) -> bool:
        return any(thread.is_alive() for thread in self.threads)

    # -- control, delegated to the manager -------------------------------------------------

    def abort_cleaning(self, tp: TopicPartition) -> None:
        self.manager.abort_cleaning(tp)

    def abort_and_pause_cleaning(self, tp: TopicPartition) -> None:
        self.manager.abort_and_pause_cleaning(tp)

    def resume_cleaning(self, tps: Iterable[TopicPartition]) -> None:
        self.manager.resume_cleaning(tps)

    def update_checkpoints(
        self,
        log_dir: Path,
        update: tuple[TopicPartition, int] | None = None,
        remove: TopicPartition | None = None,
    ) -> None:
        self.manager.update_checkpoints(log_dir, update, remove)

    def maybe_truncate_checkpoint(self, log_dir: Path, tp: TopicPartition, offset: int) -> None:
        self.manager.maybe_truncate_checkpoint(log_dir, tp, offset)

    def alter_checkpoint_dir(self, tp: TopicPartition, source_dir: Path, dest_dir: Path) -> None:
        self.manager.alter_checkpoint_dir(tp, source_dir, dest_dir)

    def handle_log_dir_failure(self, log_dir: Path) -> None:
        self.manager.handle_log_dir_failure(log_dir)

    # -- tests -----------------------------------------------------------------------------

    def wait_until_cleaned(self, log: Log, offset: int, timeout: float = 10.0) -> bool:
        """Wait until ``log``'s cleaner checkpoint reaches ``offset``; False on timeout."""
        tp = (log.topic, log.partition)
        deadline = time.monotonic() + timeout
        while True:
            if self.manager.all_cleaner_checkpoints().get(tp, -1) >= offset:
                return True
            if time.monotonic() >= deadline:
                return False
            self._wakeup.set()
            time.sleep(0.01)
