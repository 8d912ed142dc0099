"""The fetch session cache and contexts (KIP-227) as pure logic: which request metadata
opens, continues, closes or refuses a session, what an incremental response carries, and
which session the cache evicts for a new one (Kafka's FetchSession.scala rules)."""

from __future__ import annotations

import uuid

import pytest

from tidelog.protocol.errors import ErrorCode
from tidelog.server.fetch_sessions import (
    EVICTION_MS,
    NO_NEWS,
    Answer,
    FetchSessionCache,
    FetchSessionError,
    SessionPartition,
    new_context,
)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def part(partition: int, offset: int = 0, topic: str = "t") -> SessionPartition:
    return SessionPartition(topic, None, partition, offset, 1 << 20)


def answer(hw: int = 0, records: bytes = b"", error=ErrorCode.NONE) -> Answer:
    """What a read of one partition gave (which partition: its place in the list)."""
    return Answer(error, hw, 0, records)


def context(cache, session_id, epoch, asked=(), forgotten=(), *, privileged=False, ids=False):
    return new_context(
        cache,
        session_id,
        epoch,
        list(asked),
        list(forgotten),
        uses_topic_ids=ids,
        privileged=privileged,
        resolve=lambda topic_id: None,
    )


def open_session(cache, partitions: int, *, privileged: bool = False) -> int:
    full = context(cache, 0, 0, [part(p) for p in range(partitions)], privileged=privileged)
    session_id, _ = full.respond([answer()] * partitions)
    return session_id


def test_a_full_fetch_at_epoch_zero_opens_a_session_and_answers_every_partition():
    cache = FetchSessionCache(10)
    full = context(cache, 0, 0, [part(0), part(1)])
    session_id, pairs = full.respond([answer(hw=5), answer(hw=0)])
    assert session_id > 0
    assert [p.partition for p, _ in pairs] == [0, 1]
    assert len(cache) == 1 and len(cache.get(session_id).partitions) == 2


def test_a_sessionless_fetch_opens_none_and_closes_the_one_it_names():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 2)
    sessionless = context(cache, session_id, -1, [part(0)])
    assert sessionless.respond([answer()])[0] == 0
    assert len(cache) == 0


def test_no_slots_means_no_sessions():
    cache = FetchSessionCache(0)
    assert open_session(cache, 3) == 0
    assert len(cache) == 0


def test_an_incremental_response_carries_only_partitions_with_news():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 4)  # every high watermark 0
    incremental = context(cache, session_id, 1)
    assert [p.partition for p in incremental.partitions] == [0, 1, 2, 3]
    same_id, pairs = incremental.respond([answer(), answer(hw=3), answer(records=b"x"), answer()])
    assert same_id == session_id
    assert [p.partition for p, _ in pairs] == [1, 2]
    # Sent partitions go to the end of the session, so each gets its turn.
    assert [p.partition for p in context(cache, session_id, 2).partitions] == [0, 3, 1, 2]


def test_an_error_is_always_sent_and_its_partition_is_sent_again_once_it_clears():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 1)
    failing = context(cache, session_id, 1)
    _, pairs = failing.respond([answer(error=ErrorCode.NOT_LEADER_OR_FOLLOWER)])
    assert len(pairs) == 1
    _, pairs = context(cache, session_id, 2).respond([answer(hw=0)])
    assert len(pairs) == 1  # the high watermark 0 is news again after the error


def test_an_incremental_fetch_updates_added_and_forgotten_partitions():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 2)
    incremental = context(cache, session_id, 1, [part(0, offset=7), part(5)], [("t", 1)])
    assert [(p.partition, p.fetch_offset) for p in incremental.partitions] == [(0, 7), (5, 0)]
    _, pairs = incremental.respond([answer(), answer()])
    assert [p.partition for p, _ in pairs] == [5]  # new: never told its high watermark


def test_forgetting_every_partition_closes_the_session():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 1)
    emptied = context(cache, session_id, 1, forgotten=[("t", 0)])
    assert emptied.respond([])[0] == 0
    assert len(cache) == 0


@pytest.mark.parametrize(
    ("session_offset", "epoch", "code"),
    [
        (1, 1, ErrorCode.FETCH_SESSION_ID_NOT_FOUND),
        (0, 2, ErrorCode.INVALID_FETCH_SESSION_EPOCH),
    ],
)
def test_an_unknown_session_or_wrong_epoch_is_refused(session_offset, epoch, code):
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 1)
    with pytest.raises(FetchSessionError) as refused:
        context(cache, session_id + session_offset, epoch)
    assert refused.value.code == code


