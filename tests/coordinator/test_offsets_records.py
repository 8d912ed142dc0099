"""The ``__consumer_offsets`` codec: layouts, versions, malformed input, and byte
compatibility with Apache Kafka 3.9.1's own classes (``KafkaOffsetsRecordTool.java``, run
once for the module; never skipped: without Kafka's jars these tests fail, telling to run
`make kafka-libs`)."""

from __future__ import annotations

import contextlib
import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafka_reference import kafka_libs, run_java_jobs
from tidelog.coordinator.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MalformedOffsetsRecord,
    MemberValue,
    OffsetKey,
    OffsetValue,
    UnknownRecordKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
    encode_group_value,
    encode_key,
    encode_offset_value,
)

UNICODE = "grüppe-日本-🚀"


def member(i: int, *, instance: str | None = None, sub: bytes = b"", asg: bytes = b""):
    return MemberValue(
        member_id=f"consumer-{i}-{'a' * 8}",
        group_instance_id=instance,
        client_id=f"client-{i}",
        client_host=f"/10.0.0.{i}",
        rebalance_timeout=300_000,
        session_timeout=45_000,
        subscription=sub,
        assignment=asg,
    )


def subscription(*topics: str) -> bytes:
    """A consumer's ConsumerProtocolSubscription v0 (topics, null user data): Kafka's loader
    parses the subscriptions of "consumer" groups."""
    out = bytearray(b"\x00\x00" + len(topics).to_bytes(4, "big"))
    for topic in topics:
        out += len(topic.encode()).to_bytes(2, "big") + topic.encode()
    return bytes(out + b"\xff\xff\xff\xff")


STABLE = GroupMetadataValue(
    protocol_type="consumer",
    generation=7,
    protocol="range",
    leader=member(1).member_id,
    current_state_timestamp=1_700_000_000_123,
    members=[
        member(1, sub=subscription("orders"), asg=b"\x00\x01asg"),
        member(2, instance="static-2", sub=subscription("orders", "payments")),
    ],
)
EMPTY = GroupMetadataValue("consumer", 8, None, None, 1_700_000_000_999, [])


def test_key_layouts():
    assert encode_key(OffsetKey("g", "t", 3)) == bytes.fromhex("0001 0001 67 0001 74 00000003")
    assert encode_key(GroupMetadataKey("gé")) == bytes.fromhex("0002 0003 67c3a9")
    assert decode_key(bytes.fromhex("0000 0001 67 0001 74 00000003")) == OffsetKey("g", "t", 3)
    assert decode_key(bytes.fromhex("0002 0001 67")) == GroupMetadataKey("g")


@pytest.mark.parametrize("version", [3, 4, 5, 6, 7, 8, 100, -1])
def test_other_key_versions_are_unknown_not_malformed(version):
    with pytest.raises(UnknownRecordKey) as info:
        decode_key(version.to_bytes(2, "big", signed=True) + b"\x00\x01g")
    assert info.value.version == version
    assert not isinstance(info.value, ValueError)


def test_offset_value_layouts_and_version_choice():
    value = OffsetValue(offset=5, leader_epoch=2, metadata="m", commit_timestamp=10)
    v3 = bytes.fromhex("0003 0000000000000005 00000002 0001 6d 000000000000000a")
    assert encode_offset_value(value) == v3
    expiring = dataclasses.replace(value, expire_timestamp=99)
    v1 = bytes.fromhex("0001 0000000000000005 0001 6d 000000000000000a 0000000000000063")
    assert encode_offset_value(expiring) == v1  # v1 has no leader epoch
    assert decode_offset_value(v1) == dataclasses.replace(expiring, leader_epoch=-1)
    v4 = bytes.fromhex("0004 0000000000000005 00000002 02 6d 000000000000000a 00")
    assert encode_offset_value(value, version=4) == v4
    assert decode_offset_value(v4) == value


@pytest.mark.parametrize("version", range(5))
def test_offset_value_every_version_round_trips_what_it_holds(version):
    value = OffsetValue(2**63 - 1, 2**31 - 1, UNICODE, 1_700_000_000_000, 1_800_000_000_000)
    expected = dataclasses.replace(
        value,
        leader_epoch=value.leader_epoch if version >= 3 else -1,
        expire_timestamp=value.expire_timestamp if version == 1 else -1,
    )
    data = encode_offset_value(value, version=version)
    assert data[:2] == version.to_bytes(2, "big")
    assert decode_offset_value(data) == expected


