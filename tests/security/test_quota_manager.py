"""Client quotas as Kafka's quota managers compute them: which entity's quota applies,
the sampled rate, the throttle time, the controller mutation token bucket. Pure logic on
a clock the test moves."""

import pytest

from tidelog.security.quotas import (
    CONTROLLER_MUTATION,
    FETCH,
    PRODUCE,
    REQUEST,
    ClientQuotas,
    QuotaWindows,
    Rate,
    resolve_quota,
)

D = "<default>"


class Entities:
    """Entity configs by (user, client id), as EntityConfigs holds them."""

    def __init__(self, configs=None):
        self.configs = dict(configs or {})

    def user(self, name):
        return self.configs.get((name, None), {})

    def client(self, client_id):
        return self.configs.get((None, client_id), {})

    def user_client(self, user, client_id):
        return self.configs.get((user, client_id), {})

    def entities(self):
        return self.configs


class Clock:
    def __init__(self):
        self.seconds = 1000.0

    def __call__(self):
        return self.seconds


WINDOWS = QuotaWindows(samples=11, window_ms=1000)

# Kafka's precedence, most specific first, with the tags a measurement is kept under.
PRECEDENCE = [
    (("alice", "app"), ("alice", "app")),
    (("alice", D), ("alice", "app")),
    (("alice", None), ("alice", "")),
    ((D, "app"), ("alice", "app")),
    ((D, D), ("alice", "app")),
    ((D, None), ("alice", "")),
    ((None, "app"), ("", "app")),
    ((None, D), ("", "app")),
]


@pytest.mark.parametrize("level", range(len(PRECEDENCE)))
def test_the_most_specific_entity_setting_the_quota_wins(level):
    entities = Entities()
    for rank, (entity, _) in enumerate(PRECEDENCE[level:], start=level):
        entities.configs[entity] = {PRODUCE: str(100 + rank), FETCH: "1"}
    # Entities above the level exist but set another quota type only.
    for entity, _ in PRECEDENCE[:level]:
        entities.configs[entity] = {FETCH: "1"}
    assert resolve_quota(entities, PRODUCE, "alice", "app") == (100 + level, PRECEDENCE[level][1])


def test_no_entity_no_quota_and_other_users_and_clients_do_not_match():
    entities = Entities({("bob", None): {PRODUCE: "1"}, (None, "other"): {PRODUCE: "1"}})
    assert resolve_quota(entities, PRODUCE, "alice", "app") is None
    assert resolve_quota(Entities(), PRODUCE, "alice", "app") is None


def test_rate_spans_at_least_all_windows_but_one_and_forgets_old_samples():
    rate = Rate(WINDOWS, now_ms=0)
    rate.record(1000, now_ms=0)
    assert rate.window_size_ms(0) == 10_000
    assert rate.measure(0) == 100
    rate.record(1000, now_ms=12_500)  # the first sample is 12.5 s old: no longer counted
    assert rate.window_size_ms(12_500) == 10_000
    assert rate.measure(12_500) == 100
    for second in range(13, 30):
        rate.record(1000, now_ms=second * 1000)
    # 11 live samples, started from 19 s to 29 s: 10 s spanned
    assert rate.window_size_ms(29_000) == 10_000
    assert rate.measure(29_000) == pytest.approx(11_000 / 10)


def test_throttle_time_is_the_excess_over_the_quota_times_the_span():
    clock = Clock()
    quotas = ClientQuotas(Entities({(D, None): {PRODUCE: "1000"}}), WINDOWS, WINDOWS, clock=clock)
    assert quotas.record(PRODUCE, "alice", "app", 10_000) == 0  # 1000/s over 10 s: at the quota
    # 15000 bytes over 10 s: 1500/s, half again the quota: throttled half the span
    assert quotas.record(PRODUCE, "alice", "app", 5_000) == 5_000
    # another user has a measurement of its own under users/<default>
    assert quotas.record(PRODUCE, "bob", "app", 10_000) == 0


def test_a_client_that_waits_out_its_throttles_is_held_to_its_quota():
    """Kafka's windows let a new client send 10 s of its quota at once, and again when
    the sample holding that burst expires: held to the quota over minutes, not seconds."""
    clock = Clock()
    entities = Entities({(None, "app"): {PRODUCE: "1000000"}})
    quotas = ClientQuotas(entities, WINDOWS, WINDOWS, clock=clock)
    start, sent = clock.seconds, 0
    while clock.seconds - start < 120:
        throttle_ms = quotas.record(PRODUCE, "ANONYMOUS", "app", 16_384)
        sent += 16_384
        clock.seconds += 0.001 + throttle_ms / 1000
    assert sent / (clock.seconds - start) == pytest.approx(1_000_000, rel=0.02)


def test_request_percentage_is_throttled_at_most_one_window_and_fetches_unrecord():
    clock = Clock()
    entities = Entities({("alice", None): {REQUEST: "10", FETCH: "100"}})
    quotas = ClientQuotas(entities, WINDOWS, WINDOWS, clock=clock)
    assert quotas.record(REQUEST, "alice", "app", 5 * 100) == 1000  # 5 s of a thread
    assert quotas.record(FETCH, "alice", "app", 2000) == 10_000  # unbounded: 1 x 10 s
    quotas.unrecord(FETCH, "alice", "app", 2000)
    assert quotas.record(FETCH, "alice", "app", 500) == 0


def test_types_no_entity_sets_are_not_measured_until_one_does():
    entities = Entities({("alice", None): {"SCRAM-SHA-256": "x"}})
    quotas = ClientQuotas(entities, WINDOWS, WINDOWS, clock=Clock())
    assert not quotas.enabled(PRODUCE)
    assert not quotas.any_enabled()
    assert quotas.record(PRODUCE, "alice", "app", 10**9) == 0
    entities.configs["alice", None] = {PRODUCE: "1"}
    assert not quotas.enabled(PRODUCE)  # until told of the change
    quotas.configs_changed("users", "alice")
    assert quotas.enabled(PRODUCE) and quotas.any_enabled()
    assert quotas.record(PRODUCE, "alice", "app", 10**9) > 0


def test_controller_mutations_take_tokens_and_a_bucket_in_debt_refuses():
    clock = Clock()
    entities = Entities({(None, D): {CONTROLLER_MUTATION: "2"}})
    quotas = ClientQuotas(entities, WINDOWS, QuotaWindows(samples=10, window_ms=1000), clock=clock)
    assert quotas.mutation_throttle_ms("alice", "other") == 0
    # a burst of 2/s * 10 s = 20 tokens; a mutation may take the bucket into debt once
    assert quotas.record_mutation("alice", "app", 30) == 5000
    assert quotas.mutation_throttle_ms("alice", "app") == 5000
    clock.seconds += 5
    assert quotas.mutation_throttle_ms("alice", "app") == 0
    # without a quota no bucket at all
    assert (
        ClientQuotas(Entities(), WINDOWS, WINDOWS, clock=clock).mutation_throttle_ms("a", "b")
        is None
    )


def test_one_response_of_the_most_a_window_allows_is_not_throttled_by_itself():
    clock = Clock()
    quotas = ClientQuotas(Entities({(None, D): {FETCH: "1000"}}), WINDOWS, WINDOWS, clock=clock)
    assert quotas.max_value_in_window(FETCH, "alice", "app") == 10_000  # 10 windows' worth
    assert quotas.max_value_in_window(PRODUCE, "alice", "app") is None
    assert quotas.record(FETCH, "alice", "app", 10_000) == 0
    assert quotas.record(FETCH, "alice", "app", 1) > 0
