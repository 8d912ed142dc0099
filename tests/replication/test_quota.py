"""Replication quotas (seed 003 修改主题限速, Kafka's ReplicationQuotaManager): the
throttled-replicas lists as each broker reads them, and the byte rate over sampled
windows; the clock is a test's own."""

from __future__ import annotations

import pytest

from tidelog.replication.quota import (
    ALL_REPLICAS,
    FOLLOWER_THROTTLED_REPLICAS,
    LEADER_THROTTLED_REPLICAS,
    UNLIMITED_RATE,
    ReplicationQuota,
    ThrottledReplicasError,
    parse_throttled_replicas,
    throttled_partitions,
)


class Clock:
    def __init__(self) -> None:
        self.now_ms = 1_000_000

    def __call__(self) -> int:
        return self.now_ms


@pytest.fixture
def clock() -> Clock:
    return Clock()


def quota(clock: Clock, rate: int = 1000) -> ReplicationQuota:
    """11 windows of 1 s, Kafka's defaults."""
    return ReplicationQuota(rate, samples=11, window_ms=1000, clock_ms=clock)


# -- the lists -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("*", ALL_REPLICAS),
        (" * ", ALL_REPLICAS),
        ("", []),
        ("0:1", [(0, 1)]),
        ("0:1,1:2, 2:3 ", [(0, 1), (1, 2), (2, 3)]),
        ("0:1,", [(0, 1)]),  # Kafka's validator lets an empty entry pass
    ],
)
def test_a_list_is_star_or_partition_broker_entries(value, parsed):
    assert parse_throttled_replicas(LEADER_THROTTLED_REPLICAS, value) == parsed


@pytest.mark.parametrize(
    "value", ["0", "0-1", "a:1", "0:b", "0:1:2", "*,0:1", "**", "-1:2", "0:1;1:2", "0:99999999999"]
)
def test_anything_else_is_refused_with_kafkas_message(value):
    with pytest.raises(ThrottledReplicasError) as refused:
        parse_throttled_replicas(FOLLOWER_THROTTLED_REPLICAS, value)
    assert str(refused.value) == (
        f"Invalid value {value} for configuration {FOLLOWER_THROTTLED_REPLICAS}: "
        f"{FOLLOWER_THROTTLED_REPLICAS} must be the literal '*' or a list of replicas in the "
        "following format: [partitionId]:[brokerId],[partitionId]:[brokerId],..."
    )


def test_each_broker_keeps_the_partitions_whose_entry_names_it():
    value = "0:1,1:2,2:1,3:3"
    assert throttled_partitions(LEADER_THROTTLED_REPLICAS, value, 1) == {0, 2}
    assert throttled_partitions(LEADER_THROTTLED_REPLICAS, value, 2) == {1}
    assert throttled_partitions(LEADER_THROTTLED_REPLICAS, value, 4) == frozenset()
    assert throttled_partitions(LEADER_THROTTLED_REPLICAS, "*", 4) is ALL_REPLICAS
    assert throttled_partitions(LEADER_THROTTLED_REPLICAS, " ", 1) is None


def test_a_topic_config_marks_replaces_and_removes_throttles(clock):
    q = quota(clock)
    q.follow_topic_config("t", LEADER_THROTTLED_REPLICAS, "0:1,1:2", broker_id=1)
    assert q.is_throttled("t", 0)
    assert not q.is_throttled("t", 1)  # its entry names broker 2
    assert not q.is_throttled("other", 0)
    q.follow_topic_config("t", LEADER_THROTTLED_REPLICAS, "*", broker_id=1)
    assert q.is_throttled("t", 1) and q.is_throttled("t", 7)
    q.follow_topic_config("t", LEADER_THROTTLED_REPLICAS, "", broker_id=1)
    assert not q.is_throttled("t", 0)
    q.mark_throttled("t", [3])
    assert q.is_throttled("t", 3) and not q.is_throttled("t", 0)
    q.remove_throttle("t")
    assert not q.is_throttled("t", 3)


def test_a_stored_list_that_does_not_parse_throttles_nothing(clock):
    q = quota(clock)
    q.mark_throttled("t", ALL_REPLICAS)
    q.follow_topic_config("t", FOLLOWER_THROTTLED_REPLICAS, "0-1", broker_id=1)
    assert not q.is_throttled("t", 0)


# -- the rate ------------------------------------------------------------------------------


def test_the_quota_is_exceeded_while_the_rate_is_above_the_bound(clock):
    q = quota(clock, rate=1000)
    q.record(1000)
    assert q.measured_rate() == 1000  # never less than one window of time
    assert not q.is_exceeded()  # at the bound is within it
    q.record(1)
    assert q.is_exceeded()
    clock.now_ms += 1500
    assert q.measured_rate() == pytest.approx(1001 / 1.5)
    assert not q.is_exceeded()


def test_bytes_count_even_while_exceeded(clock):
    q = quota(clock, rate=100)
    for _ in range(5):
        q.record(1000)
    assert q.measured_rate() == 5000


def test_the_rate_spans_the_windows_since_the_oldest_one(clock):
    q = quota(clock, rate=1000)
    for _ in range(10):
        q.record(1500)
        clock.now_ms += 1000
    # 15000 bytes over the 10 s since the first window started.
    assert q.measured_rate() == 1500
    assert q.is_exceeded()


def test_windows_older_than_all_samples_are_forgotten(clock):
    q = quota(clock, rate=1000)
    q.record(50_000)
    assert q.is_exceeded()
    clock.now_ms += 10_999
    assert q.is_exceeded()  # still within 11 windows of 1 s
    clock.now_ms += 1
    assert q.measured_rate() == 0
    assert not q.is_exceeded()


def test_each_window_is_forgotten_on_its_own(clock):
    q = ReplicationQuota(10, samples=2, window_ms=1000, clock_ms=clock)
    for _ in range(5):
        q.record(100)
        clock.now_ms += 1000
    clock.now_ms -= 1000
    # Windows whose last byte is 2 s old or more are gone: 200 bytes since the oldest
    # window left started, 1 s ago.
    assert q.measured_rate() == 200


def test_long_max_never_throttles_and_a_new_rate_applies_at_once(clock):
    q = quota(clock, rate=UNLIMITED_RATE)
    q.record(10**15)
    assert not q.is_exceeded()
    q.set_rate(10)
    assert q.rate_limit == 10 and q.is_exceeded()
    q.set_rate(UNLIMITED_RATE)
    assert not q.is_exceeded()


def test_a_quota_needs_a_window():
    with pytest.raises(ValueError):
        ReplicationQuota(samples=0)