def test_group_value_version_choice_and_empty_group():
    data = encode_group_value(EMPTY)
    assert data[:2] == b"\x00\x03"
    assert decode_group_value(data) == EMPTY
    assert encode_group_value(GroupMetadataValue("", 0, None, None, -1, [])) == bytes.fromhex(
        "0003 0000 00000000 ffff ffff ffffffffffffffff 00000000"
    )


@pytest.mark.parametrize("version", range(5))
def test_group_value_every_version_round_trips_what_it_holds(version):
    data = encode_group_value(STABLE, version=version)
    assert data[:2] == version.to_bytes(2, "big")
    expected = dataclasses.replace(
        STABLE,
        current_state_timestamp=STABLE.current_state_timestamp if version >= 2 else -1,
        members=[
            dataclasses.replace(
                m,
                group_instance_id=m.group_instance_id if version >= 3 else None,
                # v0 has no rebalance timeout: Kafka's loader uses the session timeout
                rebalance_timeout=m.rebalance_timeout if version >= 1 else m.session_timeout,
            )
            for m in STABLE.members
        ],
    )
    assert decode_group_value(data) == expected


def test_flexible_versions_skip_unknown_tagged_fields():
    value = OffsetValue(5, 2, "m", 10)
    data = encode_offset_value(value, version=4)
    tagged = data[:-1] + bytes.fromhex("02 00 02 abcd 05 01 ff")  # tags 0 and 5
    assert decode_offset_value(tagged) == value

    group = GroupMetadataValue("consumer", 1, "range", "m", 5, [member(1)])
    data = encode_group_value(group, version=4)
    assert decode_group_value(data[:-1] + bytes.fromhex("01 07 03 010203")) == group


def test_long_bytes_use_multi_byte_varints_in_flexible_versions():
    big = bytes(range(256)) * 3
    group = GroupMetadataValue("consumer", 1, "range", "m", 5, [member(1, sub=big, asg=big)])
    assert decode_group_value(encode_group_value(group, version=4)) == group


# --------------------------------------------------------------------------------------
# Malformed input


def _truncations(data: bytes):
    return [data[:n] for n in range(len(data))]


@pytest.mark.parametrize(
    ("decode", "data"),
    [
        (decode_key, encode_key(OffsetKey(UNICODE, "topic", 1))),
        (decode_key, encode_key(GroupMetadataKey(UNICODE))),
        (decode_offset_value, encode_offset_value(OffsetValue(1, 2, "meta", 3))),
        (decode_offset_value, encode_offset_value(OffsetValue(1, 2, "meta", 3), version=4)),
        (decode_group_value, encode_group_value(STABLE)),
        (decode_group_value, encode_group_value(STABLE, version=4)),
    ],
)
def test_every_truncation_and_trailing_bytes_are_malformed(decode, data):
    for cut in [*_truncations(data), data + b"\x00"]:
        with pytest.raises(MalformedOffsetsRecord):
            decode(cut)


@pytest.mark.parametrize(
    ("decode", "hex_data"),
    [
        (decode_offset_value, "0005 0000000000000005 0001 6d 000000000000000a"),  # version 5
        (decode_offset_value, "ffff 0000000000000005 0001 6d 000000000000000a"),  # version -1
        (decode_offset_value, "0000 0000000000000005 ffff 000000000000000a"),  # null metadata
        (decode_offset_value, "0000 0000000000000005 fffe 000000000000000a"),  # length -2
        (decode_offset_value, "0000 0000000000000005 0001 ff 000000000000000a"),  # not UTF-8
        (decode_offset_value, "0004 0000000000000005 00000002 00 000000000000000a 00"),  # null
        (decode_offset_value, "0004 0000000000000005 00000002 01 000000000000000a 05"),  # tags
        (decode_group_value, "0005 0000 00000000 ffff ffff ffffffffffffffff 00000000"),
        (decode_group_value, "0003 ffff 00000000 ffff ffff ffffffffffffffff 00000000"),
        (decode_group_value, "0003 0000 00000000 ffff ffff ffffffffffffffff ffffffff"),  # null
        (decode_group_value, "0003 0000 00000000 ffff ffff ffffffffffffffff 7fffffff"),
        (decode_group_value, "0004 01 00000000 00 00 ffffffffffffffff 00 00"),  # null members
        (decode_key, "0001 0001 67 0001 74 000000"),
        (decode_key, "00"),
        (decode_key, ""),
    ],
)
def test_malformed_bytes_raise_a_value_error(decode, hex_data):
    with pytest.raises(MalformedOffsetsRecord) as info:
        decode(bytes.fromhex(hex_data))
    assert isinstance(info.value, ValueError)


