"""Maintenance windows: when the operator may start work that disturbs a Cluster (a
CA renewal, whose steps roll the pods), as a list of cron expressions in UTC
(``spec.certificates.maintenanceWindows``). Pure: no clock of its own.

An expression has cron's five fields, separated by blanks::

    minute (0-59)  hour (0-23)  day-of-month (1-31)  month (1-12)  day-of-week (0-7)

Each field is ``*``, a number, a range ``a-b``, a step ``*/n`` or ``a-b/n``, or a list of
those separated by commas (``0-5,22-23``). Day-of-week 0 and 7 are both Sunday. As in
cron, when both day-of-month and day-of-week are restricted (neither starts with
``*``), a day matches when either does (``0 2 1 * 1``: the 1st, and every Monday).
Names (``MON``, ``JAN``), ``?``, ``L``, ``W`` and ``#`` are not taken.

*Inside a window* means: the current minute, in UTC, matches one of the expressions.
That is Strimzi's meaning of its ``maintenanceTimeWindows`` (a reconciliation may start
a disturbing step when its time satisfies one of them), though Strimzi's expressions
are Quartz's, with a seconds field: ``0 0-59 2-3 * * ?`` there is ``* 2-3 * * *`` here.
A window is therefore as long as the minutes its expression matches; ``* 2-3 * * *``
is two hours each night.
"""

from __future__ import annotations

import datetime
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["CronExpression", "inside_window", "parse_cron"]

# (name, lowest, highest) of each field, in order
_FIELDS = (
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day-of-month", 1, 31),
    ("month", 1, 12),
    ("day-of-week", 0, 7),
)


@dataclass(frozen=True)
class CronExpression:
    """A parsed expression: the values each field matches (day-of-week 7 counted as 0),
    and whether day-of-month and day-of-week are restricted (cron's either-day rule)."""

    text: str
    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 Sunday ... 6 Saturday
    days_restricted: bool
    weekdays_restricted: bool

    def matches(self, moment: datetime.datetime) -> bool:
        """Whether the minute of ``moment`` (an aware datetime, taken in UTC) matches."""
        if moment.tzinfo is None:
            raise ValueError(f"moment must be an aware datetime, not {moment!r}")
        utc = moment.astimezone(datetime.UTC)
        if utc.minute not in self.minutes or utc.hour not in self.hours:
            return False
        if utc.month not in self.months:
            return False
        day = utc.day in self.days
        weekday = utc.isoweekday() % 7 in self.weekdays
        if self.days_restricted and self.weekdays_restricted:
            return day or weekday
        return day and weekday


def _number(text: str, name: str, low: int, high: int) -> int:
    if not text.isdigit():
        raise ValueError(f"{name} {text!r} is not a number")
    value = int(text)
    if not low <= value <= high:
        raise ValueError(f"{name} {value} is out of {low}-{high}")
    return value


def _term(term: str, name: str, low: int, high: int) -> set[int]:
    """The values of one comma-separated term of a field."""
    span, _, step_text = term.partition("/")
    step = _number(step_text, f"{name} step", 1, high - low + 1) if step_text else 1
    if span == "*":
        first, last = low, high
    elif "-" in span:
        start, _, end = span.partition("-")
        first, last = _number(start, name, low, high), _number(end, name, low, high)
        if first > last:
            raise ValueError(f"{name} range {span!r} runs backwards")
    elif step_text:
        raise ValueError(f"{name} {term!r}: a step goes with * or a range a-b")
    else:
        first = last = _number(span, name, low, high)
    return set(range(first, last + 1, step))


def _field(text: str, name: str, low: int, high: int) -> frozenset[int]:
    values: set[int] = set()
    for term in text.split(","):
        if not term:
            raise ValueError(f"{name} {text!r} has an empty term")
        values |= _term(term, name, low, high)
    return frozenset(values)


def parse_cron(text: str) -> CronExpression:
    """The expression ``text``; ValueError naming the field at fault."""
    fields = text.split()
    if len(fields) != len(_FIELDS):
        raise ValueError(
            f"{text!r} has {len(fields)} fields, not 5 (minute hour day-of-month month "
            "day-of-week)"
        )
    parsed = [
        _field(f, name, low, high) for f, (name, low, high) in zip(fields, _FIELDS, strict=True)
    ]
    minutes, hours, days, months, weekdays = parsed
    return CronExpression(
        text=text,
        minutes=minutes,
        hours=hours,
        days=days,
        months=months,
        weekdays=frozenset(day % 7 for day in weekdays),
        days_restricted=not fields[2].startswith("*"),
        weekdays_restricted=not fields[4].startswith("*"),
    )


def inside_window(windows: Sequence[CronExpression], now: datetime.datetime) -> bool:
    """Whether ``now`` (aware) is inside one of ``windows``: False when there is none
    (whether no window means "always" is the caller's to say)."""
    return any(window.matches(now) for window in windows)
