"""A follower's fetcher and a leader epoch that moves while a request is out, on the
two-broker harness of :mod:`replication.test_throttled_fetch` (real logs, the leader's
handlers behind a real socket server).

Each LeaderAndIsr gives the fetcher a fresh state for the partition (it finds its
divergence point again, then fetches). An answer to a request sent under the old state
must not touch the fresh one: Kafka's fetcher applies a partition's answer only while
its fetch state is the one the request was built from.
"""

from __future__ import annotations

from replication.test_throttled_fetch import (  # noqa: F401 (leader: a fixture)
    FOLLOWER,
    LEADER,
    WAIT_S,
    Follower,
    Leader,
    leader,
    run_with_follower,
)
from tidelog.protocol.errors import ErrorCode
from tidelog.replication import fetcher
from waiting import wait_until_async

BACKOFF_MS = 60_000  # far longer than any wait here: a partition put off is seen stuck
LONG_POLL_MS = 5_000  # the follower's fetch waits at the leader while the epoch moves
IDLE_POLL_MS = 60_000  # a fetch of idle partitions alone would outlast every wait here


async def caught_up(leader: Leader, follower: Follower, partition: int) -> None:  # noqa: F811
    await wait_until_async(
        lambda: follower.end_offset(partition) == leader.log(partition).log_end_offset,
        f"the follower caught up on partition {partition}",
        WAIT_S,
    )


async def fetch_waiting(follower: Follower) -> int:
    """Wait until a fetch of the follower waits at the leader; how many were answered
    before it (a fetcher has one fetch out at a time)."""
    await wait_until_async(
        lambda: follower.fetches_arrived > len(follower.fetched),
        "a fetch waiting at the leader",
        WAIT_S,
    )
    return len(follower.fetched)


async def answered_and_asked_again(follower: Follower, answered: int) -> None:
    """The leader answered the follower's fetch number ``answered + 1``, and the next one
    arrived: the follower has read that answer (each broker's requests are in order)."""
    await wait_until_async(
        lambda: len(follower.fetched) > answered and follower.fetches_arrived > answered + 1,
        f"fetch {answered + 1} answered and the next one sent",
        WAIT_S,
    )


async def follow_two_partitions(leader: Leader, follower: Follower) -> None:  # noqa: F811
    """Partitions 0 and 1, led by broker 1 in epoch 1 (one fetcher on broker 2 serves
    both), with the follower caught up on each."""
    for partition in (0, 1):
        leader.lead(partition, [LEADER, FOLLOWER], epoch=1)
        leader.produce(partition)
        follower.follow(partition, epoch=1)
    await caught_up(leader, follower, 0)
    await caught_up(leader, follower, 1)


def test_an_answer_to_the_old_epoch_does_not_hold_up_the_new_one(tmp_path, leader):  # noqa: F811
    """Partitions 0 and 1 follow broker 1, so one fetcher serves both and keeps running
    through partition 0's LeaderAndIsr. The follower learns epoch 2 of partition 0
    first, then the leader: the fetch the follower had waiting at the leader under epoch
    1 comes back FENCED_LEADER_EPOCH. Applied to the new state it would put the
    partition off for ``replica.fetch.backoff.ms``, and a follower in the ISR would hold
    up every acks=all write for that long."""

    async def scenario(follower: Follower, _clock):
        await follow_two_partitions(leader, follower)

        follower.follow(0, epoch=2)  # its fetch is waiting at the leader
        leader.lead(0, [LEADER, FOLLOWER], epoch=2)  # which answers it FENCED_LEADER_EPOCH
        leader.produce(0, batches=1)
        await caught_up(leader, follower, 0)

    run_with_follower(tmp_path, leader, scenario, max_wait_ms=LONG_POLL_MS, backoff_ms=BACKOFF_MS)


def test_a_leader_behind_the_followers_epoch_is_asked_again_soon(tmp_path, leader):  # noqa: F811
    """The follower learns epoch 2 before the leader does (as when the controller is
    the follower and tells itself first): its OffsetForLeaderEpoch is answered
    UNKNOWN_LEADER_EPOCH. Once the leader takes epoch 2 the follower catches up, long
    before ``replica.fetch.backoff.ms`` (a minute here) has passed."""

    async def scenario(follower: Follower, _clock):
        leader.lead(0, [LEADER, FOLLOWER], epoch=1)
        leader.produce(0)
        follower.follow(0, epoch=1)
        await caught_up(leader, follower, 0)

        follower.follow(0, epoch=2)
        await wait_until_async(  # asked at once, and answered UNKNOWN_LEADER_EPOCH
            lambda: any(a.get(0) == ErrorCode.UNKNOWN_LEADER_EPOCH for a in follower.epoch_answers),
            "partition 0's OffsetForLeaderEpoch answered UNKNOWN_LEADER_EPOCH",
            WAIT_S,
        )
        leader.lead(0, [LEADER, FOLLOWER], epoch=2)
        leader.produce(0, batches=1)
        await caught_up(leader, follower, 0)

    run_with_follower(tmp_path, leader, scenario, max_wait_ms=LONG_POLL_MS, backoff_ms=BACKOFF_MS)