def test_unencodable_values_raise_value_error():
    with pytest.raises(ValueError, match="longer than"):
        encode_key(GroupMetadataKey("x" * 0x8000))
    with pytest.raises(ValueError):
        encode_key(OffsetKey("g", "t", 2**31))
    with pytest.raises(ValueError):
        encode_offset_value(OffsetValue(2**63))
    with pytest.raises(ValueError):
        encode_offset_value(OffsetValue(1), version=5)
    with pytest.raises(ValueError):
        encode_group_value(EMPTY, version=-1)
    assert len(encode_key(GroupMetadataKey("x" * 0x7FFF))) == 4 + 0x7FFF


# --------------------------------------------------------------------------------------
# Properties

_text = st.text(max_size=20)
_int32 = st.integers(-(2**31), 2**31 - 1)
_int64 = st.integers(-(2**63), 2**63 - 1)
_members = st.builds(
    MemberValue,
    _text,
    st.none() | _text,
    _text,
    _text,
    _int32,
    _int32,
    st.binary(max_size=200),
    st.binary(max_size=200),
)
_groups = st.builds(
    GroupMetadataValue,
    _text,
    _int32,
    st.none() | _text,
    st.none() | _text,
    _int64,
    st.lists(_members, max_size=3),
)


@settings(max_examples=150, deadline=None)
@given(_groups, st.sampled_from([None, 3, 4]))
def test_group_values_round_trip(group, version):
    assert decode_group_value(encode_group_value(group, version=version)) == group


@settings(max_examples=150, deadline=None)
@given(st.builds(OffsetValue, _int64, _int32, _text, _int64), st.sampled_from([None, 3, 4]))
def test_offset_values_round_trip(value, version):
    assert decode_offset_value(encode_offset_value(value, version=version)) == value


@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=60))
def test_arbitrary_bytes_never_raise_anything_unexpected(data):
    for decode in (decode_offset_value, decode_group_value):
        with contextlib.suppress(MalformedOffsetsRecord):
            decode(data)
    with contextlib.suppress(MalformedOffsetsRecord, UnknownRecordKey):
        decode_key(data)


# --------------------------------------------------------------------------------------
# Against Apache Kafka 3.9.1

OFFSET_KEYS = [
    OffsetKey("group-1", "orders", 0),
    OffsetKey(UNICODE, "tópico.日本", 2**31 - 1),
    OffsetKey("", "t", 7),
]
GROUP_KEYS = [GroupMetadataKey("group-1"), GroupMetadataKey(UNICODE), GroupMetadataKey("")]
OFFSET_VALUES = [
    OffsetValue(0),
    OffsetValue(42, leader_epoch=3, metadata="", commit_timestamp=1_700_000_000_000),
    OffsetValue(2**63 - 1, 2**31 - 1, f"meta {UNICODE}", 1_700_000_000_000),
    # An expire timestamp: Kafka writes v1 (and drops the leader epoch).
    OffsetValue(17, 5, "retained", 1_700_000_000_000, expire_timestamp=1_700_086_400_000),
]
GROUP_VALUES = [
    GroupMetadataValue("", 0, None, None, -1, []),
    EMPTY,
    # Empty subscription and assignment (not a "consumer" group: Kafka would parse them).
    GroupMetadataValue(
        "connect", 1, "sessioned", "solo", 5, [dataclasses.replace(member(9), member_id="solo")]
    ),
    GroupMetadataValue(
        "consumer",
        3,
        "cooperative-sticky",
        "static-leader",
        1_700_000_000_000,
        [
            dataclasses.replace(
                member(
                    3,
                    instance=f"instance-{UNICODE}",
                    sub=subscription(*(f"topic-{i}" for i in range(30))),
                    asg=b"a" * 300,
                ),
                member_id="static-leader",
            )
        ],
    ),
    STABLE,
    GroupMetadataValue(
        "connect",
        12,
        "sessioned",
        member(4).member_id,
        1_700_000_000_000,
        [member(4, instance="i-4", sub=b"x"), member(5, asg=b"y"), member(6), member(7)],
    ),
]
NEW_PROTOCOL_KEYS = {"type": "new_protocol_keys", "group": UNICODE, "member": "member-1"}


