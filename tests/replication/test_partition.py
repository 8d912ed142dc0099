"""The leader's rules for followers, the ISR and the high watermark (seed 003 四.5,
seed 004), on a real log; times are given, not read from a clock."""

from __future__ import annotations

import dataclasses

import pytest

from tidelog.records import build_batch
from tidelog.replication.partition import Partition
from tidelog.storage.log import Log

LAG_MS = 10_000


@pytest.fixture
def leader(tmp_path) -> Partition:
    """Broker 1 leads with followers 2 and 3 in the ISR, at time 1000 ms."""
    log = Log.open(tmp_path / "t-0")
    partition = Partition("t", 0, log, 1, 0, [1, 2, 3], [1, 2, 3], broker_id=1)
    partition.become(
        leader=1,
        leader_epoch=0,
        replicas=[1, 2, 3],
        isr=[1, 2, 3],
        zk_version=0,
        controller_epoch=1,
        now_ms=1000,
    )
    yield partition
    log.close()


def append(partition: Partition, count: int) -> None:
    for i in range(count):
        partition.log.append_as_leader(build_batch([(None, f"v{i}")]), partition.leader_epoch)


def test_the_high_watermark_waits_for_every_isr_member(leader):
    append(leader, 5)
    assert not leader.maybe_advance_high_watermark()  # nothing heard from 2 and 3 yet
    leader.record_follower_fetch(2, 5, 1100)
    assert not leader.maybe_advance_high_watermark()
    leader.record_follower_fetch(3, 3, 1100)
    assert leader.maybe_advance_high_watermark() and leader.high_watermark == 3
    leader.record_follower_fetch(3, 5, 1200)
    assert leader.maybe_advance_high_watermark() and leader.high_watermark == 5


def test_the_high_watermark_never_moves_back(leader):
    append(leader, 4)
    for follower in (2, 3):
        leader.record_follower_fetch(follower, 4, 1100)
    leader.maybe_advance_high_watermark()
    leader.record_follower_fetch(3, 2, 1200)  # a follower that truncated and refetches
    assert not leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 4


def test_a_follower_behind_the_end_but_keeping_pace_stays_in_sync(leader):
    append(leader, 10)
    leader.record_follower_fetch(2, 10, 1000)  # caught up at 1000
    append(leader, 10)  # end now 20
    leader.record_follower_fetch(2, 10, 5000)  # asks for the end it saw last time
    leader.record_follower_fetch(3, 20, 11_500)
    append(leader, 10)  # end now 30
    leader.record_follower_fetch(2, 20, 11_500)  # reached the end of its previous fetch
    assert leader.followers[2].last_caught_up_ms == 5000
    assert leader.shrunk_isr(now_ms=14_000, max_lag_ms=LAG_MS) is None


def test_a_follower_not_caught_up_for_the_lag_limit_leaves_the_isr(leader):
    append(leader, 10)
    leader.record_follower_fetch(2, 10, 2000)
    leader.record_follower_fetch(3, 10, 2000)
    append(leader, 10)
    leader.record_follower_fetch(3, 20, 12_500)
    assert leader.shrunk_isr(now_ms=12_000, max_lag_ms=LAG_MS) is None
    assert leader.shrunk_isr(now_ms=12_001, max_lag_ms=LAG_MS) == [1, 3]


def test_a_follower_rejoins_at_the_high_watermark_even_while_writes_go_on(leader):
    append(leader, 10)
    leader.record_follower_fetch(3, 10, 2000)
    leader.apply_isr([1, 3], zk_version=1)
    leader.maybe_advance_high_watermark()
    append(leader, 5)  # the end moves on: the follower need not reach it
    leader.record_follower_fetch(2, 9, 3000)
    assert leader.expanded_isr(2) is None  # below the high watermark (10)
    leader.record_follower_fetch(2, 12, 3100)
    assert leader.expanded_isr(2) == [1, 3, 2]


def test_a_follower_being_added_holds_the_high_watermark_until_zookeeper_answers(leader):
    """ZooKeeper may list the follower in the ISR before the leader hears back; a
    controller electing it then must find every record the leader acknowledged."""
    append(leader, 10)
    leader.record_follower_fetch(3, 10, 2000)
    leader.apply_isr([1, 3], zk_version=1)
    assert leader.maybe_advance_high_watermark() and leader.high_watermark == 10
    leader.record_follower_fetch(2, 10, 2100)
    leader.propose_isr(leader.expanded_isr(2))
    assert leader.isr == [1, 3] and leader.maximal_isr == [1, 3, 2]
    append(leader, 5)
    leader.record_follower_fetch(3, 15, 2200)
    assert not leader.maybe_advance_high_watermark()  # 2 has only 10 of 15
    assert leader.high_watermark == 10
    leader.record_follower_fetch(2, 15, 2300)
    assert leader.maybe_advance_high_watermark() and leader.high_watermark == 15
    leader.apply_isr([1, 3, 2], zk_version=2)
    assert leader.proposed_isr is None and leader.maximal_isr == [1, 3, 2]


def test_a_refused_isr_proposal_no_longer_holds_the_high_watermark(leader):
    append(leader, 10)
    leader.record_follower_fetch(3, 10, 2000)
    leader.apply_isr([1, 3], zk_version=1)
    leader.record_follower_fetch(2, 4, 2100)
    leader.propose_isr([1, 3, 2])  # as if it had qualified
    leader.maybe_advance_high_watermark()
    assert leader.high_watermark == 4
    leader.drop_isr_proposal()  # the controller changed the state meanwhile
    assert leader.maximal_isr == [1, 3]
    assert leader.maybe_advance_high_watermark() and leader.high_watermark == 10


