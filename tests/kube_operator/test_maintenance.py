"""Maintenance windows as cron expressions in UTC: which minutes each expression
matches, cron's either-day rule, Sunday as 0 and 7, and the field each malformed
expression is refused for; the spec parser names the window at fault."""

from __future__ import annotations

import datetime

import pytest

from tidelog_operator.maintenance import inside_window, parse_cron
from tidelog_operator.spec import parse_cluster

UTC = datetime.UTC


def at(text: str) -> datetime.datetime:
    """``2026-03-02 03:30``-style text as a UTC moment (2026-03-02 is a Monday)."""
    return datetime.datetime.fromisoformat(text).replace(tzinfo=UTC)


@pytest.mark.parametrize(
    ("expression", "moment", "inside"),
    [
        ("* * * * *", "2026-03-02 03:30", True),
        ("30 3 * * *", "2026-03-02 03:30", True),
        ("30 3 * * *", "2026-03-02 03:31", False),
        ("* 2-3 * * *", "2026-03-02 03:59", True),
        ("* 2-3 * * *", "2026-03-02 04:00", False),
        ("* 2-3 * * *", "2026-03-02 01:59", False),
        ("*/15 * * * *", "2026-03-02 03:45", True),
        ("*/15 * * * *", "2026-03-02 03:46", False),
        ("10-40/10 * * * *", "2026-03-02 03:40", True),
        ("10-40/10 * * * *", "2026-03-02 03:50", False),
        ("10-40/10 * * * *", "2026-03-02 03:15", False),
        ("0,30 22-23,0-1 * * *", "2026-03-02 00:30", True),
        ("0,30 22-23,0-1 * * *", "2026-03-02 12:30", False),
        # day-of-week: 2026-03-02 is a Monday, 2026-03-01 a Sunday (0 and 7)
        ("* * * * 1", "2026-03-02 12:00", True),
        ("* * * * 1-5", "2026-03-01 12:00", False),
        ("* * * * 0", "2026-03-01 12:00", True),
        ("* * * * 7", "2026-03-01 12:00", True),
        ("* * * * 6-7", "2026-03-01 12:00", True),
        # month and day of month
        ("* * 1 * *", "2026-03-01 12:00", True),
        ("* * 1 * *", "2026-03-02 12:00", False),
        ("* * * 3 *", "2026-03-02 12:00", True),
        ("* * * 1-2,4-12 *", "2026-03-02 12:00", False),
        # both days restricted: either matches (cron's rule)
        ("* * 15 * 1", "2026-03-02 12:00", True),
        ("* * 2 * 3", "2026-03-02 12:00", True),
        ("* * 15 * 3", "2026-03-02 12:00", False),
        # a step over every day is no restriction: the day of week alone decides
        ("* * */1 * 3", "2026-03-02 12:00", False),
    ],
)
def test_an_expression_matches_its_minutes(expression, moment, inside):
    assert inside_window([parse_cron(expression)], at(moment)) is inside


def test_the_minute_is_taken_in_utc():
    window = parse_cron("* 2 * * *")
    berlin = datetime.timezone(datetime.timedelta(hours=1))
    assert window.matches(datetime.datetime(2026, 3, 2, 3, 15, tzinfo=berlin))
    assert not window.matches(datetime.datetime(2026, 3, 2, 2, 15, tzinfo=berlin))
    with pytest.raises(ValueError, match="aware"):
        window.matches(datetime.datetime(2026, 3, 2, 2, 15))


def test_inside_any_of_several_windows_and_never_inside_none():
    windows = [parse_cron("* 2 * * *"), parse_cron("* 14 * * 6")]
    assert inside_window(windows, at("2026-03-07 14:10"))  # a Saturday
    assert inside_window(windows, at("2026-03-02 02:10"))
    assert not inside_window(windows, at("2026-03-02 14:10"))
    assert not inside_window([], at("2026-03-02 14:10"))


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("* * * *", "has 4 fields, not 5"),
        ("* * * * * *", "has 6 fields, not 5"),
        ("60 * * * *", "minute 60 is out of 0-59"),
        ("* 24 * * *", "hour 24 is out of 0-23"),
        ("* * 0 * *", "day-of-month 0 is out of 1-31"),
        ("* * * 13 *", "month 13 is out of 1-12"),
        ("* * * * 8", "day-of-week 8 is out of 0-7"),
        ("* * * * MON", "day-of-week 'MON' is not a number"),
        ("* * ? * *", "day-of-month '?' is not a number"),
        ("5-2 * * * *", "minute range '5-2' runs backwards"),
        ("*/0 * * * *", "minute step 0 is out of 1-60"),
        ("5/15 * * * *", "a step goes with * or a range a-b"),
        ("1,,2 * * * *", "has an empty term"),
        ("-1 * * * *", "minute '' is not a number"),
    ],
)
def test_a_malformed_expression_is_refused_naming_its_field(expression, message):
    with pytest.raises(ValueError) as refused:
        parse_cron(expression)
    assert message in str(refused.value)


def test_the_spec_parser_names_the_window_at_fault():
    spec = {
        "storage": {"volumes": [{"id": 0, "size": "1Gi"}]},
        "certificates": {"maintenanceWindows": ["* 2 * * *", "* 25 * * *"]},
    }
    with pytest.raises(ValueError) as refused:
        parse_cluster("events", "prod", spec)
    assert str(refused.value) == ("spec.certificates.maintenanceWindows[1]: hour 25 is out of 0-23")
