"""The cleaning state of one partition and every change it may go through (seed 001).

States (Kafka's ``LogCleanerManager``)::

    None                    not being cleaned (no entry at all)
    LogCleaningInProgress   a cleaner thread (or the deletion pass) holds the partition
    LogCleaningAborted      abort requested while in progress; the thread must notice
                            and acknowledge, which turns it into LogCleaningPaused(1)
    LogCleaningPaused(n)    n reasons to keep the cleaner away; re-entrant

Events and the transition table, which is the only place where states change:

=========================  =====================  =======================================
state                      event                  next state
=========================  =====================  =======================================
None                       START                  LogCleaningInProgress
None                       ABORT_AND_PAUSE        LogCleaningPaused(1)
LogCleaningInProgress      DONE                   None
LogCleaningInProgress      ABORT_AND_PAUSE        LogCleaningAborted
LogCleaningAborted         DONE                   LogCleaningPaused(1)
LogCleaningPaused(n)       ABORT_AND_PAUSE        LogCleaningPaused(n + 1)
LogCleaningPaused(n)       RESUME                 LogCleaningPaused(n - 1), None when n = 1
=========================  =====================  =======================================

Anything else raises :class:`IllegalCleaningStateError`. The table holds no lock: its
owner (``LogCleanerManager``) applies it under its own.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.storage.cleaner.errors import IllegalCleaningStateError

__all__ = [
    "IN_PROGRESS",
    "LOG_CLEANING_ABORTED",
    "TRANSITIONS",
    "CleaningEvent",
    "CleaningState",
    "LogCleaningAborted",
    "LogCleaningInProgress",
    "LogCleaningPaused",
    "state_name",
    "transition",
]


class CleaningEvent(enum.Enum):
    START = "start"  # grabbed for cleaning or for the deletion pass
    DONE = "done"  # the cleaning (or deletion) finished, however it ended
    ABORT_AND_PAUSE = "abort_and_pause"  # truncation, disk failure, partition removal
    RESUME = "resume"  # one reason to pause went away


@dataclass(frozen=True)
class LogCleaningInProgress:
    def __str__(self) -> str:
        return "LogCleaningInProgress"


@dataclass(frozen=True)
class LogCleaningAborted:
    def __str__(self) -> str:
        return "LogCleaningAborted"


@dataclass(frozen=True)
class LogCleaningPaused:
    count: int

    def __post_init__(self) -> None:
        if self.count < 1:
            raise ValueError(f"a paused state counts at least one pause, not {self.count}")

    def __str__(self) -> str:
        return f"LogCleaningPaused({self.count})"


IN_PROGRESS = LogCleaningInProgress()
LOG_CLEANING_ABORTED = LogCleaningAborted()

# None stands for "no state" (the partition is absent from the manager's table).
CleaningState = LogCleaningInProgress | LogCleaningAborted | LogCleaningPaused | None


def state_name(state: CleaningState) -> str:
    """``None``, ``LogCleaningInProgress``, ``LogCleaningAborted`` or ``LogCleaningPaused``."""
    return "None" if state is None else type(state).__name__


def _resume(state: LogCleaningPaused) -> LogCleaningPaused | None:
    return LogCleaningPaused(state.count - 1) if state.count > 1 else None


TRANSITIONS: dict[tuple[str, CleaningEvent], Callable[..., CleaningState]] = {
    ("None", CleaningEvent.START): lambda state: IN_PROGRESS,
    ("None", CleaningEvent.ABORT_AND_PAUSE): lambda state: LogCleaningPaused(1),
    ("LogCleaningInProgress", CleaningEvent.DONE): lambda state: None,
    ("LogCleaningInProgress", CleaningEvent.ABORT_AND_PAUSE): lambda state: LOG_CLEANING_ABORTED,
    ("LogCleaningAborted", CleaningEvent.DONE): lambda state: LogCleaningPaused(1),
    ("LogCleaningPaused", CleaningEvent.ABORT_AND_PAUSE): (
        lambda state: LogCleaningPaused(state.count + 1)
    ),
    ("LogCleaningPaused", CleaningEvent.RESUME): _resume,
}


def transition(
    state: CleaningState, event: CleaningEvent, partition: object = None
) -> CleaningState:
    """The state after ``event``; raises IllegalCleaningStateError if not allowed."""
    step = TRANSITIONS.get((state_name(state), event))
    if step is None:
        what = f" of {partition}" if partition is not None else ""
        raise IllegalCleaningStateError(
            f"cleaning{what} cannot take event {event.value!r} in state {state or 'None'}"
        )
    return step(state)
