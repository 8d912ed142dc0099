"""Client quotas with the semantics of Kafka's ``ClientQuotaManager``,
``ClientRequestQuotaManager`` and ``ControllerMutationQuotaManager``: which quota applies
to a request, how its use is measured, and how long the client is throttled. Seed 003:
the ``users`` and ``clients`` znodes under ``/config`` hold the quotas with which an
operator limits the throughput or the CPU that connecting clients may use.

Quota types (the keys of ``/config/users/...`` and ``/config/clients/...``):

* ``producer_byte_rate``: bytes of Produce requests per second;
* ``consumer_byte_rate``: bytes of Fetch responses per second;
* ``request_percentage``: time spent handling the client's requests, in percent of one
  thread (``200`` is two threads' worth), measured per second;
* ``controller_mutation_rate``: partitions created or deleted per second (KIP-599),
  measured by a token bucket of ``rate * window.num * window.size.seconds`` tokens.

Which quota applies (Kafka's default quota callback): per quota type, the first of these
entities that sets it, for a request of ``user`` (the connection's principal's name) and
``client``: users/<user>/clients/<client>, users/<user>/clients/<default>, users/<user>,
users/<default>/clients/<client>, users/<default>/clients/<default>, users/<default>,
clients/<client>, clients/<default>. Clients share a measurement when they share the
entity's parts: under users/<default> each user has its own, under clients/<c> all users
of client id c share one.

Rates are Kafka's ``Rate`` over a ``SampledStat``: ``quota.window.num`` samples of
``quota.window.size.seconds``, the rate being the sum over the live samples divided by
the time they span, at least ``window.num - 1`` windows. A request is recorded, then the
rate compared with the quota; over it, the throttle time is
``(rate - quota) / quota * span`` (for ``request_percentage`` at most one window).

One record per request, never per record of a batch. A quota type that no entity sets
is not measured at all (:meth:`ClientQuotas.enabled`).
"""

from __future__ import annotations

import collections
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Protocol

from tidelog.controller.zk_data import DEFAULT_ENTITY

__all__ = [
    "CONTROLLER_MUTATION",
    "FETCH",
    "PRODUCE",
    "QUOTA_VALUE_TYPES",
    "REQUEST",
    "ClientQuotas",
    "QuotaWindows",
    "Rate",
    "TokenBucket",
    "resolve_quota",
]

PRODUCE = "producer_byte_rate"
FETCH = "consumer_byte_rate"
REQUEST = "request_percentage"
CONTROLLER_MUTATION = "controller_mutation_rate"

# Kafka's ConfigDef types of the quota keys (QuotaConfigs.userAndClientQuotaConfigs).
QUOTA_VALUE_TYPES = {
    PRODUCE: "long",
    FETCH: "long",
    REQUEST: "double",
    CONTROLLER_MUTATION: "double",
}

# A measurement unused this long is dropped (Kafka's inactive sensor expiration).
INACTIVE_EXPIRY_MS = 3600 * 1000
# How often the measurements are scanned for inactive ones.
EXPIRY_SCAN_MS = 60 * 1000

Tags = tuple[str, str]
"""(user, client id) a measurement is kept under; "" for a part the entity lacks."""


class EntityLookup(Protocol):
    """The entities' configs quotas are read from (the broker's
    :class:`~tidelog.server.entity_configs.EntityConfigs`)."""

    def user(self, name: str) -> Mapping[str, str]: ...
    def client(self, client_id: str) -> Mapping[str, str]: ...
    def user_client(self, user: str, client_id: str) -> Mapping[str, str]: ...
    def entities(self) -> Mapping[object, Mapping[str, str]]: ...


def resolve_quota(
    configs: EntityLookup, quota_type: str, user: str, client: str
) -> tuple[float, Tags] | None:
    """The quota of ``quota_type`` that applies to ``user`` with ``client``, and the
    tags its measurement is kept under; None when no entity sets one (or its value does
    not parse). Kafka's precedence, see the module."""
    d = DEFAULT_ENTITY
    candidates = (
        (configs.user_client(user, client), (user, client)),
        (configs.user_client(user, d), (user, client)),
        (configs.user(user), (user, "")),
        (configs.user_client(d, client), (user, client)),
        (configs.user_client(d, d), (user, client)),
        (configs.user(d), (user, "")),
        (configs.client(client), ("", client)),
        (configs.client(d), ("", client)),
    )
    for config, tags in candidates:
        value = config.get(quota_type)
        if value is not None:
            try:
                return float(value), tags
            except ValueError:
                return None
    return None