def test_switching_between_topic_names_and_ids_is_refused():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 1)
    with pytest.raises(FetchSessionError) as refused:
        context(cache, session_id, 1, ids=True)
    assert refused.value.code == ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR


def test_epochs_advance_and_a_replayed_epoch_is_refused():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 1)
    for epoch in (1, 2, 3):
        context(cache, session_id, epoch).respond([answer()])
    with pytest.raises(FetchSessionError):
        context(cache, session_id, 3)


def test_sessions_keyed_by_topic_id_learn_the_topic_name_at_every_fetch():
    cache = FetchSessionCache(10)
    topic_id = uuid.uuid4()
    asked = [SessionPartition("t", topic_id, 0, 0, 100)]
    full = new_context(
        cache, 0, 0, asked, [], uses_topic_ids=True, privileged=False, resolve=lambda i: "t"
    )
    session_id, _ = full.respond([answer()])
    deleted = new_context(
        cache, session_id, 1, [], [], uses_topic_ids=True, privileged=False, resolve=lambda i: None
    )
    assert [p.topic for p in deleted.partitions] == [None]


def test_a_full_cache_evicts_a_session_idle_longer_than_the_eviction_time():
    clock = Clock()
    cache = FetchSessionCache(1, clock=clock)
    idle = open_session(cache, 50)
    clock.now += EVICTION_MS / 1000 + 1
    fresh = open_session(cache, 1)
    assert fresh and cache.get(idle) is None and len(cache) == 1  # one session evicted


def test_a_young_consumer_session_is_not_evicted_for_another_consumer():
    clock = Clock()
    cache = FetchSessionCache(1, clock=clock)
    first = open_session(cache, 1)
    assert open_session(cache, 100) == 0
    assert cache.get(first) is not None


def test_a_follower_evicts_a_consumer_session_no_larger_than_its_own():
    clock = Clock()
    cache = FetchSessionCache(1, clock=clock)
    consumer = open_session(cache, 10)
    assert open_session(cache, 9, privileged=True) == 0  # smaller: worth less
    follower = open_session(cache, 10, privileged=True)  # same size, privileged: worth more
    assert follower and cache.get(consumer) is None


def test_an_old_session_is_evicted_for_a_larger_one_only():
    clock = Clock()
    cache = FetchSessionCache(1, clock=clock)
    old = open_session(cache, 10)
    clock.now += EVICTION_MS / 1000 + 1
    context(cache, old, 1).respond([answer()] * 10)  # used: not stale
    assert open_session(cache, 10) == 0  # a tie keeps the old one
    assert open_session(cache, 11)
    assert cache.get(old) is None


def test_a_fetch_answered_after_a_later_one_changed_the_session_leaves_it_as_changed():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 2)
    waiting = context(cache, session_id, 1)  # in purgatory; its client gave up on it
    context(cache, session_id, 2, forgotten=[("t", 0)]).respond([answer()])
    _, pairs = waiting.respond([answer(hw=9), answer(hw=9)])
    assert [p.partition for p, _ in pairs] == [0, 1]
    assert [p.partition for p in context(cache, session_id, 3).partitions] == [1]


def test_a_read_without_news_leaves_its_partition_out_and_what_was_sent_as_it_was():
    cache = FetchSessionCache(10)
    session_id = open_session(cache, 2)  # both sent with high watermark 0, log start 0
    first = context(cache, session_id, 1)
    quiet, moved = first.partitions
    answers = [quiet.answer_without_records(0, 0), moved.answer_without_records(3, 0)]
    assert answers[0] is NO_NEWS
    _, pairs = first.respond(answers)
    assert [(p.partition, a.high_watermark) for p, a in pairs] == [(1, 3)]
    quiet, moved = context(cache, session_id, 2).partitions  # what was sent stands
    assert quiet.answer_without_records(0, 0) is NO_NEWS
    assert moved.answer_without_records(3, 0) is NO_NEWS


def test_a_partition_outside_a_session_always_gets_a_full_answer():
    answer = part(0).answer_without_records(0, 0)
    assert answer is not NO_NEWS
    assert (answer.high_watermark, answer.log_start_offset, answer.records) == (0, 0, b"")
