"""``tidelog-consumer-groups`` without a broker: option checks, duration and datetime
parsing, the reset targets of every scenario, the tables (Kafka's column layout), the
consumer protocol decoder, and the commands over a fake admin client."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest

from tidelog.admin import AdminError
from tidelog.admin.group_offsets import OffsetAndMetadata
from tidelog.admin.groups import (
    GroupDescription,
    GroupListing,
    MemberDescription,
    Node,
    TopicPartition,
)
from tidelog.admin.log_offsets import ListedOffset
from tidelog.cli import consumer_groups as cg
from tidelog.cli.common import UsageError
from tidelog.cli.consumer_group_options import parse_args, parse_topic_args
from tidelog.cli.group_tables import (
    OffsetRow,
    format_assignment,
    format_delete_offsets,
    format_export,
    format_group_states,
    format_members,
    format_offsets,
    format_reset,
    format_state,
)
from tidelog.cli.offset_reset import (
    ResetError,
    ResetSpec,
    parse_datetime,
    parse_duration,
    parse_reset_file,
    reset_targets,
)
from tidelog.protocol.consumer_protocol import (
    ConsumerProtocolError,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)
from tidelog.protocol.errors import ErrorCode

BS = ["--bootstrap-server", "127.0.0.1:9092"]
TP = TopicPartition
SECOND = 10**9

# -- durations and datetimes --------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "nanos"),
    [
        ("PT1H", 3600 * SECOND),
        ("PT30M", 1800 * SECOND),
        ("P1D", 86400 * SECOND),
        ("P1DT2H3M4S", (86400 + 7200 + 180 + 4) * SECOND),
        ("PT0.5S", SECOND // 2),
        ("PT1,25S", SECOND + SECOND // 4),
        ("pt2h", 7200 * SECOND),
        ("-PT1H", -3600 * SECOND),
        ("PT-1H30M", (-3600 + 1800) * SECOND),
        ("PT-1.5S", -SECOND - SECOND // 2),
        ("+P0D", 0),
        ("PT0.000000001S", 1),
    ],
)
def test_durations_read_as_java_reads_them(text, nanos):
    assert parse_duration(text) == nanos


@pytest.mark.parametrize("text", ["", "P", "PT", "1h", "PT1H1D", "P1W", "PT1.0000000001S", "T1H"])
def test_bad_durations_are_refused(text):
    with pytest.raises(ValueError, match="Invalid duration"):
        parse_duration(text)


@pytest.mark.parametrize(
    ("text", "epoch_ms"),
    [
        ("1970-01-01T00:00:00.000", 0),
        ("2024-02-29T12:34:56.789", 1709210096789),
        ("2024-02-29T12:34:56.789Z", 1709210096789),
        ("2024-02-29T13:34:56.789+01:00", 1709210096789),
        ("2024-02-29T13:34:56.789+0100", 1709210096789),
        ("2024-02-29T13:34:56.789+01", 1709210096789),
        ("2024-02-29T07:04:56.789-05:30", 1709210096789),
    ],
)
def test_datetimes_without_a_zone_are_utc(text, epoch_ms):
    assert parse_datetime(text) == epoch_ms


@pytest.mark.parametrize(
    "text",
    [
        "2024-02-29",
        "2024-02-29 12:34:56.789",
        "2024-02-29T12:34:56",
        "2024-02-29T12:34:56.7",
        "2024-02-30T12:34:56.789",
        "2024-13-01T00:00:00.000",
        "2024-01-01T24:00:00.000",
        "2024-01-01T00:00:00.000+25:00",
        "2024-01-01T00:00:00.000 UTC",
    ],
)
def test_bad_datetimes_are_refused(text):
    with pytest.raises(ValueError, match="Error parsing timestamp"):
        parse_datetime(text)


def test_topic_arguments():
    assert parse_topic_args(["a", "b:1,0", "a", "c:2"]) == (
        [TP("b", 1), TP("b", 0), TP("c", 2)],
        ["a"],
    )
    for bad, message in [
        ("t:", "expected topic name and partitions"),
        ("t:1:2", "expected topic name and partitions"),
        (":1", "expected topic name and partitions"),
        ("t:x", "Invalid partition 'x'"),
        ("t:1,", "Invalid partition ''"),
        ("t:-1", "Invalid partition '-1'"),
    ]:
        with pytest.raises(ValueError, match=message):
            parse_topic_args([bad])


# -- options --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ([*BS], "exactly one action"),
        ([*BS, "--list", "--describe"], "exactly one action"),
        (["--list"], 'Missing required argument "[bootstrap-server]"'),
        (["--bootstrap-server", "localhost", "--list"], "Invalid --bootstrap-server"),
        (["--bootstrap-server", "h:99999", "--list"], "Invalid --bootstrap-server"),
        ([*BS, "--describe"], "Option [describe] takes one of these options"),
        ([*BS, "--describe", "--group", "g", "--members", "--state"], "at most one"),
        ([*BS, "--describe", "--group", "g", "--offsets", "--members"], "at most one"),
        ([*BS, "--describe", "--group", "g", "--state", "stable"], "does not take a value"),
        ([*BS, "--describe", "--group", "g", "--all-groups"], "can't be used with"),
        ([*BS, "--describe", "--group", "g", "--topic", "t"], "[topic] can't be used"),
        ([*BS, "--list", "--group", "g"], "[group] can't be used with option [list]"),
        ([*BS, "--list", "--members"], "[members] can only be used with [describe]"),
        ([*BS, "--list", "--state", "nope"], "Invalid state list 'nope'. Valid states are:"),
        ([*BS, "--list", "--to-earliest"], "can only be used with [reset-offsets]"),
        ([*BS, "--delete", "--state"], "[state] can only be used"),
        ([*BS, "--delete"], "Option [delete] takes one of these options"),
        ([*BS, "--delete", "--group", "g", "--topic", "t"], "topic-specific offset deletion"),
        ([*BS, "--delete-offsets", "--group", "g"], "[delete-offsets] takes one [group]"),
        ([*BS, "--delete-offsets", "--topic", "t"], "[delete-offsets] takes one [group]"),
        (
            [*BS, "--delete-offsets", "--group", "a", "--group", "b", "--topic", "t"],
            "takes one [group]",
        ),
        ([*BS, "--reset-offsets", "--all-topics", "--to-earliest"], "takes one of these options"),
        ([*BS, "--reset-offsets", "--group", "g", "--all-topics"], "requires one of the following"),
        (
            [
                *BS,
                "--reset-offsets",
                "--group",
                "g",
                "--all-topics",
                "--to-earliest",
                "--to-latest",
            ],
            "[to-earliest] can't be used with option [to-latest]",
        ),
        (
            [
                *BS,
                "--reset-offsets",
                "--group",
                "g",
                "--all-topics",
                "--to-offset",
                "0",
                "--shift-by",
                "0",
            ],
            "[shift-by] can't be used with option [to-offset]",
        ),
        ([*BS, "--reset-offsets", "--group", "g", "--to-earliest"], "One of the reset scopes"),
        (
            [*BS, "--reset-offsets", "--group", "g", "--all-topics", "--topic", "t", "--to-latest"],
            "[all-topics] can't be used with option [topic]",
        ),
        (
            [
                *BS,
                "--reset-offsets",
                "--group",
                "g",
                "--all-topics",
                "--to-latest",
                "--execute",
                "--dry-run",
            ],
            "only accepts one of [execute] and [dry-run]",
        ),
        (
            [*BS, "--reset-offsets", "--group", "g", "--all-topics", "--to-offset", "x"],
            "--to-offset: invalid int value: 'x'",
        ),
        (
            [*BS, "--reset-offsets", "--group", "g", "--all-topics", "--by-duration", "1h"],
            "Invalid duration '1h'",
        ),
        (
            [*BS, "--reset-offsets", "--group", "g", "--all-topics", "--to-datetime", "yesterday"],
            "Error parsing timestamp 'yesterday'",
        ),
        (
            [*BS, "--reset-offsets", "--group", "g", "--topic", "t:a", "--to-latest"],
            "Invalid partition 'a' specified in topic arg 't:a'",
        ),
        ([*BS, "--list", "--timeout", "0"], "must be positive"),
        ([*BS, "--list", "--bogus"], "unrecognized arguments: --bogus"),
    ],
)
def test_bad_options_are_refused(argv, message):
    with pytest.raises(UsageError) as refused:
        parse_args(argv)
    assert message in str(refused.value)


def test_options_parsed():
    o = parse_args([*BS, "--list"])
    assert (o.action, o.list_states, o.bootstrap) == ("list", None, "127.0.0.1:9092")
    assert parse_args([*BS, "--list", "--state"]).list_states == []
    assert parse_args([*BS, "--list", "--state", "STABLE, empty"]).list_states == [
        "Stable",
        "Empty",
    ]
    o = parse_args([*BS, "--describe", "--group", "a", "--group", "b", "--group", "a"])
    assert (o.view, o.groups) == ("offsets", ["a", "b"])
    assert parse_args([*BS, "--describe", "--all-groups", "--state"]).view == "state"
    o = parse_args([*BS, "--describe", "--group", "g", "--members", "--verbose"])
    assert (o.view, o.verbose) == ("members", True)
    o = parse_args([*BS, "--reset-offsets", "--group", "g", "--topic", "t", "--to-offset", "0"])
    assert (o.reset, o.execute, o.topics) == (ResetSpec("to_offset", 0), False, ["t"])
    o = parse_args([*BS, "--reset-offsets", "--all-groups", "--all-topics", "--shift-by", "-2"])
    assert (o.reset, o.all_groups, o.all_topics) == (ResetSpec("shift_by", -2), True, True)
    o = parse_args(
        [*BS, "--reset-offsets", "--group", "g", "--all-topics", "--to-earliest", "--execute"]
    )
    assert (o.reset, o.execute) == (ResetSpec("to_earliest"), True)
    o = parse_args(
        [*BS, "--reset-offsets", "--group", "g", "--all-topics", "--by-duration", "PT1M"]
    )
    assert o.reset == ResetSpec("by_duration", 60 * SECOND)
    o = parse_args([*BS, "--reset-offsets", "--group", "g", "--from-file", "plan.csv"])
    assert (o.reset, o.from_file_path) == (ResetSpec("from_file"), "plan.csv")
    # Unique prefixes of long options are accepted, as by Kafka's option parser.
    assert parse_args(
        [*BS, "--reset-offsets", "--group", "g", "--all-topics", "--to-ea"]
    ).reset == (ResetSpec("to_earliest"))
    assert parse_args([*BS, "--list", "--timeout", "250"]).timeout_ms == 250


def test_reset_spec_timestamps():
    assert ResetSpec("to_datetime", 1234).timestamp() == 1234
    now = 1_700_000_000_123_456_789
    assert ResetSpec("by_duration", 60 * SECOND).timestamp(now) == 1_699_999_940_123


def test_bad_input_is_one_line_on_stderr_and_status_1(capsys):
    for argv in ([], [*BS, "--describe"], [*BS, "--reset-offsets", "--to-offset", "x"]):
        assert cg.main(argv) == 1
        out, err = capsys.readouterr()
        assert out == ""
        assert len(err.splitlines()) == 1 and err.startswith("Error: "), err
        assert "Traceback" not in err


def test_help_exits_0(capsys):
    assert cg.main(["--help"]) == 0
    assert "--reset-offsets" in capsys.readouterr().out


# -- reset targets --------------------------------------------------------------------------

A0, A1, B0 = TP("a", 0), TP("a", 1), TP("b", 0)
EARLIEST = {A0: 5, A1: 0, B0: 10}
LATEST = {A0: 50, A1: 20, B0: 10}
COMMITTED = {A0: 30, A1: 20}


def targets(spec, partitions=(A0, A1, B0), **kw):
    kw = {"committed": COMMITTED, "earliest": EARLIEST, "latest": LATEST, **kw}
    return reset_targets(spec, partitions, **kw)


def test_reset_to_earliest_latest_current():
    assert targets(ResetSpec("to_earliest")).offsets == {A0: 5, A1: 0, B0: 10}
    assert targets(ResetSpec("to_latest")).offsets == {A0: 50, A1: 20, B0: 10}
    # No committed offset: the latest one.
    plan = targets(ResetSpec("to_current"))
    assert (plan.offsets, plan.warnings) == ({A0: 30, A1: 20, B0: 10}, [])


def test_reset_to_offset_is_clamped_into_the_log():
    plan = targets(ResetSpec("to_offset", 7))
    assert plan.offsets == {A0: 7, A1: 7, B0: 10}
    assert plan.warnings == [
        "New offset (7) is lower than earliest offset for topic partition b-0. "
        "Value will be set to 10"
    ]
    plan = targets(ResetSpec("to_offset", 100), partitions=[A0])
    assert plan.offsets == {A0: 50}
    assert "higher than latest offset for topic partition a-0" in plan.warnings[0]
    assert targets(ResetSpec("to_offset", -3), partitions=[A0, A1]).offsets == {A0: 5, A1: 0}


def test_reset_shift_by():
    assert targets(ResetSpec("shift_by", -10), partitions=[A0, A1]).offsets == {A0: 20, A1: 10}
    plan = targets(ResetSpec("shift_by", 5), partitions=[A0, A1])
    assert plan.offsets == {A0: 35, A1: 20} and len(plan.warnings) == 1
    assert targets(ResetSpec("shift_by", -100), partitions=[A0]).offsets == {A0: 5}
    with pytest.raises(ResetError, match="Cannot shift offset for partition b-0"):
        targets(ResetSpec("shift_by", 1))


def test_reset_by_time_falls_back_to_latest_without_a_recent_record():
    for spec in (ResetSpec("to_datetime", 1000), ResetSpec("by_duration", SECOND)):
        plan = targets(spec, by_time={A0: 12, A1: -1, B0: 10})
        assert plan.offsets == {A0: 12, A1: 20, B0: 10}
        assert plan.warnings == [
            "Partition 1 from topic a is empty. Falling back to latest known offset."
        ]


def test_reset_from_file_is_clamped():
    plan = targets(ResetSpec("from_file"), partitions=[A0, B0], from_file={A0: 99, B0: 10})
    assert plan.offsets == {A0: 50, B0: 10}


def test_reset_needs_the_log_offsets():
    with pytest.raises(ResetError, match="starting offset of topic partition: c-0"):
        targets(ResetSpec("to_earliest"), partitions=[TP("c", 0)])
    with pytest.raises(ResetError, match="by timestamp offset of topic partition: a-0"):
        targets(ResetSpec("to_datetime", 0), partitions=[A0], by_time={})


def test_reset_of_nothing():
    assert targets(ResetSpec("to_latest"), partitions=[]).offsets == {}


# -- tables ---------------------------------------------------------------------------------


def test_offsets_table_has_kafkas_layout():
    rows = [
        OffsetRow("g", "t1", 0, 3, 10, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
        OffsetRow("g", "t1", 1, None, 4, "consumer-1-abc", "/127.0.0.1", "consumer-1"),
        OffsetRow("g", "t2", 0, 7, None, "-", "-", "-"),
    ]
    assert format_offsets(rows) == (
        "\n"
        "GROUP           TOPIC           PARTITION  CURRENT-OFFSET  LOG-END-OFFSET  LAG    "
        "         CONSUMER-ID     HOST            CLIENT-ID\n"
        "g               t1              0          3               10              7      "
        "         consumer-1-abc  /127.0.0.1      consumer-1\n"
        "g               t1              1          -               4               -      "
        "         consumer-1-abc  /127.0.0.1      consumer-1\n"
        "g               t2              0          7               -               -      "
        "         -               -               -\n"
    )
    # Columns widen to the longest value.
    wide = format_offsets(
        [OffsetRow("a-rather-long-group", "t", 0, 1, 2, "c" * 20, "h", "x")]
    ).splitlines()
    assert wide[1].index("TOPIC") == len("a-rather-long-group") + 1
    assert wide[1].index("HOST") == wide[2].index("h ")


def test_members_table():
    node = Node(1, "127.0.0.1", 9092)
    members = (
        MemberDescription("c-2-x", None, "c-2", "/10.0.0.2", b"", b"", (TP("t", 1),)),
        MemberDescription(
            "c-1-x", None, "c-1", "/10.0.0.1", b"", b"", (TP("u", 0), TP("t", 10), TP("t", 2))
        ),
    )
    group = GroupDescription("g", "Stable", "consumer", "range", members, node)
    assert format_members("g", group, verbose=False) == (
        "\n"
        "GROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
        "g               c-2-x           /10.0.0.2       c-2             1               \n"
        "g               c-1-x           /10.0.0.1       c-1             3               \n"
    )
    verbose = format_members("g", group, verbose=True).splitlines()
    assert verbose[1].endswith("#PARTITIONS     ASSIGNMENT")
    assert verbose[3].endswith("3               t(2,10), u(0)")
    static = GroupDescription(
        "g",
        "Stable",
        "consumer",
        "range",
        (MemberDescription("m", "instance-1", "c", "/h", b"", b""),),
        node,
    )
    lines = format_members("g", static, verbose=True).splitlines()
    assert lines[1].split() == [
        "GROUP",
        "CONSUMER-ID",
        "GROUP-INSTANCE-ID",
        "HOST",
        "CLIENT-ID",
        "#PARTITIONS",
        "ASSIGNMENT",
    ]
    assert lines[2].split() == ["g", "m", "instance-1", "/h", "c", "0", "-"]
    empty = GroupDescription("g", "Empty", "consumer", "", (), node)
    assert format_members("g", empty, verbose=False) == (
        "\nGROUP           CONSUMER-ID     HOST            CLIENT-ID       #PARTITIONS     \n"
    )


def test_assignment_column():
    assert format_assignment([]) == "-"
    assert format_assignment([TP("b", 3), TP("a", 1), TP("b", 0)]) == "a(1), b(0,3)"


def test_state_table():
    node = Node(3, "broker-3.example", 9092)
    members = (MemberDescription("m", None, "c", "/h", b"", b""),)
    text = format_state(GroupDescription("g", "Stable", "consumer", "range", members, node))
    # As in Kafka's tool, the GROUP column is as wide as the COORDINATOR value (26 here).
    assert text.splitlines() == [
        "",
        "GROUP                      COORDINATOR (ID)          ASSIGNMENT-STRATEGY  STATE      "
        "     #MEMBERS",
        "g                          broker-3.example:9092  (3) range                Stable     "
        "     1",
    ]
    short = format_state(GroupDescription("g", "Empty", "consumer", "", (), Node(1, "h", 1)))
    assert short.splitlines()[2] == (
        "g                         h:1  (1)                                       Empty           0"
    )


def test_list_states_table():
    assert format_group_states([("g", "Stable"), ("other", "Empty")]) == (
        "GROUP                     STATE               \n"
        "g                         Stable              \n"
        "other                     Empty               \n"
    )
    assert format_group_states([]) == "GROUP                     STATE               \n"
    long = format_group_states([("x" * 20, "Dead")]).splitlines()
    assert long[0].index("STATE") == 31


def test_reset_table_and_export():
    plans = {"g": {TP("t", 1): 5, TP("t", 0): 7}}
    assert format_reset(plans) == (
        "\n"
        "GROUP                          TOPIC                          PARTITION  NEW-OFFSET     \n"
        "g                              t                              0          7              \n"
        "g                              t                              1          5              \n"
    )
    assert format_export(plans, with_group=False) == "t,0,7\nt,1,5\n"
    assert format_export(plans, with_group=True) == "g,t,0,7\ng,t,1,5\n"


def test_reset_plan_file():
    assert parse_reset_file("t,0,7\n\nt,1,5\n", ["g"]) == {"g": {TP("t", 0): 7, TP("t", 1): 5}}
    assert parse_reset_file("g,t,0,7\nh,t,0,1\n", ["g", "h"]) == {
        "g": {TP("t", 0): 7},
        "h": {TP("t", 0): 1},
    }
    with pytest.raises(ValueError, match="line 2"):
        parse_reset_file("t,0,7\nt,zero,5\n", ["g"])
    with pytest.raises(ValueError, match="line 1"):
        parse_reset_file("t,0,7\n", ["g", "h"])


def test_delete_offsets_table():
    text = format_delete_offsets(
        {
            ("t", 1): ErrorCode.NONE,
            ("t", 0): ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC,
            ("gone", -1): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        }
    )
    assert text.splitlines() == [
        "",
        "TOPIC                          PARTITION       STATUS         ",
        "gone                           Not Provided    Error: This server does not host this "
        "topic-partition.",
        "t                              0               Error: Deleting offsets of a topic is "
        "forbidden while the consumer group is actively subscribed to it.",
        "t                              1               Successful     ",
    ]


# -- the consumer protocol ------------------------------------------------------------------

# What librdkafka (confluent-kafka 2.16) sent to Kafka 3.9.1 and what the range assignor
# gave it, as DescribeGroups returned them.
LIBRDKAFKA_SUBSCRIPTION = bytes.fromhex("00030000000200027431000274320000000000000000ffffffff0000")
RANGE_ASSIGNMENT = bytes.fromhex(
    "000000000002000274320000000200000000000000010002743100000003000000000000000100000002"
    "00000000"
)


def test_decodes_real_member_bytes():
    subscription = decode_subscription(LIBRDKAFKA_SUBSCRIPTION)
    assert subscription.version == 3
    assert subscription.topics == ("t1", "t2")
    assert subscription.user_data == b""
    assert (subscription.owned_partitions, subscription.generation_id) == ((), -1)
    assert subscription.rack_id == ""
    assignment = decode_assignment(RANGE_ASSIGNMENT)
    assert assignment.version == 0
    assert assignment.partitions == (("t2", 0), ("t2", 1), ("t1", 0), ("t1", 1), ("t1", 2))
    assert assignment.user_data == b""


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_subscription_versions_round_trip(version):
    data = encode_subscription(
        ["a", "b"],
        version=version,
        user_data=b"\x01\x02",
        owned_partitions=[("a", 0), ("a", 2), ("b", 1)],
        generation_id=7,
        rack_id="rack-1",
    )
    decoded = decode_subscription(data)
    assert (decoded.version, decoded.topics, decoded.user_data) == (
        version,
        ("a", "b"),
        b"\x01\x02",
    )
    assert decoded.owned_partitions == ((("a", 0), ("a", 2), ("b", 1)) if version >= 1 else ())
    assert decoded.generation_id == (7 if version >= 2 else -1)
    assert decoded.rack_id == ("rack-1" if version >= 3 else None)


def test_subscription_v0_by_hand():
    data = bytes.fromhex("0000" "00000001" "0001" "78" "ffffffff")
    decoded = decode_subscription(data)
    assert (decoded.topics, decoded.user_data, decoded.rack_id) == (("x",), None, None)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_assignment_versions_round_trip(version):
    data = encode_assignment([("t", 0), ("t", 3), ("u", 1)], version=version, user_data=None)
    decoded = decode_assignment(data)
    assert decoded.version == version
    assert decoded.partitions == (("t", 0), ("t", 3), ("u", 1))
    assert decoded.user_data is None


def test_newer_versions_are_read_as_version_3():
    data = bytearray(encode_subscription(["a"], version=3, rack_id="r"))
    data[0:2] = (9).to_bytes(2, "big")
    decoded = decode_subscription(bytes(data) + b"fields of version 9")
    assert (decoded.version, decoded.topics, decoded.rack_id) == (9, ("a",), "r")
    data = bytearray(encode_assignment([("a", 1)]))
    data[0:2] = (4).to_bytes(2, "big")
    assert decode_assignment(bytes(data) + b"\x00").partitions == (("a", 1),)


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b"\x00",
        bytes.fromhex("ffff00000000ffffffff"),  # negative version
        bytes.fromhex("0000" "00000001" "0005" "6162"),  # string past the end
        bytes.fromhex("0000" "7fffffff"),  # absurd array length
        bytes.fromhex("0000" "00000001" "0002" "ff fe" "ffffffff"),  # not UTF-8
        bytes.fromhex("0001" "00000000" "ffffffff"),  # v1 without owned partitions
    ],
)
def test_malformed_member_bytes_are_refused(data):
    with pytest.raises(ConsumerProtocolError):
        decode_subscription(data)


def test_malformed_assignment_is_refused():
    with pytest.raises(ConsumerProtocolError):
        decode_assignment(bytes.fromhex("0000" "00000001" "0001" "74" "00000002" "00000000"))


# -- the commands over a fake admin client ----------------------------------------------------


@dataclass
class FakeAdmin:
    """The AdminClient calls the tool makes, answered from dicts."""

    groups: dict[str, GroupDescription]
    committed: dict[str, dict[TopicPartition, int]]
    earliest: dict[TopicPartition, int]
    latest: dict[TopicPartition, int]
    topics: dict[str, list[int]]
    altered: dict[str, dict] = field(default_factory=dict)

    def list_groups(self, states=None):
        return [
            GroupListing(g, d.protocol_type, d.state)
            for g, d in sorted(self.groups.items())
            if not states or d.state in states
        ]

    def describe_groups(self, groups):
        node = Node(1, "localhost", 9092)
        return {
            g: self.groups.get(g, GroupDescription(g, "Dead", "", "", (), node)) for g in groups
        }

    def list_group_offsets(self, group):
        return {tp: OffsetAndMetadata(o) for tp, o in self.committed.get(group, {}).items()}

    def list_offsets(self, partitions, spec="latest"):
        source = {"earliest": self.earliest, "latest": self.latest}.get(spec)
        out = {}
        for tp in partitions:
            if tp not in self.latest:
                raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
            out[tp] = ListedOffset(source[tp] if source else -1)
        return out

    def topic_partitions(self, topics):
        missing = [t for t in topics if t not in self.topics]
        if missing:
            raise AdminError(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
        return {t: self.topics[t] for t in topics}

    def alter_group_offsets(self, group, offsets):
        self.altered[group] = dict(offsets)

    def delete_group_offsets(self, group, partitions):
        if group not in self.groups:
            raise AdminError(ErrorCode.GROUP_ID_NOT_FOUND)
        subscribed = {tp.topic for m in self.groups[group].members for tp in m.assignment}
        return {
            tp: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if tp.topic in subscribed else ErrorCode.NONE
            for tp in partitions
        }

    def delete_groups(self, groups):
        return {
            g: ErrorCode.NONE
            if self.groups.get(g) and not self.groups[g].members
            else (ErrorCode.NON_EMPTY_GROUP if g in self.groups else ErrorCode.GROUP_ID_NOT_FOUND)
            for g in groups
        }


def fake_cluster() -> FakeAdmin:
    node = Node(1, "localhost", 9092)
    member = MemberDescription("m-1", None, "client", "/127.0.0.1", b"", b"", (A1, A0))
    return FakeAdmin(
        groups={
            "active": GroupDescription("active", "Stable", "consumer", "range", (member,), node),
            "idle": GroupDescription("idle", "Empty", "consumer", "", (), node),
            "connect": GroupDescription("connect", "Stable", "connect", "x", (), node),
        },
        committed={"active": {A0: 40}, "idle": {A0: 30, B0: 10}},
        earliest=EARLIEST,
        latest=LATEST,
        topics={"a": [0, 1], "b": [0]},
    )


def run(admin: FakeAdmin, *argv: str) -> tuple[int, str, str]:
    options = parse_args([*BS, *argv])
    out, err = io.StringIO(), io.StringIO()
    command = cg._Command(options, out, err, admin)
    {
        "list": command.run_list,
        "describe": command.run_describe,
        "delete": command.run_delete,
        "reset_offsets": command.run_reset,
        "delete_offsets": command.run_delete_offsets,
    }[options.action]()
    return (1 if command.failed else 0), out.getvalue(), err.getvalue()


def test_list_shows_consumer_groups_only():
    admin = fake_cluster()
    assert run(admin, "--list") == (0, "active\nidle\n", "")
    code, out, _ = run(admin, "--list", "--state", "empty")
    assert out.splitlines()[1].split() == ["idle", "Empty"]


def test_describe_offsets_rows():
    admin = fake_cluster()
    code, out, err = run(admin, "--describe", "--group", "active")
    rows = [line.split() for line in out.splitlines()[2:]]
    assert rows == [
        ["active", "a", "0", "40", "50", "10", "m-1", "/127.0.0.1", "client"],
        ["active", "a", "1", "-", "20", "-", "m-1", "/127.0.0.1", "client"],
    ]
    code, out, err = run(admin, "--describe", "--group", "idle")
    assert (code, err) == (0, "Consumer group 'idle' has no active members.\n")
    assert [line.split()[1:7] for line in out.splitlines()[2:]] == [
        ["a", "0", "30", "50", "20", "-"],
        ["b", "0", "10", "10", "0", "-"],
    ]
    code, out, err = run(admin, "--describe", "--group", "nope", "--members")
    assert (code, out, err) == (1, "", "Error: Consumer group 'nope' does not exist.\n")


def test_describe_refuses_a_group_of_another_protocol():
    admin = fake_cluster()
    with pytest.raises(
        cg.CommandError, match=r"GroupId connect is not a consumer group \(connect\)"
    ):
        run(admin, "--describe", "--group", "connect")


def test_reset_is_refused_while_the_group_is_active():
    admin = fake_cluster()
    code, out, err = run(
        admin, "--reset-offsets", "--group", "active", "--all-topics", "--to-earliest", "--execute"
    )
    assert (code, out) == (1, "")
    assert err == (
        "Error: Assignments can only be reset if the group 'active' is inactive, but the current "
        "state is Stable.\n"
    )
    assert admin.altered == {}


def test_reset_dry_run_and_execute():
    admin = fake_cluster()
    with pytest.raises(cg.CommandError, match="no current committed offset"):
        run(admin, "--reset-offsets", "--group", "idle", "--topic", "a", "--shift-by", "-1")
    code, out, err = run(
        admin,
        "--reset-offsets",
        "--group",
        "idle",
        "--all-topics",
        "--to-offset",
        "12",
        "--dry-run",
    )
    assert code == 0 and admin.altered == {}
    assert [line.split() for line in out.splitlines()[2:]] == [
        ["idle", "a", "0", "12"],
        ["idle", "b", "0", "10"],
    ]
    assert "higher than latest offset for topic partition b-0" in err
    code, out, err = run(
        admin, "--reset-offsets", "--group", "idle", "--topic", "a:1", "--to-latest", "--execute"
    )
    assert code == 0 and admin.altered == {"idle": {A1: 20}}
    assert "WARN: No action" not in err
    # A group without offsets (Dead) can be given some.
    code, out, err = run(
        admin, "--reset-offsets", "--group", "new", "--topic", "b", "--to-earliest", "--execute"
    )
    assert code == 0 and admin.altered["new"] == {B0: 10}


def test_delete():
    admin = fake_cluster()
    assert run(admin, "--delete", "--group", "idle") == (
        0,
        "Deletion of requested consumer groups ('idle') was successful.\n",
        "",
    )
    code, out, err = run(admin, "--delete", "--group", "idle", "--group", "active")
    assert code == 1
    assert err.splitlines() == [
        "Error: Deletion of some consumer groups failed:",
        "* Group 'active' could not be deleted due to: NON_EMPTY_GROUP: The group is not empty.",
    ]
    assert out == "\nThese consumer groups were deleted successfully: 'idle'\n"


def test_delete_offsets():
    admin = fake_cluster()
    code, out, err = run(
        admin, "--delete-offsets", "--group", "idle", "--topic", "a", "--topic", "b:0"
    )
    assert (code, err) == (0, "")
    assert (
        out.splitlines()[0] == "Request succeed for deleting offsets with topic a, b:0 group idle"
    )
    assert [line.split() for line in out.splitlines()[3:]] == [
        ["a", "0", "Successful"],
        ["a", "1", "Successful"],
        ["b", "0", "Successful"],
    ]
    code, out, err = run(
        admin, "--delete-offsets", "--group", "active", "--topic", "a", "--topic", "x"
    )
    assert code == 1
    assert err == "Error: Encounter some partition level error, see the follow-up details:\n"
    assert [line.split()[:4] for line in out.splitlines()[2:]] == [
        ["a", "0", "Error:", "Deleting"],
        ["a", "1", "Error:", "Deleting"],
        ["x", "Not", "Provided", "Error:"],
    ]
    code, out, err = run(admin, "--delete-offsets", "--group", "nope", "--topic", "a:0")
    assert (code, err) == (1, "Error: 'nope' does not exist.\n")
