"""The pure consumer group (``tidelog.coordinator.group``): its state machine, protocol
choice, members and its stored form. No I/O, no clocks: times are plain numbers."""

from __future__ import annotations

import itertools
import struct

import pytest

from tidelog.coordinator.group import Group, GroupState, Member

S = GroupState

# Seed 003 四.3, as Kafka's GroupMetadata.validPreviousStates: each state and the states
# a group may enter it from. Written out here, not read from the module under test.
ALLOWED = {
    S.EMPTY: {S.PREPARING_REBALANCE},
    S.PREPARING_REBALANCE: {S.EMPTY, S.STABLE, S.COMPLETING_REBALANCE},
    S.COMPLETING_REBALANCE: {S.PREPARING_REBALANCE},
    S.STABLE: {S.COMPLETING_REBALANCE},
    S.DEAD: set(GroupState),
}


def subscription(*topics: str, user_data: bytes = b"") -> bytes:
    """ConsumerProtocolSubscription v0: int16 version, [string topics], bytes user data."""
    out = struct.pack(">hi", 0, len(topics))
    for topic in topics:
        out += struct.pack(">h", len(topic.encode())) + topic.encode()
    return out + struct.pack(">i", len(user_data)) + user_data


def member(
    member_id: str,
    *protocols: str,
    instance: str | None = None,
    protocol_type: str = "consumer",
    rebalance_ms: int = 1000,
) -> Member:
    return Member(
        member_id=member_id,
        group_instance_id=instance,
        client_id=f"client-{member_id}",
        client_host="/10.0.0.1",
        rebalance_timeout_ms=rebalance_ms,
        session_timeout_ms=500,
        protocol_type=protocol_type,
        protocols=[(name, f"{member_id}/{name}".encode()) for name in protocols],
    )


def group_of(*members: Member) -> Group:
    group = Group("g", 7, now_ms=100)
    for m in members:
        group.add(m)
    return group


# -- the transition table ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "target"),
    [(s, t) for s, t in itertools.product(GroupState, GroupState) if s in ALLOWED[t]],
    ids=lambda state: state.value,
)
def test_allowed_transition(source, target):
    group = group_of()
    group.state = source
    group.transition_to(target, now_ms=555)
    assert group.state is target
    assert group.state_timestamp == 555


@pytest.mark.parametrize(
    ("source", "target"),
    [(s, t) for s, t in itertools.product(GroupState, GroupState) if s not in ALLOWED[t]],
    ids=lambda state: state.value,
)
def test_forbidden_transition_raises_and_changes_nothing(source, target):
    group = group_of()
    group.state = source
    with pytest.raises(RuntimeError, match=f"{source.value} -> {target.value}"):
        group.transition_to(target, now_ms=555)
    assert group.state is source
    assert group.state_timestamp == 100


def test_a_new_group_is_empty_at_generation_zero():
    group = Group("g", 3, now_ms=42)
    assert (group.state, group.generation, group.state_timestamp) == (S.EMPTY, 0, 42)
    assert group.protocol_type is None and group.protocol is None and group.leader is None


# -- protocols ---------------------------------------------------------------------------


def test_protocol_chosen_by_votes_among_candidates_every_member_supports():
    # "sticky" is a's and c's first choice, but b does not support it: not a candidate.
    group = group_of(
        member("a", "sticky", "range", "roundrobin"),
        member("b", "roundrobin", "range"),
        member("c", "sticky", "roundrobin", "range"),
    )
    assert group.candidate_protocols() == {"range", "roundrobin"}
    # a votes range (its first candidate), b and c roundrobin.
    assert group.select_protocol() == "roundrobin"


def test_a_tied_vote_goes_to_the_candidate_of_the_first_member():
    group = group_of(member("a", "range", "roundrobin"), member("b", "roundrobin", "range"))
    assert group.select_protocol() == "range"


def test_which_members_a_group_supports():
    empty = group_of()
    assert empty.supports("anything", [("x", b"")])
    assert not empty.supports("", [("range", b"")])
    assert not empty.supports("consumer", [])
    group = group_of(member("a", "range", "roundrobin"), member("b", "roundrobin", "sticky"))
    assert group.supports("consumer", [("roundrobin", b"")])
    assert group.supports("consumer", [("sticky", b""), ("roundrobin", b"")])
    # "range" is a's but not b's: not supported by every member.
    assert not group.supports("consumer", [("range", b"")])
    assert not group.supports("connect", [("roundrobin", b"")])


def test_next_generation_selects_the_protocol_or_empties_the_group():
    group = group_of(member("a", "range"))
    group.transition_to(S.PREPARING_REBALANCE, 200)
    group.init_next_generation(300)
    assert (group.state, group.generation, group.protocol) == (S.COMPLETING_REBALANCE, 1, "range")
    group.transition_to(S.PREPARING_REBALANCE, 400)
    group.remove("a")
    group.init_next_generation(500)
    assert (group.state, group.generation, group.protocol) == (S.EMPTY, 2, None)
    assert group.state_timestamp == 500


# -- members -------------------------------------------------------------------------------


def test_the_first_member_leads_and_leadership_passes_on_when_it_goes():
    group = group_of(member("a", "range", protocol_type="consumer"), member("b", "range"))
    assert group.leader == "a" and group.protocol_type == "consumer"
    assert group.remove("a").member_id == "a"
    assert group.leader == "b"
    assert group.remove("nobody") is None
    group.remove("b")
    assert group.leader is None and not group.members


