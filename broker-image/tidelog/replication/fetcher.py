"""Replica fetchers: a follower copies its partitions from their leaders (seed 000 复制,
seed 004 副本同步).

One fetcher per (leader broker, fetcher id) with ``num.replica.fetchers`` ids; a
partition goes to fetcher ``(31 * hash(topic) + partition) % num.replica.fetchers`` of
its leader, so a leader's partitions spread over that many connections. A fetcher
loops over one connection:

1. partitions that just became followers first find where their log diverges from the
   leader's: OffsetForLeaderEpoch with the latest epoch of the follower's log, then
   truncation to min(the leader's end offset for that epoch, the follower's end offset
   for the epoch the leader answered), never by high watermark unless the log has no
   epoch at all (seed 003 四.5 Leader Epoch);
2. then Fetch with the broker's replica id from each log end offset; whole batches are
   appended as they are (offsets and epochs assigned by the leader), and the follower's
   high watermark becomes min(leader's, own log end offset);
3. replication throttles (seed 003 修改主题限速, Kafka's ``shouldFollowerThrottle``): a
   partition that ``follower.replication.throttled.replicas`` throttles on this broker
   is left out of the fetch request while the broker's follower quota is exceeded,
   unless it is in sync: the leader's high watermark at its last answer without an
   error was not beyond its log end offset or, until the first such answer in an
   epoch, the LeaderAndIsr that started the epoch named this broker in the ISR.
   (Kafka starts every epoch out of sync; a throttled follower that the leader counts
   in its ISR then holds up every acks=all write for as long as the quota stays
   exceeded, as at the end of each throttled reassignment.) When every ready
   partition is left out, the fetcher backs off ``replica.fetch.backoff.ms``. Bytes
   fetched for throttled partitions are recorded in that quota;
4. fetches go in an incremental fetch session (KIP-227, :mod:`.fetch_session`): after
   the first, a fetch names only the partitions whose fetch offset (or other request
   field) changed, and the leader answers only those with news. A session error makes
   the next fetch full, at once; a lost connection too.

A partition the leader no longer leads (or leads in another epoch) waits for the
controller's next LeaderAndIsr; a lost connection is retried with back-off. A leader
still in an older epoch than the follower's (UNKNOWN_LEADER_EPOCH: its own
LeaderAndIsr is on the way, as when the controller is the follower and told itself
first) is asked again after 20 ms, then at doubling intervals up to
``replica.fetch.backoff.ms``: waiting the whole back-off (1 s) would hold up every
acks=all write to the partition for that long after each election. For the same reason,
the LeaderAndIsr that ends a wait (a leader epoch bumped at the start and at the end of
a reassignment) must not sit behind a long poll of idle partitions:

- an answer that this follower is behind (FENCED_LEADER_EPOCH, NOT_LEADER_OR_FOLLOWER:
  the controller told the leader first, and its LeaderAndIsr to this broker is on the
  way) makes the fetcher wait for that LeaderAndIsr, at most :data:`PUT_OFF_POLL_MS`,
  before it fetches the other partitions again; a LeaderAndIsr (or a partition
  removed) since the fetch went out ends that wait before it begins;
- while any partition is put off, a fetch of the others waits at most
  :data:`PUT_OFF_POLL_MS` for data, not ``replica.fetch.wait.max.ms``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import dataclass

from tidelog.admin.async_connection import CONNECTION_ERRORS, AsyncBrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.records.errors import RecordsError
from tidelog.replication.fetch_session import SESSION_ERRORS, FetchSessionHandler
from tidelog.replication.quota import ReplicationQuota
from tidelog.security.client_security import PLAINTEXT, ClientSecurity
from tidelog.storage.errors import StorageError
from tidelog.storage.log import Log

__all__ = ["FetcherConfig", "ReplicaFetcher", "fetcher_id"]

logger = logging.getLogger(__name__)

FETCH_VERSION = 12  # topic names, replica id in the body, current leader epoch
OFFSET_FOR_LEADER_EPOCH_VERSION = 3
# First wait before a leader behind the follower's epoch is asked again (then doubling).
LEADER_BEHIND_RETRY_S = 0.02
# The longest a fetch waits for data while another partition of its fetcher is put off,
# and the longest the fetcher waits for the LeaderAndIsr of a follower found behind:
# the LeaderAndIsr or the retry that ends the wait must not sit behind a long poll.
PUT_OFF_POLL_MS = 50
# The leader is in a newer epoch than this follower or leads no more: the controller
# told it first, and the LeaderAndIsr to this broker is on its way.
FOLLOWER_BEHIND = {ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH}
# The leader moved or has not heard of the new epoch yet: wait for LeaderAndIsr.
WAIT_FOR_CONTROLLER = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.UNKNOWN_TOPIC_ID,
    ErrorCode.KAFKA_STORAGE_ERROR,
}

TopicPartition = tuple[str, int]


def fetcher_id(topic: str, partition: int, fetchers: int) -> int:
    """Which of a leader's fetchers copies this partition: Kafka's spread, in Java's
    32-bit arithmetic (topic names are ASCII, so characters are UTF-16 code units)."""
    value = 0
    for char in topic:
        value = (31 * value + ord(char)) & 0xFFFFFFFF
    value = (31 * value + partition) & 0xFFFFFFFF
    signed = value - (1 << 32) if value & 0x80000000 else value
    return (0 if signed == -(1 << 31) else abs(signed)) % fetchers


@dataclass(frozen=True)
class FetcherConfig:
    replica_id: int
    max_wait_ms: int  # replica.fetch.wait.max.ms
    min_bytes: int  # replica.fetch.min.bytes
    partition_max_bytes: int  # replica.fetch.max.bytes
    response_max_bytes: int  # replica.fetch.response.max.bytes
    backoff_ms: int  # replica.fetch.backoff.ms
    socket_timeout_ms: int  # replica.socket.timeout.ms
    connect_timeout_ms: int = 10000  # socket.connection.setup.timeout.ms
    security: ClientSecurity = PLAINTEXT  # the inter-broker listener's


@dataclass
class _FetchState:
    leader_epoch: int
    truncating: bool = True  # must find its divergence point before fetching
    delayed_until: float = 0.0
    leader_behind_answers: int = 0  # UNKNOWN_LEADER_EPOCH answers in this epoch
    # The leader's high watermark minus our log end offset after the last answer
    # without an error; until then 0 if the epoch began with this broker in the ISR,
    # else unknown.
    lag: int | None = None

    @property
    def in_sync(self) -> bool:
        return self.lag is not None and self.lag <= 0


class ReplicaFetcher:
    """Copies a set of partitions from one leader broker, as described above.

    ``follower`` is the replica manager: it owns the partitions and applies what the
    fetcher learns (``follower_log``, ``append_as_follower``, ``truncate_follower``,
    ``follower_start_at``). ``quota`` is the broker's follower quota (none: unthrottled)."""

    def __init__(
        self,
        leader: int,
        endpoint: Callable[[], tuple[str, int] | None],
        follower,
        config: FetcherConfig,
        quota: ReplicationQuota | None = None,
    ):
        self.leader = leader
        self._endpoint = endpoint
        self._follower = follower
        self._config = config
        self._quota = quota if quota is not None else ReplicationQuota()
        self._partitions: dict[TopicPartition, _FetchState] = {}
        self._changed = asyncio.Event()
        self._task: asyncio.Task | None = None
        self._connection: AsyncBrokerConnection | None = None
        self._session = FetchSessionHandler()

    def is_empty(self) -> bool:
        return not self._partitions

    def add(self, topic: str, partition: int, leader_epoch: int, in_sync: bool) -> None:
        """Follow the partition in ``leader_epoch``; ``in_sync``: the LeaderAndIsr that
        started the epoch named this broker in the ISR."""
        lag = 0 if in_sync else None
        self._partitions[(topic, partition)] = _FetchState(leader_epoch, lag=lag)
        self._changed.set()
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"replica-fetcher-{self.leader}")

    def remove(self, topic: str, partition: int) -> None:
        if self._partitions.pop((topic, partition), None) is not None:
            self._changed.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        self._disconnect()

    # -- the loop ------------------------------------------------------------------------------

    async def _run(self) -> None:
        backoff = self._config.backoff_ms / 1000
        while True:
            ready = self._ready()
            if not ready:
                await self._wait_for_change(self._next_wake())
                continue
            try:
                truncating = [tp for tp in ready if self._partitions[tp].truncating]
                if truncating:
                    await self._truncate(truncating)
                else:
                    await self._fetch(ready)
            except CONNECTION_ERRORS as error:
                logger.info("replica fetcher for broker %d: %s; retrying", self.leader, error)
                self._disconnect()
                await asyncio.sleep(backoff)

    def _ready(self) -> list[TopicPartition]:
        now = asyncio.get_running_loop().time()
        return [tp for tp, state in self._partitions.items() if state.delayed_until <= now]

    def _next_wake(self) -> float | None:
        if not self._partitions:
            return None
        now = asyncio.get_running_loop().time()
        return max(0.0, min(s.delayed_until for s in self._partitions.values()) - now)

    def _max_wait_ms(self, ready: list[TopicPartition]) -> int:
        """``replica.fetch.wait.max.ms``, or :data:`PUT_OFF_POLL_MS` while a partition
        is put off (not among the ``ready`` ones): its fresh state from a LeaderAndIsr,
        or its retry, would otherwise wait for a long poll of idle partitions to end,
        holding up every acks=all write to it for that long."""
        if len(ready) < len(self._partitions):
            return min(self._config.max_wait_ms, PUT_OFF_POLL_MS)
        return self._config.max_wait_ms

    async def _wait_for_change(self, timeout: float | None) -> None:
        self._changed.clear()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._changed.wait()

    def _delay(self, key: TopicPartition, error: int | None = None) -> None:
        """Put the partition off ``replica.fetch.backoff.ms``, or less after ``error``
        UNKNOWN_LEADER_EPOCH (see the module's docstring)."""
        state = self._partitions.get(key)
        if state is None:
            return
        backoff = self._config.backoff_ms / 1000
        if error == ErrorCode.UNKNOWN_LEADER_EPOCH:
            backoff = min(backoff, LEADER_BEHIND_RETRY_S * 2**state.leader_behind_answers)
            state.leader_behind_answers += 1
        state.delayed_until = asyncio.get_running_loop().time() + backoff

    async def _connect(self) -> AsyncBrokerConnection:
        if self._connection is None:
            endpoint = self._endpoint()
            if endpoint is None:
                raise ConnectionError(f"no endpoint known for broker {self.leader}")
            self._connection = await AsyncBrokerConnection.open(
                *endpoint,
                client_id=f"broker-{self._config.replica_id}-fetcher",
                connect_timeout_s=self._config.connect_timeout_ms / 1000,
                security=self._config.security,
            )
        return self._connection

    def _disconnect(self) -> None:
        if self._connection is not None:
            self._connection.close()
            self._connection = None
        self._session.handle_error()

    async def _request(self, api_key: ApiKey, version: int, body: dict):
        connection = await self._connect()
        # asyncio.timeout, not wait_for: Python 3.11's wait_for can swallow a cancellation.
        async with asyncio.timeout(
            (self._config.socket_timeout_ms + self._config.max_wait_ms) / 1000
        ):
            return await connection.request(api_key, version, body)

    # -- truncation by leader epoch -------------------------------------------------------------

    def _logs_by_topic(self, keys: list[TopicPartition]) -> dict[str, list[tuple[int, Log]]]:
        """The logs of the partitions still followed, per topic; a partition whose log
        went (no longer a follower here) is dropped."""
        found: dict[str, list[tuple[int, Log]]] = {}
        for topic, partition in keys:
            log = self._follower.follower_log(topic, partition)
            if log is None:
                self._partitions.pop((topic, partition), None)
            else:
                found.setdefault(topic, []).append((partition, log))
        return found

    def _epoch(self, topic: str, partition: int) -> int:
        return self._partitions[(topic, partition)].leader_epoch

    def _states(self, keys) -> dict[TopicPartition, _FetchState]:
        """The fetch state each partition of a request is sent under. Its answer is
        applied only while that is still the partition's state: a LeaderAndIsr that came
        meanwhile started a new one (as Kafka's fetcher checks), which an answer for the
        old epoch, such as FENCED_LEADER_EPOCH, must not put off or mark truncated."""
        return {key: self._partitions[key] for key in keys}

    async def _truncate(self, keys: list[TopicPartition]) -> None:
        logs = self._logs_by_topic(keys)
        if not logs:
            return
        asked = {(t, p): log.latest_epoch for t, found in logs.items() for p, log in found}
        sent_under = self._states(asked)
        topics = {
            topic: [
                {
                    "partition": p,
                    "current_leader_epoch": self._epoch(topic, p),
                    "leader_epoch": asked[(topic, p)],
                }
                for p, _ in found
            ]
            for topic, found in logs.items()
        }
        response = await self._request(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            OFFSET_FOR_LEADER_EPOCH_VERSION,
            {
                "replica_id": self._config.replica_id,
                "topics": [{"topic": t, "partitions": p} for t, p in topics.items()],
            },
        )
        for topic in response.topics:
            for answer in topic.partitions:
                key = (topic.topic, answer.partition)
                state = self._partitions.get(key)
                if state is None or state is not sent_under.get(key):
                    continue
                if answer.error_code != ErrorCode.NONE:
                    self._delay(key, answer.error_code)
                    continue
                self._follower.truncate_follower(
                    *key, asked[key], answer.leader_epoch, answer.end_offset
                )
                state.truncating = False

    # -- fetching -------------------------------------------------------------------------------

    def _throttled(self, keys: list[TopicPartition]) -> set[TopicPartition]:
        """The partitions left out of this fetch by the follower quota."""
        candidates = {
            key
            for key in keys
            if not self._partitions[key].in_sync and self._quota.is_throttled(*key)
        }
        return candidates if candidates and self._quota.is_exceeded() else set()

    async def _fetch(self, keys: list[TopicPartition]) -> None:
        throttled = self._throttled(keys)
        if len(throttled) == len(keys):  # nothing to ask for: Kafka's empty fetch
            await self._wait_for_change(self._config.backoff_ms / 1000)
            return
        logs = self._logs_by_topic([key for key in keys if key not in throttled])
        if not logs:
            return
        offsets = {(t, p): log.log_end_offset for t, found in logs.items() for p, log in found}
        wanted = {
            (topic, p): (
                self._epoch(topic, p),
                offsets[(topic, p)],
                log.log_start_offset,
                self._config.partition_max_bytes,
            )
            for topic, found in logs.items()
            for p, log in found
        }
        to_send, forgotten = self._session.build(wanted)
        sent_under = self._states(offsets)
        self._changed.clear()  # a change from here on ends the wait for a behind answer
        response = await self._request(
            ApiKey.FETCH,
            FETCH_VERSION,
            {
                "replica_id": self._config.replica_id,
                "max_wait_ms": self._max_wait_ms(keys),
                "min_bytes": self._config.min_bytes,
                "max_bytes": self._config.response_max_bytes,
                "isolation_level": 0,
                "session_id": self._session.session_id,
                "session_epoch": self._session.epoch,
                "topics": _fetch_topics(to_send),
                "forgotten_topics_data": _by_topic(forgotten),
                "rack_id": "",
            },
        )
        if not self._session.handle_response(response.error_code, response.session_id):
            if response.error_code not in SESSION_ERRORS:
                for key in offsets:
                    if self._partitions.get(key) is sent_under[key]:
                        self._delay(key)
            return
        behind = False
        for topic in response.responses:
            for data in topic.partitions:
                key = (topic.topic, data.partition_index)
                if key in offsets and self._partitions.get(key) is sent_under[key]:
                    self._apply(key, offsets[key], data)
                    behind |= data.error_code in FOLLOWER_BEHIND
        # The behind partitions' LeaderAndIsr has not come (their states are the ones
        # sent under); one for another partition may have come while the answer was out.
        if behind and not self._changed.is_set():
            await self._wait_for_change(PUT_OFF_POLL_MS / 1000)

    def _apply(self, key: TopicPartition, fetch_offset: int, data) -> None:
        code = data.error_code
        if code == ErrorCode.NONE:
            try:
                self._follower.append_as_follower(
                    *key, fetch_offset, data.records, data.high_watermark, data.log_start_offset
                )
            except (RecordsError, StorageError) as error:
                logger.error("replica %s-%d: cannot append from the leader: %s", *key, error)
                self._delay(key)
                return
            if data.records and self._quota.is_throttled(*key):
                self._quota.record(len(data.records))
            log = self._follower.follower_log(*key)
            if log is not None:
                self._partitions[key].lag = max(0, data.high_watermark - log.log_end_offset)
        elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
            if fetch_offset < data.log_start_offset:
                # The leader deleted what we lack: start over at its log start.
                self._follower.follower_start_at(*key, data.log_start_offset)
            else:
                self._partitions[key].truncating = True  # find the divergence again
        else:
            if code not in WAIT_FOR_CONTROLLER:
                logger.warning("replica %s-%d: fetch error %s", *key, ErrorCode(code).name)
            self._delay(key, code)


def _fetch_topics(partitions: dict[TopicPartition, tuple[int, int, int, int]]) -> list[dict]:
    """The Fetch request's topics for ``partitions`` (each with its current leader epoch,
    fetch offset, log start offset and size limit)."""
    return _by_topic(
        (
            topic,
            {
                "partition": partition,
                "current_leader_epoch": epoch,
                "fetch_offset": offset,
                "log_start_offset": log_start,
                "partition_max_bytes": max_bytes,
            },
        )
        for (topic, partition), (epoch, offset, log_start, max_bytes) in partitions.items()
    )


def _by_topic(items) -> list[dict]:
    """``(topic, entry)`` pairs as a request's topics, each topic's entries together."""
    topics: dict[str, list] = {}
    for topic, entry in items:
        topics.setdefault(topic, []).append(entry)
    return [{"topic": topic, "partitions": found} for topic, found in topics.items()]
