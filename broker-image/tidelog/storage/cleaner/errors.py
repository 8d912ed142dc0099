"""Errors of the log cleaner."""

from __future__ import annotations

__all__ = [
    "CleanerError",
    "CleanerShutdownError",
    "IllegalCleaningStateError",
    "LogCleaningAbortedError",
    "OffsetMapFullError",
]


class CleanerError(Exception):
    """A cleaning that cannot go on (e.g. one segment has more keys than the offset map)."""


class OffsetMapFullError(CleanerError):
    """A new key was put into an offset map already holding its maximum entries."""


class LogCleaningAbortedError(CleanerError):
    """The cleaning of a partition was aborted (truncation, disk failure, deletion)."""


class CleanerShutdownError(LogCleaningAbortedError):
    """The cleaner thread is shutting down: the current cleaning stops where it is."""


class IllegalCleaningStateError(CleanerError):
    """A cleaning state change that the state machine does not allow."""
