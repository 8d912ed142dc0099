"""Config values read as Kafka's ConfigDef reads them (the parity test runs the same values
through Kafka itself: tests/compat/test_config_parity.py); and a topic's set checked as a
whole."""

from __future__ import annotations

import math

import pytest

from tidelog.storage.config import LogConfig, LogConfigError
from tidelog.storage.config_values import parse_value

PARSED = [
    ("int", " 42\t", 42),
    ("int", "+7", 7),
    ("int", "٣", 3),  # any Unicode decimal digit, as Java's parseInt takes
    ("short", "32767", 32767),
    ("long", str(2**63 - 1), 2**63 - 1),
    ("double", "0.5d", 0.5),
    ("double", "0x1p-1", 0.5),
    ("double", ".5", 0.5),
    ("double", "-Infinity", -math.inf),
    ("boolean", " TRUE ", True),
    ("list", "compact , delete", ["compact", "delete"]),
    ("list", "delete,", ["delete", ""]),
    ("list", "  ", []),
    ("string", "\x01 x \x7f", "x \x7f"),  # Java's trim: up to U+0020 only
]

REFUSED = [
    ("int", "1_000"),
    ("int", "2147483648"),
    ("short", "32768"),
    ("int", "1 2"),
    ("int", "\u00a01"),  # a no-break space is not trimmed by Java
    ("double", "inf"),
    ("double", "nan"),
    ("double", "1_0"),
    ("double", "٣"),
    ("boolean", "yes"),
    ("boolean", "1"),
]


@pytest.mark.parametrize(("kind", "raw", "expected"), PARSED)
def test_values_are_read_as_kafka_reads_them(kind, raw, expected):
    assert parse_value("some.key", kind, raw) == expected


def test_nan_is_read_and_passes_a_range_as_in_kafka():
    assert math.isnan(parse_value("k", "double", "NaN"))
    config = LogConfig.from_properties({"min.cleanable.dirty.ratio": "NaN"})
    assert math.isnan(config.min_cleanable_dirty_ratio)


@pytest.mark.parametrize(("kind", "raw"), REFUSED)
def test_a_refusal_names_the_key_and_the_value(kind, raw):
    with pytest.raises(LogConfigError) as refused:
        parse_value("some.key", kind, raw)
    assert str(refused.value).startswith(f"Invalid value {raw} for configuration some.key")
    assert refused.value.error_code == 40  # INVALID_CONFIG


def test_a_topic_set_whose_compaction_lags_cross_is_refused():
    with pytest.raises(LogConfigError, match="min.compaction.lag.ms"):
        LogConfig.from_properties({"min.compaction.lag.ms": "10", "max.compaction.lag.ms": "9"})
    config = LogConfig.from_properties({"min.compaction.lag.ms": "9", "max.compaction.lag.ms": "9"})
    assert config.min_compaction_lag_ms == config.max_compaction_lag_ms == 9


def test_an_empty_cleanup_policy_is_taken_and_an_empty_member_is_not():
    assert LogConfig.from_properties({"cleanup.policy": ""}).cleanup_policy == ()
    with pytest.raises(LogConfigError, match="cleanup.policy"):
        LogConfig.from_properties({"cleanup.policy": "delete,,compact"})
