"""``tidelog-log-dirs``'s pure parts: option checks, Kafka's JSON and the summary table
(the tool against brokers: tests/integration)."""

from __future__ import annotations

import io
import json

import pytest

from tidelog.admin.groups import TopicPartition
from tidelog.admin.moves import LogDirDescription, ReplicaInfo
from tidelog.cli.common import UsageError
from tidelog.cli.log_dirs import describe_json, main, parse_args, summary_table
from tidelog.protocol.errors import ErrorCode

B = ("--bootstrap-server", "h:9092")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*B], "Exactly one of --describe, --move, --drain, --undrain is required"),
        ([*B, "--drain", "--broker", "1"], "Missing required option(s): [log-dir]"),
        ([*B, "--move", "--broker", "1", "--log-dir", "/d"], "[partitions]"),
        ([*B, "--describe", "--broker", "1"], "Option [broker] can't be used with [describe]"),
        ([*B, "--undrain", "--broker", "1", "--log-dir", "/d", "--wait"], "[wait] can't be used"),
        (
            [*B, "--move", "--broker", "1", "--log-dir", "/d", "--partitions", "t"],
            "<topic>-<partition>",
        ),
        ([*B, "--describe", "--broker-list", "a"], "is not a list of ids"),
        ([*B, "--describe", "--command-config", "/nonexistent/x"], "Cannot read --command-config"),
    ],
)
def test_bad_options_are_refused_with_one_line(argv, message):
    with pytest.raises(UsageError) as raised:
        parse_args(argv)
    assert message in str(raised.value)
    err = io.StringIO()
    assert main(argv, out=io.StringIO(), err=err) == 1
    assert err.getvalue().count("\n") == 1


def test_good_options():
    options = parse_args(
        [*B, "--move", "--broker", "2", "--partitions", "a-b-0,c-3", "--log-dir", "/d"]
    )
    assert options.partitions == [TopicPartition("a-b", 0), TopicPartition("c", 3)]
    assert parse_args([*B, "--describe", "--broker-list", "1,3"]).brokers == [1, 3]


DIRS = {
    1: [
        LogDirDescription(
            "/d0",
            None,
            {
                TopicPartition("t", 0): ReplicaInfo(1500, 0, False),
                TopicPartition("t", 1): ReplicaInfo(700, 3, True),
            },
            10_000_000,
            4_000_000,
        ),
        LogDirDescription("/d1", ErrorCode.KAFKA_STORAGE_ERROR, {}, -1, -1),
    ]
}


def test_the_json_is_kafkas():
    assert json.loads(describe_json(DIRS)) == {
        "brokers": [
            {
                "broker": 1,
                "logDirs": [
                    {
                        "partitions": [
                            {"partition": "t-0", "size": 1500, "offsetLag": 0, "isFuture": False},
                            {"partition": "t-1", "size": 700, "offsetLag": 3, "isFuture": True},
                        ],
                        "error": None,
                        "logDir": "/d0",
                    },
                    {"partitions": [], "error": "KAFKA_STORAGE_ERROR", "logDir": "/d1"},
                ],
            }
        ],
        "version": 1,
    }


def test_the_summary_counts_current_replicas_and_names_states():
    assert summary_table(DIRS, {1: {"/d0"}}).splitlines() == [
        "BROKER  LOG-DIR  STATE     PARTITIONS  SIZE    USABLE  TOTAL",
        "1       /d0      draining  1           1.5 KB  4.0 MB  10.0 MB",
        "1       /d1      offline   0           0 B     -       -",
    ]