def _group_job(group: GroupMetadataValue) -> dict:
    job = {"type": "group_value", **dataclasses.asdict(group)}
    for m in job["members"]:
        m["subscription"] = m["subscription"].hex()
        m["assignment"] = m["assignment"].hex()
    return job


@pytest.fixture(scope="module")
def kafka():
    """Kafka's answers for every sample, from one JVM launch."""
    kafka_libs()  # raises KafkaReferenceUnavailable, with instructions, if missing
    jobs = [
        *({"type": "offset_key", **dataclasses.asdict(k)} for k in OFFSET_KEYS),
        *({"type": "group_key", **dataclasses.asdict(k)} for k in GROUP_KEYS),
        *({"type": "offset_value", **dataclasses.asdict(v)} for v in OFFSET_VALUES),
        *(_group_job(g) for g in GROUP_VALUES),
        NEW_PROTOCOL_KEYS,
    ]
    answers = iter(run_java_jobs("KafkaOffsetsRecordTool", jobs))
    return {
        "offset_keys": [next(answers) for _ in OFFSET_KEYS],
        "group_keys": [next(answers) for _ in GROUP_KEYS],
        "offset_values": [next(answers) for _ in OFFSET_VALUES],
        "group_values": [next(answers) for _ in GROUP_VALUES],
        "new_protocol_keys": next(answers),
    }


def _versions(answer: dict) -> dict[int, tuple[bytes, dict]]:
    return {int(v): (bytes.fromhex(e["hex"]), e["read"]) for v, e in answer["versions"].items()}


def test_keys_match_kafka(kafka):
    for key, answer in zip(
        OFFSET_KEYS + GROUP_KEYS, kafka["offset_keys"] + kafka["group_keys"], strict=True
    ):
        assert encode_key(key).hex() == answer["written"] == answer["written_new"]
        versions = _versions(answer)
        assert set(versions) == ({0, 1} if isinstance(key, OffsetKey) else {2})
        for data, fields in versions.values():
            assert decode_key(data) == type(key)(**fields) == key


def test_kafkas_new_consumer_protocol_keys_are_unknown(kafka):
    versions = []
    for hex_key in kafka["new_protocol_keys"]["written"]:
        with pytest.raises(UnknownRecordKey) as info:
            decode_key(bytes.fromhex(hex_key))
        versions.append(info.value.version)
    assert sorted(versions) == [3, 4, 5, 6, 7, 8]


def test_offset_values_match_kafka(kafka):
    for value, answer in zip(OFFSET_VALUES, kafka["offset_values"], strict=True):
        assert answer["metadata_version"] == "3.9-IV0"
        ours = encode_offset_value(value)
        assert ours.hex() == answer["written"] == answer["written_new"]
        assert ours[:2] == (b"\x00\x01" if value.expire_timestamp != -1 else b"\x00\x03")
        versions = _versions(answer)
        assert set(versions) == {0, 1, 2, 3, 4}
        for version, (data, fields) in versions.items():
            assert decode_offset_value(data) == OffsetValue(**fields), version
            assert encode_offset_value(value, version=version) == data, version


def test_group_values_match_kafka(kafka):
    for group, answer in zip(GROUP_VALUES, kafka["group_values"], strict=True):
        ours = encode_group_value(group)
        assert ours[:2] == b"\x00\x03"
        assert ours.hex() == answer["written"]
        if len(group.members) <= 1:
            assert answer["written_by_manager"] == answer["written"]
        versions = _versions(answer)
        assert set(versions) == {0, 1, 2, 3, 4}
        for version, (data, fields) in versions.items():
            members = []
            for m in fields.pop("members"):
                m["subscription"] = bytes.fromhex(m["subscription"])
                m["assignment"] = bytes.fromhex(m["assignment"])
                # What Kafka's loader makes of it (v0: the session timeout).
                m["rebalance_timeout"] = m.pop("loader_rebalance_timeout")
                members.append(MemberValue(**m))
            assert decode_group_value(data) == GroupMetadataValue(**fields, members=members)
            assert encode_group_value(group, version=version) == data, version