def test_a_put_off_partition_does_not_wait_for_a_long_poll_of_the_others(tmp_path, leader):  # noqa: F811
    """The leader takes epoch 2 of partition 0 before the follower hears of it (the end
    of a reassignment): the follower's waiting fetch comes back FENCED_LEADER_EPOCH and
    partition 0 is put off until its LeaderAndIsr. Meanwhile the fetcher asks for idle
    partition 1 alone; had that fetch waited for data as long as
    ``replica.fetch.wait.max.ms``, partition 0's fresh state, and every acks=all write to
    it, would have waited with it."""

    async def scenario(follower: Follower, _clock):
        await follow_two_partitions(leader, follower)

        waiting = await fetch_waiting(follower)
        leader.lead(0, [LEADER, FOLLOWER], epoch=2)  # answers the waiting fetch FENCED
        await answered_and_asked_again(follower, waiting)  # partition 1 alone is out now
        follower.follow(0, epoch=2)
        leader.produce(0, batches=1)
        await caught_up(leader, follower, 0)

    run_with_follower(tmp_path, leader, scenario, max_wait_ms=IDLE_POLL_MS, backoff_ms=BACKOFF_MS)


def test_a_fenced_follower_waits_for_its_leader_and_isr_not_for_a_poll_of_the_others(
    tmp_path,
    leader,  # noqa: F811
    monkeypatch,
):
    """As above, the leader takes epoch 2 of partition 0 first, as the controller tells
    it at the start and at the end of every reassignment: the follower's fetch comes
    back FENCED_LEADER_EPOCH while its own LeaderAndIsr is on the way. The fetcher waits
    for that LeaderAndIsr before it asks for idle partition 1 again: here a fetch of
    partition 1 alone would wait at the leader longer than the test (the bound on such
    polls, ``PUT_OFF_POLL_MS``, is set to a minute), so a fetcher that sent one first
    would leave partition 0, and every acks=all write to it, waiting that long."""
    monkeypatch.setattr(fetcher, "PUT_OFF_POLL_MS", IDLE_POLL_MS)

    async def scenario(follower: Follower, _clock):
        await follow_two_partitions(leader, follower)

        waiting = await fetch_waiting(follower)
        leader.lead(0, [LEADER, FOLLOWER], epoch=2)  # answers the waiting fetch FENCED
        await wait_until_async(  # the answer is out; the LeaderAndIsr comes after it
            lambda: len(follower.fetched) > waiting, "the waiting fetch answered", WAIT_S
        )
        follower.follow(0, epoch=2)
        leader.produce(0, batches=1)
        await caught_up(leader, follower, 0)

    run_with_follower(tmp_path, leader, scenario, max_wait_ms=IDLE_POLL_MS, backoff_ms=BACKOFF_MS)


def test_a_follower_in_a_long_poll_takes_up_a_new_partition_of_its_leader(tmp_path, leader):  # noqa: F811
    """Broker 1 takes the lead of partition 0 (a leader moved to it) while the follower's
    fetcher for broker 1 waits there in a long poll of idle partition 1, a poll that
    would outlast the test. Its LeaderAndIsr comes after the leader's: the follower owes
    the new epoch its first fetch of partition 0, so its waiting fetch comes back and
    its next ones wait only briefly until it makes it; otherwise partition 0, and every
    acks=all write to it, would wait for the poll to end."""

    async def scenario(follower: Follower, _clock):
        leader.lead(1, [LEADER, FOLLOWER], epoch=1)
        leader.produce(1)
        follower.follow(1, epoch=1)
        await caught_up(leader, follower, 1)
        waiting = await fetch_waiting(follower)  # its fetch of partition 1, at the leader

        leader.lead(0, [LEADER, FOLLOWER], epoch=1)
        leader.produce(0)
        # The follower's LeaderAndIsr comes after the leader's has sent its waiting fetch
        # back (and the follower asked again).
        await answered_and_asked_again(follower, waiting)
        follower.follow(0, epoch=1)
        await caught_up(leader, follower, 0)

    run_with_follower(tmp_path, leader, scenario, max_wait_ms=IDLE_POLL_MS, backoff_ms=BACKOFF_MS)


def test_a_leader_and_isr_that_comes_while_a_fenced_answer_is_on_its_way_is_not_lost(
    tmp_path,
    leader,  # noqa: F811
    monkeypatch,
):
    """Partition 0's waiting fetch is answered FENCED_LEADER_EPOCH and, before the
    fetcher has read that answer, a LeaderAndIsr makes the follower follow partition 2
    from the same leader. After the FENCED answer the fetcher waits for a LeaderAndIsr
    (``PUT_OFF_POLL_MS``, set to a minute here), but the one that came while the answer
    was on its way counts: partition 2 is fetched at once, not a minute later."""
    monkeypatch.setattr(fetcher, "PUT_OFF_POLL_MS", IDLE_POLL_MS)

    async def scenario(follower: Follower, _clock):
        await follow_two_partitions(leader, follower)

        leader.lead(0, [LEADER, FOLLOWER], epoch=2)  # answers the waiting fetch FENCED
        leader.lead(2, [LEADER, FOLLOWER], epoch=1)
        leader.produce(2)
        follower.follow(2, epoch=1)  # the fetcher has not read the FENCED answer yet
        await caught_up(leader, follower, 2)

    run_with_follower(tmp_path, leader, scenario, max_wait_ms=IDLE_POLL_MS, backoff_ms=BACKOFF_MS)
