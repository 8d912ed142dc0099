"""What a leader awaits from its followers in a new epoch (pure logic, a given clock)."""

from __future__ import annotations

from tidelog.replication.first_fetches import OWED_FOR_S, FirstFetches


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_a_follower_owes_a_first_fetch_until_it_fetches_each_partition():
    awaited = FirstFetches(Clock())
    awaited.expect(("t", 0), [2, 3])
    awaited.expect(("t", 1), [2])
    awaited.fetched(2, ("t", 0))
    assert awaited.owes(2) and awaited.owes(3)
    awaited.fetched(2, ("t", 1))
    awaited.fetched(2, ("t", 9))  # a partition it owed nothing for
    assert not awaited.owes(2) and awaited.owes(3)


def test_a_first_fetch_is_awaited_only_for_a_while():
    clock = Clock()
    awaited = FirstFetches(clock)
    awaited.expect(("t", 0), [2])
    clock.now += OWED_FOR_S / 2
    awaited.expect(("t", 1), [2])
    clock.now += OWED_FOR_S / 2
    assert awaited.owes(2)  # partition 1 is still awaited
    clock.now += OWED_FOR_S / 2
    assert not awaited.owes(2)
