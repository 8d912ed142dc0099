"""``tidelog-leader-election`` without a broker: option checks as Kafka's
``kafka-leader-election.sh`` makes them, the election JSON file, and the result lines."""

from __future__ import annotations

import io

import pytest

from tidelog.admin import AdminError
from tidelog.admin.groups import TopicPartition
from tidelog.admin.topics import ElectionType
from tidelog.cli import leader_election
from tidelog.cli.leader_election import (
    UsageError,
    format_results,
    parse_args,
    parse_election_file,
)
from tidelog.protocol.errors import ErrorCode

BS = ["--bootstrap-server", "127.0.0.1:9092"]
TP = TopicPartition


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--all-topic-partitions"], "Missing required option.s.: bootstrap-server, election-type"),
        ([*BS, "--all-topic-partitions"], r"Missing required option\(s\): election-type"),
        ([*BS, "--election-type", "fast", "--all-topic-partitions"], "preferred or unclean"),
        (
            [*BS, "--election-type", "preferred"],
            "One and only one of the following options is required: topic, "
            "all-topic-partitions, path-to-json-file",
        ),
        (
            [*BS, "--election-type", "preferred", "--all-topic-partitions", "--topic", "t"],
            "One and only one",
        ),
        ([*BS, "--election-type", "preferred", "--topic", "t"], r"option\(s\): partition"),
        (
            [*BS, "--election-type", "preferred", "--all-topic-partitions", "--partition", "1"],
            "Option partition is only allowed if topic is used",
        ),
        (
            [*BS, "--election-type", "unclean", "--topic", "t", "--partition", "x"],
            "invalid int value",
        ),
        (
            [
                *BS,
                "--election-type",
                "preferred",
                "--all-topic-partitions",
                "--admin.config",
                "/nonexistent/a.properties",
            ],
            r"Cannot read --admin.config /nonexistent/a.properties",
        ),
    ],
)
def test_bad_options_are_refused_with_one_line(args, message):
    with pytest.raises(UsageError, match=message):
        parse_args(args)


def test_options_are_read():
    every = parse_args([*BS, "--election-type", "preferred", "--all-topic-partitions"])
    assert (every.election_type, every.partitions) == (ElectionType.PREFERRED, None)
    one = parse_args([*BS, "--election-type", "UNCLEAN", "--topic", "t", "--partition", "2"])
    assert (one.election_type, one.partitions) == (ElectionType.UNCLEAN, [TP("t", 2)])
    from_file = parse_args([*BS, "--election-type", "preferred", "--path-to-json-file", "x"])
    assert (from_file.partitions, from_file.json_file) == (None, "x")


def test_the_election_file():
    text = '{"partitions": [{"topic": "b", "partition": 1}, {"topic": "a", "partition": 0}]}'
    assert parse_election_file(text) == [TP("a", 0), TP("b", 1)]
    assert parse_election_file('{"partitions": []}') == []
    with pytest.raises(ValueError, match="is empty"):
        parse_election_file("  ")
    with pytest.raises(ValueError, match='missing "partitions" field'):
        parse_election_file('{"topics": []}')
    with pytest.raises(ValueError, match="not valid JSON"):
        parse_election_file("{")
    with pytest.raises(ValueError, match="is not"):
        parse_election_file('{"partitions": [{"topic": "a", "partition": "0"}]}')
    with pytest.raises(ValueError, match="duplicate partitions: a-0"):
        parse_election_file(
            '{"partitions": [{"topic": "a", "partition": 0}, {"topic": "a", "partition": 0}]}'
        )


def test_result_lines_as_kafka_prints_them():
    results = {
        TP("b", 0): None,
        TP("a", 1): None,
        TP("a", 0): AdminError(ErrorCode.ELECTION_NOT_NEEDED),
        TP("c", 0): AdminError(ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "not live."),
    }
    text, failed = format_results(ElectionType.PREFERRED, results)
    assert text == (
        "Successfully completed leader election (PREFERRED) for partitions a-1, b-0\n"
        "Valid replica already elected for partitions a-0\n"
        "Error completing leader election (PREFERRED) for partition: c-0: "
        "PREFERRED_LEADER_NOT_AVAILABLE: not live.\n"
    )
    assert failed == 1
    assert format_results(ElectionType.UNCLEAN, {}) == ("", 0)


def test_an_unreadable_file_is_one_error_line(tmp_path):
    out, err = io.StringIO(), io.StringIO()
    missing = str(tmp_path / "missing.json")
    args = [*BS, "--election-type", "preferred", "--path-to-json-file", missing]
    assert leader_election.main(args, out, err) == 1
    assert out.getvalue() == ""
    assert err.getvalue() == f"Error: Cannot read {missing}: No such file or directory\n"
