"""Replication quotas: how fast throttled replicas may copy, and which replicas are
throttled (seed 003 修改主题限速; Kafka's ReplicationQuotaManager).

A broker keeps three quotas: the leader's (``leader.replication.throttled.rate``, the
bytes it sends to throttled followers), the follower's
(``follower.replication.throttled.rate``, the bytes its fetchers copy for throttled
replicas) and the log-dir mover's (``replica.alter.log.dirs.io.max.bytes.per.second``).
Each measures its bytes as Kafka's SimpleRate over a SampledStat: ``samples`` windows
(``replication.quota.window.num``, 11) of ``window_ms``
(``replication.quota.window.size.seconds``, 1 s); a window whose last byte is older than
``samples * window_ms`` is forgotten, and the rate is the bytes still held divided by
the time since the oldest window started, never less than one window. The quota is
exceeded while that rate is above the bound; a bound of ``Long.MAX_VALUE`` (the
default) never throttles.

Which replicas: the topic configs ``leader.replication.throttled.replicas`` and
``follower.replication.throttled.replicas`` hold ``partition:broker`` entries or ``*``.
As in Kafka's topic config handler, each broker keeps of a list the partitions whose
entry names *itself*: the leader side lists the brokers that lead (or may lead) a
throttled partition, the follower side the brokers that copy it; ``*`` throttles every
partition of the topic on every broker. What a throttled replica then does (leave its
records out while the quota is exceeded, unless it is in sync) is up to the fetch paths,
``server/handlers/fetch.py`` and ``replication/fetcher.py``.

The clock is injected (milliseconds); the rate state is guarded by a lock, so a worker
thread (the log-dir mover) may record while the event loop reads.
"""

from __future__ import annotations

import enum
import logging
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass

__all__ = [
    "ALL_REPLICAS",
    "FOLLOWER_THROTTLED_REPLICAS",
    "LEADER_THROTTLED_REPLICAS",
    "UNLIMITED_RATE",
    "AllReplicas",
    "ReplicationQuota",
    "ThrottledReplicasError",
    "parse_throttled_replicas",
    "throttled_partitions",
]

logger = logging.getLogger(__name__)

UNLIMITED_RATE = 2**63 - 1  # Long.MAX_VALUE: no throttle
LEADER_THROTTLED_REPLICAS = "leader.replication.throttled.replicas"
FOLLOWER_THROTTLED_REPLICAS = "follower.replication.throttled.replicas"
_INT_MAX = 2**31 - 1
_ENTRY = re.compile(r"([0-9]+):([0-9]+)")


class AllReplicas(enum.Enum):
    """``*``: every partition of a topic."""

    ALL = "*"


ALL_REPLICAS = AllReplicas.ALL
Throttled = frozenset[int] | AllReplicas


class ThrottledReplicasError(ValueError):
    """A throttled-replicas list that is neither ``*`` nor ``partition:broker,...``."""

    error_code = 40  # INVALID_CONFIG


def parse_throttled_replicas(name: str, value: str) -> list[tuple[int, int]] | AllReplicas:
    """``*`` or the ``(partition, broker)`` entries of a throttled-replicas list; empty
    entries are skipped (an empty list throttles nothing), as Kafka's validator allows."""
    text = value.strip()
    if text == "*":
        return ALL_REPLICAS
    entries = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        match = _ENTRY.fullmatch(item)
        if match is None or max(int(match[1]), int(match[2])) > _INT_MAX:
            raise ThrottledReplicasError(
                f"Invalid value {value} for configuration {name}: {name} must be the literal "
                "'*' or a list of replicas in the following format: "
                "[partitionId]:[brokerId],[partitionId]:[brokerId],..."
            )
        entries.append((int(match[1]), int(match[2])))
    return entries


