"""``tidelog-reassign-partitions``'s pure parts: option checks, the reassignment and
topics files, the JSON and texts it prints, the throttled replicas it computes, and
the progress bar it draws (the tool against brokers: tests/integration)."""

from __future__ import annotations

import io
import json

import pytest

from tidelog.admin.groups import TopicPartition
from tidelog.admin.topics import Reassignment
from tidelog.cli.common import UsageError
from tidelog.cli.progress import ProgressBar, format_bytes, wait_with_progress
from tidelog.cli.reassign_partitions import main, parse_args
from tidelog.cli.reassignment_file import (
    PartitionTarget,
    assignment_json,
    format_ongoing,
    parse_reassignment_file,
    parse_topics_file,
    throttled_replicas,
)

B = ("--bootstrap-server", "h:9092")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*B], "Command must include exactly one action"),
        ([*B, "--list", "--verify"], "Command must include exactly one action"),
        (["--list"], "Missing required option(s): bootstrap-server"),
        ([*B, "--execute"], "Missing required option(s): reassignment-json-file with [execute]"),
        (
            [*B, "--verify", "--reassignment-json-file", "f", "--throttle", "5"],
            "[throttle] can only",
        ),
        ([*B, "--execute", "--reassignment-json-file", "f", "--throttle", "-1"], "not negative"),
        ([*B, "--generate"], "--generate needs exactly one of"),
        ([*B, "--generate", "--rebalance", "--add-brokers", "4"], "--generate needs exactly one"),
        ([*B, "--generate", "--broker-list", "1,2"], "topics-to-move-json-file"),
        ([*B, "--generate", "--add-brokers", "4,x"], "is not a list of broker ids"),
        ([*B, "--generate", "--remove-brokers", "1,1"], "must list distinct broker ids"),
        ([*B, "--list", "--rebalance"], "[rebalance] can only be used with [generate]"),
        ([*B, "--list", "--bootstrap-server", "nohost"], "Invalid --bootstrap-server"),
    ],
)
def test_bad_options_are_refused_with_one_line(argv, message):
    with pytest.raises(UsageError) as raised:
        parse_args(argv)
    assert message in str(raised.value)
    err = io.StringIO()
    assert main(argv, out=io.StringIO(), err=err) == 1
    assert err.getvalue().startswith("Error: ") and err.getvalue().count("\n") == 1


def test_good_options():
    options = parse_args([*B, "--generate", "--remove-brokers", "3,1"])
    assert (options.action, options.intent, options.brokers) == (
        "generate",
        "remove_brokers",
        (3, 1),
    )
    options = parse_args(
        [*B, "--execute", "--reassignment-json-file", "f", "--throttle", "7", "--wait"]
    )
    assert (options.throttle, options.wait, options.log_dir_throttle) == (7, True, None)


def test_a_reassignment_file_with_and_without_log_dirs():
    text = json.dumps(
        {
            "version": 1,
            "partitions": [
                {"topic": "t", "partition": 1, "replicas": [2, 3], "log_dirs": ["any", "/d"]},
                {"topic": "t", "partition": 0, "replicas": [1]},
            ],
        }
    )
    targets = parse_reassignment_file(text)
    assert list(targets) == [TopicPartition("t", 0), TopicPartition("t", 1)]
    assert targets[TopicPartition("t", 0)] == PartitionTarget((1,), ("any",))
    assert targets[TopicPartition("t", 1)].log_dir_moves() == {3: "/d"}


@pytest.mark.parametrize(
    ("partitions", "message"),
    [
        ([], "Partition reassignment list cannot be empty"),
        ([{"topic": "t", "partition": 0, "replicas": []}], "replica list cannot be empty for t-0"),
        ([{"topic": "t", "partition": 0, "replicas": [1, 1]}], "Duplicate replica assignment"),
        ([{"topic": "t", "partition": -1, "replicas": [1]}], "needs a topic and a partition"),
        ([{"topic": "t", "partition": 0, "replicas": [1], "log_dirs": []}], "different from size"),
        ([{"topic": "t", "partition": 0, "replicas": [1]}] * 2, "duplicate topic partitions"),
    ],
)
def test_bad_reassignment_files(partitions, message):
    with pytest.raises(ValueError, match=message):
        parse_reassignment_file(json.dumps({"version": 1, "partitions": partitions}))


def test_bad_files_and_the_topics_file():
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_reassignment_file("{")
    with pytest.raises(ValueError, match="Not supported version field value 2"):
        parse_reassignment_file('{"version": 2, "partitions": []}')
    assert parse_topics_file(
        '{"version":1,"topics":[{"topic":"a"},{"topic":"b"},{"topic":"a"}]}'
    ) == [
        "a",
        "b",
    ]
    with pytest.raises(ValueError, match="lists no topics"):
        parse_topics_file('{"version":1,"topics":[]}')


def test_json_and_list_texts_are_kafkas():
    assert assignment_json({("t", 1): [2, 3], ("t", 0): [1]}) == (
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1],"log_dirs":["any"]},'
        '{"topic":"t","partition":1,"replicas":[2,3],"log_dirs":["any","any"]}]}'
    )
    ongoing = {
        TopicPartition("t", 0): Reassignment((3, 4, 1, 2), (3, 4), (1, 2)),
        TopicPartition("t", 1): Reassignment((1, 2, 3), (3,), ()),
    }
    assert format_ongoing(ongoing) == (
        "Current partition reassignments:\n"
        "t-0: replicas: 3,4,1,2. adding: 3,4. removing: 1,2.\n"
        "t-1: replicas: 1,2,3. adding: 3.\n"
    )
    assert format_ongoing({}) == "No partition reassignments found.\n"


def test_throttled_replicas_are_the_current_ones_and_the_added_ones():
    current = {
        TopicPartition("t", 0): (1, 2),
        TopicPartition("t", 1): (2, 3),
        TopicPartition("u", 0): (1,),
    }
    targets = {
        TopicPartition("t", 0): (3, 2),
        TopicPartition("t", 1): (2, 3),
        TopicPartition("u", 0): (2,),
    }
    assert throttled_replicas(current, targets) == {
        "t": ("0:1,0:2,1:2,1:3", "0:3"),
        "u": ("0:1", "0:2"),
    }


def test_the_progress_bar_prints_each_tenth_off_a_terminal():
    stream = io.StringIO()
    steps = iter(
        [
            (0, 100, "0/1", False),
            (5, 100, "0/1", False),
            (55, 100, "0/1", False),
            (100, 100, "1/1", True),
        ]
    )
    wait_with_progress(lambda: next(steps), interval=0, stream=stream, sleep=lambda _: None)
    lines = stream.getvalue().splitlines()
    assert [line.split("]")[1].split()[0] for line in lines] == ["0%", "55%", "100%"]
    assert lines[-1].endswith("100 B of 100 B  1/1")
    assert ProgressBar(0).line(0).startswith("[" + "#" * 30 + "]")
    assert format_bytes(1_234_567) == "1.2 MB" and format_bytes(999) == "999 B"