@dataclass(frozen=True)
class QuotaWindows:
    """``samples`` windows of ``window_ms`` each (``quota.window.num`` and
    ``quota.window.size.seconds``, or their ``controller.`` counterparts)."""

    samples: int
    window_ms: int


class Rate:
    """Kafka's ``Rate`` over a ``SampledStat``: at most ``samples`` samples, each open
    for ``window_ms`` from its first record; a sample whose last record is
    ``samples * window_ms`` old no longer counts. Times are milliseconds."""

    def __init__(self, windows: QuotaWindows, now_ms: float):
        self._windows = windows
        # [start, last record, value] of each live sample, oldest first
        self._samples: collections.deque[list[float]] = collections.deque(
            [[now_ms, now_ms, 0.0]], maxlen=windows.samples
        )
        self.last_record_ms = now_ms

    def record(self, value: float, now_ms: float) -> None:
        current = self._samples[-1]
        if now_ms - current[0] >= self._windows.window_ms:
            current = [now_ms, now_ms, 0.0]
            self._samples.append(current)
        current[1] = now_ms
        current[2] += value
        self.last_record_ms = now_ms

    def _purge(self, now_ms: float) -> None:
        horizon = self._windows.samples * self._windows.window_ms
        live = [s for s in self._samples if now_ms - s[1] < horizon]
        if len(live) != len(self._samples):
            self._samples.clear()
            self._samples.extend(live or [[now_ms, now_ms, 0.0]])

    def window_size_ms(self, now_ms: float) -> float:
        """The time the live samples span, at least ``samples - 1`` windows (Kafka's
        ``Rate.windowSize``)."""
        self._purge(now_ms)
        window_ms = self._windows.window_ms
        elapsed = now_ms - min(s[0] for s in self._samples)
        full_windows = int(elapsed // window_ms)
        if full_windows < self._windows.samples - 1:
            elapsed += (self._windows.samples - 1 - full_windows) * window_ms
        return max(elapsed, 1)

    def measure(self, now_ms: float) -> float:
        """The rate per second."""
        span_ms = self.window_size_ms(now_ms)
        return sum(s[2] for s in self._samples) * 1000 / span_ms


class TokenBucket:
    """Kafka's ``TokenBucket`` (KIP-599): ``rate`` tokens a second refill a bucket of
    ``rate * samples * window`` seconds' worth; a mutation takes a token a partition and
    may take the bucket below zero. Times are milliseconds."""

    def __init__(self, windows: QuotaWindows, rate: float, now_ms: float):
        self._windows = windows
        self._rate = rate
        self._tokens = self._burst()
        self._last_ms = now_ms
        self.last_record_ms = now_ms

    def _burst(self) -> float:
        return self._rate * self._windows.samples * self._windows.window_ms / 1000

    def tokens(self, rate: float, now_ms: float) -> float:
        """The tokens left now, under the quota ``rate`` in force."""
        self._rate = rate
        elapsed_s = max(now_ms - self._last_ms, 0) / 1000
        self._tokens = min(self._burst(), self._tokens + elapsed_s * rate)
        self._last_ms = now_ms
        return self._tokens

    def take(self, permits: float, rate: float, now_ms: float) -> None:
        self._tokens = self.tokens(rate, now_ms) - permits
        self.last_record_ms = now_ms

    def throttle_ms(self, rate: float, now_ms: float) -> int:
        """How long until the bucket holds no debt: 0 while it holds tokens."""
        tokens = self.tokens(rate, now_ms)
        return 0 if tokens >= 0 else round(-tokens / rate * 1000)


class ClientQuotas:
    """The broker's quota manager for all four quota types. ``clock`` gives seconds
    (the event loop's ``time``, as ``ConnectionContext.muted_until`` is read against);
    every method runs on the event loop."""

    def __init__(
        self,
        configs: EntityLookup,
        client_windows: QuotaWindows,
        controller_windows: QuotaWindows,
        *,
        clock: Callable[[], float] = time.monotonic,
    ):
        self._configs = configs
        self._client_windows = client_windows
        self._controller_windows = controller_windows
        self._enabled = self._types_set()
        self._clock = clock
        self._rates: dict[tuple[str, Tags], Rate] = {}
        self._buckets: dict[Tags, TokenBucket] = {}
        self._last_scan_ms = clock() * 1000

    def configs_changed(self, _entity_type: str = "", _name: str = "") -> None:
        """An entity's configs changed (an EntityConfigs subscriber): which quota types
        are set anywhere is read again; quota values are read at each request."""
        self._enabled = self._types_set()

    def _types_set(self) -> set[str]:
        return {
            key
            for config in self._configs.entities().values()
            for key in config
            if key in QUOTA_VALUE_TYPES
        }

    def any_enabled(self) -> bool:
        """Whether any entity sets any quota (else no request is measured)."""
        return bool(self._enabled)

    def enabled(self, quota_type: str) -> bool:
        """Whether any entity sets a quota of this type (else nothing is measured)."""
        return quota_type in self._enabled

    def record(self, quota_type: str, user: str, client: str, value: float) -> int:
        """Record ``value`` (bytes, or percent-seconds for ``request_percentage``) for a
        request of ``user`` with ``client``; the throttle time in ms it earns (0 within
        the quota or without one)."""
        if quota_type not in self._enabled:
            return 0
        resolved = resolve_quota(self._configs, quota_type, user, client)
        if resolved is None:
            return 0
        quota, tags = resolved
        now_ms = self._clock() * 1000
        rate = self._rates.get((quota_type, tags))
        if rate is None:
            self._expire_inactive(now_ms)
            rate = self._rates[quota_type, tags] = Rate(self._client_windows, now_ms)
        rate.record(value, now_ms)
        observed = rate.measure(now_ms)
        if observed <= quota:
            return 0
        if quota <= 0:  # Kafka's would be infinite: held for the whole span instead
            throttle = float(self._client_windows.window_ms * self._client_windows.samples)
        else:
            throttle = (observed - quota) / quota * rate.window_size_ms(now_ms)
        if quota_type == REQUEST:
            throttle = min(throttle, self._client_windows.window_ms)
        return round(throttle)

    def max_value_in_window(self, quota_type: str, user: str, client: str) -> float | None:
        """The most one request may use without being throttled by itself: the quota
        over ``window.num - 1`` windows (Kafka's ``getMaxValueInQuotaWindow``, which
        bounds a consumer's fetch); None without a quota."""
        if quota_type not in self._enabled:
            return None
        resolved = resolve_quota(self._configs, quota_type, user, client)
        if resolved is None:
            return None
        windows = self._client_windows
        return resolved[0] * (windows.samples - 1) * windows.window_ms / 1000

    def unrecord(self, quota_type: str, user: str, client: str, value: float) -> None:
        """Take back a recorded ``value`` (a throttled fetch is answered empty, so its
        bytes were never sent: Kafka's ``unrecordQuotaSensor``)."""
        resolved = resolve_quota(self._configs, quota_type, user, client)
        if resolved is None:
            return
        rate = self._rates.get((quota_type, resolved[1]))
        if rate is not None:
            rate.record(-value, self._clock() * 1000)

    def mutation_throttle_ms(self, user: str, client: str) -> int | None:
        """For a strict controller mutation quota (CreateTopics v6+, CreatePartitions
        v3+, DeleteTopics v5+): None when no quota applies, else the throttle time in
        ms, > 0 when the quota is already exceeded and the mutation must be refused
        with THROTTLING_QUOTA_EXCEEDED."""
        bucket, quota = self._bucket(user, client)
        if bucket is None:
            return None
        return bucket.throttle_ms(quota, self._clock() * 1000)

    def record_mutation(self, user: str, client: str, partitions: int) -> int:
        """Take ``partitions`` tokens for a mutation done; the throttle time in ms it
        earns (0 while the bucket is not in debt, or without a quota)."""
        bucket, quota = self._bucket(user, client)
        if bucket is None:
            return 0
        now_ms = self._clock() * 1000
        bucket.take(partitions, quota, now_ms)
        return bucket.throttle_ms(quota, now_ms)

    def _bucket(self, user: str, client: str) -> tuple[TokenBucket | None, float]:
        if CONTROLLER_MUTATION not in self._enabled:
            return None, 0.0
        resolved = resolve_quota(self._configs, CONTROLLER_MUTATION, user, client)
        if resolved is None or resolved[0] <= 0:
            return None, 0.0
        quota, tags = resolved
        bucket = self._buckets.get(tags)
        if bucket is None:
            now_ms = self._clock() * 1000
            self._expire_inactive(now_ms)
            bucket = self._buckets[tags] = TokenBucket(self._controller_windows, quota, now_ms)
        return bucket, quota

    def _expire_inactive(self, now_ms: float) -> None:
        """Drop measurements unused for an hour (scanned at most once a minute)."""
        if now_ms - self._last_scan_ms < EXPIRY_SCAN_MS:
            return
        self._last_scan_ms = now_ms
        for measurements in (self._rates, self._buckets):
            for key in [
                k for k, m in measurements.items() if now_ms - m.last_record_ms > INACTIVE_EXPIRY_MS
            ]:
                del measurements[key]