def throttled_partitions(name: str, value: str, broker_id: int) -> Throttled | None:
    """What a topic's list throttles on broker ``broker_id``: every partition (``*``),
    the partitions whose entry names this broker, or None for an empty list."""
    parsed = parse_throttled_replicas(name, value)
    if parsed is ALL_REPLICAS:
        return ALL_REPLICAS
    if not value.strip():
        return None
    return frozenset(partition for partition, broker in parsed if broker == broker_id)


def _now_ms() -> int:
    return int(time.monotonic() * 1000)


@dataclass
class _Sample:
    start_ms: int
    last_event_ms: int
    value: float = 0.0


class ReplicationQuota:
    """One byte-rate quota and the replicas it throttles, as described above."""

    def __init__(
        self,
        rate: int = UNLIMITED_RATE,
        *,
        samples: int = 11,
        window_ms: int = 1000,
        clock_ms: Callable[[], int] = _now_ms,
    ):
        if samples < 1 or window_ms < 1:
            raise ValueError("a quota needs at least one window of at least 1 ms")
        self._bound = rate
        self._num_samples = samples
        self._window_ms = window_ms
        self._clock_ms = clock_ms
        self._samples: list[_Sample] = []  # oldest first
        self._lock = threading.Lock()
        self._throttled: dict[str, Throttled] = {}

    # -- the rate ---------------------------------------------------------------------------

    @property
    def rate_limit(self) -> int:
        return self._bound

    def set_rate(self, bytes_per_s: int) -> None:
        """A new bound; the bytes already measured stay."""
        self._bound = bytes_per_s

    def record(self, nbytes: int) -> None:
        """Count bytes of throttled replication, whether or not the quota is exceeded."""
        now = self._clock_ms()
        with self._lock:
            current = self._samples[-1] if self._samples else None
            if current is None or now - current.start_ms >= self._window_ms:
                current = _Sample(now, now)
                self._samples.append(current)
                # One window more than measured, as Kafka keeps (the purge needs it).
                del self._samples[: -(self._num_samples + 1)]
            current.value += nbytes
            current.last_event_ms = now

    def measured_rate(self) -> float:
        """Bytes per second over the windows still held."""
        now = self._clock_ms()
        with self._lock:
            expiry = self._num_samples * self._window_ms
            self._samples = [s for s in self._samples if now - s.last_event_ms < expiry]
            if not self._samples:
                return 0.0
            total = sum(sample.value for sample in self._samples)
            elapsed = max(now - self._samples[0].start_ms, self._window_ms)
        return total * 1000 / elapsed

    def is_exceeded(self) -> bool:
        if self._bound >= UNLIMITED_RATE:
            return False
        return self.measured_rate() > self._bound

    # -- the throttled replicas ---------------------------------------------------------------

    def mark_throttled(self, topic: str, partitions: Iterable[int] | AllReplicas) -> None:
        """Throttle these partitions of ``topic`` (replacing the topic's earlier set)."""
        if partitions is ALL_REPLICAS:
            self._throttled[topic] = ALL_REPLICAS
        else:
            self._throttled[topic] = frozenset(partitions)

    def remove_throttle(self, topic: str) -> None:
        self._throttled.pop(topic, None)

    def is_throttled(self, topic: str, partition: int) -> bool:
        throttled = self._throttled.get(topic)
        if throttled is None:
            return False
        return throttled is ALL_REPLICAS or partition in throttled

    def follow_topic_config(self, topic: str, name: str, value: str, broker_id: int) -> None:
        """Apply a topic's throttled-replicas config ``name`` (its value, empty when
        unset) as this broker ``broker_id`` sees it. A value that does not parse (never
        accepted by an alter) throttles nothing."""
        try:
            throttled = throttled_partitions(name, value, broker_id)
        except ThrottledReplicasError as error:
            logger.error("topic %s: ignoring %s", topic, error)
            throttled = None
        if throttled is None:
            self.remove_throttle(topic)
        else:
            self.mark_throttled(topic, throttled)