def test_a_shrink_in_flight_still_waits_for_the_follower_it_removes(leader):
    append(leader, 10)
    leader.record_follower_fetch(2, 10, 1100)
    leader.record_follower_fetch(3, 6, 1100)
    leader.propose_isr([1, 2])
    assert leader.maximal_isr == [1, 2, 3]
    assert leader.maybe_advance_high_watermark() and leader.high_watermark == 6


def test_a_follower_rejoins_only_with_every_record_of_earlier_epochs(tmp_path):
    log = Log.open(tmp_path / "t-0")
    partition = Partition("t", 0, log, 2, 0, [1, 2], [2], broker_id=1)
    for i in range(8):
        log.append_as_leader(build_batch([(None, f"old{i}")]), 0)
    partition.become(
        leader=1, leader_epoch=1, replicas=[1, 2], isr=[1], zk_version=0, controller_epoch=1,
        now_ms=0,
    )  # fmt: skip
    partition.record_follower_fetch(2, 5, 100)
    assert partition.expanded_isr(2) is None  # its log ends inside epoch 0
    partition.record_follower_fetch(2, 8, 200)
    assert partition.expanded_isr(2) == [1, 2]
    log.close()


def test_a_follower_high_watermark_is_bounded_by_its_own_log(tmp_path):
    log = Log.open(tmp_path / "t-0")
    partition = Partition("t", 0, log, 2, 0, [1, 2], [1, 2], broker_id=1)
    partition.become(
        leader=2, leader_epoch=0, replicas=[1, 2], isr=[1, 2], zk_version=0, controller_epoch=1,
        now_ms=0,
    )  # fmt: skip
    log.append_as_leader(build_batch([(None, "a"), (None, "b")]), 0)
    assert partition.follow_high_watermark(leader_high_watermark=7)
    assert partition.high_watermark == 2
    log.close()


@pytest.mark.parametrize(("epoch", "kept"), [(1, True), (2, False)])
def test_a_leader_re_elected_in_the_next_epoch_keeps_its_followers_log_ends(leader, epoch, kept):
    """A reassignment bumps the epoch of a leader that stays: the log end offsets it
    knows still hold, so the high watermark moves on the first follower fetch of the new
    epoch. After a gap in the epochs another broker may have led, and the leader waits
    to hear from every ISR follower again."""
    append(leader, 5)
    leader.record_follower_fetch(2, 5, 1100)
    leader.record_follower_fetch(3, 3, 1100)
    assert leader.maybe_advance_high_watermark() and leader.high_watermark == 3
    leader.become(
        leader=1, leader_epoch=epoch, replicas=[1, 2, 3, 4], isr=[1, 2, 3], zk_version=1,
        controller_epoch=1, now_ms=1200,
    )  # fmt: skip
    assert leader.followers[4].log_end_offset == -1  # being added: heard of from now on
    assert leader.followers[2].last_caught_up_ms == 1200
    leader.record_follower_fetch(3, 5, 1300)
    assert leader.maybe_advance_high_watermark() is kept
    assert leader.high_watermark == (5 if kept else 3)


def _idle_at_end(leader: Partition) -> None:
    """Follower 2 has fetched everything (5 records) and asks again from the end."""
    append(leader, 5)
    leader.record_follower_fetch(2, 5, 1100)


def test_an_idle_follower_fetch_records_what_the_full_path_records(leader):
    _idle_at_end(leader)
    untouched = dataclasses.replace(leader.followers[2])
    assert leader.record_idle_follower_fetch(2, 5, current_leader_epoch=0, now_ms=2000)
    by_idle_path = leader.followers[2]
    leader.followers[2] = untouched
    leader.record_follower_fetch(2, 5, 2000)
    assert by_idle_path == leader.followers[2]
    assert by_idle_path.last_caught_up_ms == 2000
    assert leader.record_idle_follower_fetch(2, 5, current_leader_epoch=-1, now_ms=2100)


@pytest.mark.parametrize(
    ("change", "replica", "offset", "epoch"),
    [
        (None, 3, 5, 0),  # follower 3 never fetched: its log end offset is unknown
        (None, 2, 4, 0),  # asks below the end: the full path decides what it means
        (None, 2, 5, 1),  # another leader epoch: fenced or unknown by the full path
        (None, 9, 5, 0),  # not a replica of this partition
        ("append", 2, 5, 0),  # records arrived since its last fetch
        ("out of the ISR", 2, 5, 0),  # must be considered for the ISR again
        ("a follower now", 2, 5, 0),  # this broker no longer leads
    ],
)
def test_any_other_follower_fetch_takes_the_full_path_and_records_nothing(
    leader, change, replica, offset, epoch
):
    _idle_at_end(leader)
    if change == "append":
        append(leader, 1)
    elif change == "out of the ISR":
        leader.apply_isr([1, 3], zk_version=1)
    elif change == "a follower now":
        leader.become(
            leader=3, leader_epoch=1, replicas=[1, 2, 3], isr=[1, 2, 3], zk_version=1,
            controller_epoch=1, now_ms=1500,
        )  # fmt: skip
    before = {r: dataclasses.replace(state) for r, state in leader.followers.items()}
    assert not leader.record_idle_follower_fetch(replica, offset, epoch, now_ms=2000)
    assert leader.followers == before
