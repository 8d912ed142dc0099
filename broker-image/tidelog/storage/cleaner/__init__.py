"""Log compaction: the cleaner of compacted topics (seed 000 "清理", seed 001).

Modules, one job each:

* :mod:`.offset_map` - the fixed-size key-hash → offset table (24 bytes a slot).
* :mod:`.log_to_clean` - the dirty section of a log and its dirty ratio.
* :mod:`.batch_filter` - the fields compaction reads from records; rebuilding a batch.
* :mod:`.record_passes` - the per-record work of one batch: compiled, or pure Python.
* :mod:`.cleaner` - one cleaning of one log: map, group, filter, swap.
* :mod:`.states` - the per-partition cleaning states and their transition table.
* :mod:`.cleaner_manager` - states under one lock, log selection, checkpoints.
* :mod:`.log_cleaner` - the cleaner threads.
* :mod:`.config` - the broker's ``log.cleaner.*`` settings.
* :mod:`.errors` - the errors.
"""

from . import record_passes
from .cleaner import (
    DEFAULT_IO_BUFFER_SIZE,
    Cleaner,
    CleanerStats,
    clean_log,
    group_segments_by_size,
)
from .cleaner_manager import LogCleanerManager
from .config import CleanerConfig
from .errors import (
    CleanerError,
    CleanerShutdownError,
    IllegalCleaningStateError,
    LogCleaningAbortedError,
    OffsetMapFullError,
)
from .log_cleaner import CleanerThread, LogCleaner
from .log_to_clean import (
    CleanableOffsets,
    LogToClean,
    cleanable_offsets,
    max_compaction_delay_ms,
    segments_between,
)
from .offset_map import OffsetMap
from .states import (
    CleaningEvent,
    CleaningState,
    LogCleaningAborted,
    LogCleaningInProgress,
    LogCleaningPaused,
    transition,
)

__all__ = [
    "DEFAULT_IO_BUFFER_SIZE",
    "CleanableOffsets",
    "Cleaner",
    "CleanerConfig",
    "CleanerError",
    "CleanerShutdownError",
    "CleanerStats",
    "CleanerThread",
    "CleaningEvent",
    "CleaningState",
    "IllegalCleaningStateError",
    "LogCleaner",
    "LogCleanerManager",
    "LogCleaningAborted",
    "LogCleaningAbortedError",
    "LogCleaningInProgress",
    "LogCleaningPaused",
    "LogToClean",
    "OffsetMap",
    "OffsetMapFullError",
    "clean_log",
    "cleanable_offsets",
    "group_segments_by_size",
    "max_compaction_delay_ms",
    "record_passes",
    "segments_between",
    "transition",
]