def test_leader_gets_every_members_metadata_of_the_chosen_protocol_followers_none():
    group = group_of(member("a", "roundrobin", "range"), member("b", "range", instance="i-b"))
    group.transition_to(S.PREPARING_REBALANCE, 1)
    group.init_next_generation(2)
    assert group.protocol == "range"
    leader = group.join_result(group.members["a"])
    assert (leader.member_id, leader.leader, leader.generation) == ("a", "a", 1)
    assert (leader.protocol_type, leader.protocol_name) == ("consumer", "range")
    assert leader.members == [("a", None, b"a/range"), ("b", "i-b", b"b/range")]
    follower = group.join_result(group.members["b"])
    assert follower.leader == "a" and follower.members == []


def test_static_member_replaced_keeps_its_place_and_assignment_and_fences_the_old_id():
    group = group_of(member("a", "range", instance="i-a"), member("b", "range"))
    group.members["a"].assignment = b"a's partitions"
    assert not group.fenced("a", "i-a")
    assert not group.fenced("b", None)  # a dynamic member is never fenced
    replaced = group.replace_static_member("i-a", "a2")
    assert replaced.member_id == "a2" and replaced.assignment == b"a's partitions"
    assert list(group.members) == ["b", "a2"] and group.leader == "a2"
    assert group.static_members == {"i-a": "a2"}
    assert group.fenced("a", "i-a") and not group.fenced("a2", "i-a")
    group.remove("a2")
    assert group.static_members == {} and group.leader == "b"


def test_all_members_joined_needs_every_member_waiting_and_no_pending_member_ids():
    group = group_of(member("a", "range"), member("s", "range", instance="i-s"))
    assert [m.member_id for m in group.dynamic_not_yet_rejoined()] == ["a"]
    group.members["a"].awaiting_join = object()  # any answer slot will do here
    assert not group.all_members_joined()  # the static member has not rejoined either
    assert group.dynamic_not_yet_rejoined() == []
    group.members["s"].awaiting_join = object()
    assert group.all_members_joined()
    group.pending_members.add("c")
    assert not group.all_members_joined()


def test_longest_rebalance_timeout_of_the_members():
    assert group_of().max_rebalance_timeout_ms() == 0
    group = group_of(member("a", "range", rebalance_ms=300), member("b", "range", rebalance_ms=9))
    assert group.max_rebalance_timeout_ms() == 300


# -- subscriptions -----------------------------------------------------------------------


def test_subscribed_topics_of_a_consumer_group():
    a, b = member("a", "range"), member("b", "range")
    a.protocols = [("range", subscription("orders", "audit", user_data=b"\x01\x02"))]
    b.protocols = [("range", subscription("orders", "payments"))]
    group = group_of(a, b)
    assert group.subscribed_topics() is None  # no protocol chosen yet
    group.transition_to(S.PREPARING_REBALANCE, 1)
    group.init_next_generation(2)
    assert group.subscribed_topics() == {"orders", "audit", "payments"}
    b.protocols = [("range", b"\x00\x00\x00\x00\x00\x05\x00")]  # five topics promised, none
    assert group.subscribed_topics() is None


def test_subscribed_topics_are_unknown_for_other_protocol_types():
    group = group_of(member("a", "connect-v1", protocol_type="connect"))
    group.transition_to(S.PREPARING_REBALANCE, 1)
    group.init_next_generation(2)
    assert group.subscribed_topics() is None


# -- the stored form -------------------------------------------------------------------------


def test_a_stable_group_read_back_from_its_stored_value():
    a = member("a", "range", "roundrobin")
    b = member("b", "roundrobin", instance="i-b")
    group = group_of(a, b)
    group.transition_to(S.PREPARING_REBALANCE, 10)
    group.init_next_generation(20)
    group.transition_to(S.STABLE, 30)
    a.assignment, b.assignment = b"to a", b"to b"
    value = group.metadata_value()
    assert (value.protocol_type, value.generation, value.protocol) == ("consumer", 1, "roundrobin")
    assert (value.leader, value.current_state_timestamp) == ("a", 30)
    assert [(m.member_id, m.subscription, m.assignment) for m in value.members] == [
        ("a", b"a/roundrobin", b"to a"),
        ("b", b"b/roundrobin", b"to b"),
    ]

    back = Group.from_value("g", 7, value)
    assert (back.state, back.generation, back.protocol, back.leader) == (
        S.STABLE,
        1,
        "roundrobin",
        "a",
    )
    assert back.state_timestamp == 30 and back.partition == 7
    assert back.static_members == {"i-b": "b"}
    assert {m.member_id: m.assignment for m in back.members.values()} == {
        "a": b"to a",
        "b": b"to b",
    }
    assert back.members["b"].metadata("roundrobin") == b"b/roundrobin"
    assert back.members["a"].session_timeout_ms == 500


def test_an_empty_group_read_back_is_empty():
    group = group_of()
    value = group.metadata_value()
    assert value.leader is None and value.members == []
    back = Group.from_value("g", 7, value)
    assert back.state is S.EMPTY and back.leader is None and not back.members


def test_a_leader_that_did_not_rejoin_hands_over_to_one_that_did():
    static_leader = member("a", "range", instance="i-a")
    joined = member("b", "range")
    group = group_of(static_leader, joined)
    assert group.leader == "a"
    joined.awaiting_join = object()  # b sent JoinGroup in this rebalance, a did not
    group.elect_joined_leader()
    assert group.leader == "b"

    static_leader.awaiting_join = object()  # both rejoined: the leader stays
    group.elect_joined_leader()
    assert group.leader == "b"
