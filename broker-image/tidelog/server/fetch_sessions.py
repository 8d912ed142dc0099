"""Incremental fetch sessions (KIP-227), kept as Kafka's ``FetchSession.scala`` keeps them.

A client (consumer or follower broker) that fetches many partitions sends them all once,
in a *full* fetch (session epoch 0); the broker keeps them in a session and answers with
its id. From then on the client sends *incremental* fetches (the session id and the next
epoch), naming only the partitions whose fetch position changed, added ones, and the
ones to forget; the broker reads every partition of the session and answers only those
that have records, a new high watermark or log start offset, or an error.

Request metadata (session id, epoch), as in Kafka's ``FetchMetadata``:

* id 0, epoch -1: a sessionless full fetch (every client before KIP-227);
* id 0 or X, epoch 0: a full fetch that closes session X and asks for a new session; the
  response carries the new id, or 0 when the cache has no slot for it;
* id X, epoch -1: closes X, sessionless full fetch;
* id X, epoch E > 0: incremental; FETCH_SESSION_ID_NOT_FOUND when X is not cached (the
  client falls back to a full fetch), INVALID_FETCH_SESSION_EPOCH when E is not the
  session's next epoch, FETCH_SESSION_TOPIC_ID_ERROR when the request version switches
  between topic names (below v13) and topic ids.

The cache holds ``max.incremental.fetch.session.cache.slots`` sessions. When it is full,
a new session takes the slot of the session unused longest if that one has been idle
more than two minutes (Kafka's fixed eviction time); otherwise of the least valuable
evictable session if the new one is worth more: sessions compare by partition count,
then follower (privileged) over consumer. A follower's session may evict any consumer
session, a consumer's only a session older than the eviction time.

A cached partition remembers the last high watermark and log start offset sent; a
partition with an error is cached with high watermark -1, so it is sent again once the
error goes. A partition sent in an incremental response moves to the end of the session,
so that under ``max_bytes`` every partition gets its turn.
"""

from __future__ import annotations

import random
import time
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import NamedTuple

from tidelog.protocol.errors import ErrorCode

__all__ = [
    "EVICTION_MS",
    "Answer",
    "FetchContext",
    "FetchSessionCache",
    "FetchSessionError",
    "SessionPartition",
    "new_context",
]

INVALID_SESSION_ID = 0
INITIAL_EPOCH = 0
FINAL_EPOCH = -1
EVICTION_MS = 120_000  # Kafka's MIN_INCREMENTAL_FETCH_SESSION_EVICTION_MS
_MAX_EPOCH = 2**31 - 1

TopicKey = str | uuid.UUID  # a topic's name (requests below v13) or its id (v13+)
PartitionKey = tuple[TopicKey, int]


class Answer(NamedTuple):
    """What a fetch read of one partition, before it becomes the response's
    PartitionData (only for the partitions the response carries)."""

    error_code: int
    high_watermark: int
    log_start_offset: int
    records: object  # bytes or a file slice; empty when there are none


NO_NEWS = Answer(ErrorCode.NONE, -1, -1, b"")
"""The answer of a partition read without records whose offsets the session's client
already has: an incremental response leaves it out (compared by identity)."""


@dataclass(slots=True, eq=False)
class SessionPartition:
    """One partition of a fetch: what the client asks (fetch position, limits) and, once
    cached in a session, what the broker last told it (high watermark, log start)."""

    topic: str | None  # None: a topic id this broker does not know
    topic_id: uuid.UUID | None
    partition: int
    fetch_offset: int
    partition_max_bytes: int
    current_leader_epoch: int = -1
    log_start_offset: int = -1  # the follower's own log start (followers only)
    sent_high_watermark: int = -1
    sent_log_start_offset: int = -1

    def key(self, uses_topic_ids: bool) -> PartitionKey:
        return (self.topic_id if uses_topic_ids else self.topic, self.partition)

    def take_request(self, asked: SessionPartition) -> None:
        self.fetch_offset = asked.fetch_offset
        self.partition_max_bytes = asked.partition_max_bytes
        self.current_leader_epoch = asked.current_leader_epoch
        self.log_start_offset = asked.log_start_offset

    def answer_without_records(self, high_watermark: int, log_start_offset: int) -> Answer:
        """The answer of a read that found no records: :data:`NO_NEWS` when this
        partition's session already sent both offsets. A partition not (yet) cached in
        a session has sent nothing, so it always gets a full Answer."""
        if self._sent(high_watermark, log_start_offset):
            return NO_NEWS
        return Answer(ErrorCode.NONE, high_watermark, log_start_offset, b"")

    def _sent(self, high_watermark: int, log_start_offset: int) -> bool:
        """Whether the session's client was last told these offsets."""
        return (
            high_watermark == self.sent_high_watermark
            and log_start_offset == self.sent_log_start_offset
        )

    def take_response(self, answer: Answer) -> bool:
        """Remember what ``answer`` tells the client; whether the client must be told
        it, i.e. whether the partition goes in an incremental response."""
        failed = answer.error_code != ErrorCode.NONE
        high_watermark = -1 if failed else answer.high_watermark
        changed = (
            failed
            or bool(answer.records)
            or not self._sent(high_watermark, answer.log_start_offset)
        )
        self.sent_high_watermark = high_watermark
        self.sent_log_start_offset = answer.log_start_offset
        return changed


@dataclass(eq=False)
class FetchSession:
    id: int
    privileged: bool  # a follower broker's session
    uses_topic_ids: bool
    partitions: dict[PartitionKey, SessionPartition]  # in reading order
    created: float
    last_used: float
    epoch: int = 1  # the epoch the client's next incremental fetch must carry

    def evictable_key(self) -> tuple[int, bool, int]:
        """Kafka's EvictableKey order: fewer partitions first, then consumer first."""
        return (len(self.partitions), self.privileged, self.id)


class FetchSessionCache:
    """The broker's fetch sessions, at most ``max_slots`` of them."""

    def __init__(
        self,
        max_slots: int,
        *,
        eviction_ms: int = EVICTION_MS,
        clock: Callable[[], float] = time.monotonic,
    ):
        self.max_slots = max_slots
        self._eviction = eviction_ms / 1000
        self._clock = clock
        self._sessions: dict[int, FetchSession] = {}

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, session_id: int) -> FetchSession | None:
        return self._sessions.get(session_id)

    def remove(self, session_id: int) -> FetchSession | None:
        return self._sessions.pop(session_id, None)

    def touch(self, session: FetchSession) -> None:
        session.last_used = self._clock()

    def create(
        self,
        partitions: dict[PartitionKey, SessionPartition],
        *,
        privileged: bool,
        uses_topic_ids: bool,
    ) -> int:
        """A new session holding ``partitions``; its id, or 0 when no slot is free and no
        session may be evicted for it."""
        now = self._clock()
        if len(self._sessions) >= self.max_slots and not self._evict_for(
            privileged, len(partitions), now
        ):
            return INVALID_SESSION_ID
        session_id = self._new_id()
        self._sessions[session_id] = FetchSession(
            session_id, privileged, uses_topic_ids, partitions, created=now, last_used=now
        )
        return session_id

    def _new_id(self) -> int:
        while True:
            session_id = random.randint(1, _MAX_EPOCH)
            if session_id not in self._sessions:
                return session_id

    def _evict_for(self, privileged: bool, size: int, now: float) -> bool:
        if not self._sessions:
            return False
        stalest = min(self._sessions.values(), key=lambda s: s.last_used)
        if now - stalest.last_used > self._eviction:
            return self._evict(stalest)
        evictable = [
            s
            for s in self._sessions.values()
            if now - s.created > self._eviction or (privileged and not s.privileged)
        ]
        if not evictable:
            return False
        victim = min(evictable, key=FetchSession.evictable_key)
        if (size, privileged, 0) < victim.evictable_key():
            return False
        return self._evict(victim)

    def _evict(self, session: FetchSession) -> bool:
        del self._sessions[session.id]
        return True


class FetchSessionError(Exception):
    """The fetch names a session it cannot use; the response carries only ``code``."""

    def __init__(self, code: ErrorCode):
        super().__init__(code.name)
        self.code = code


class FetchContext:
    """The partitions one Fetch reads, and how its response is made of what they gave.

    ``partitions`` is the reading order: the request's partitions for a full fetch, the
    whole session for an incremental one. :meth:`respond` takes each partition's
    Answer in that order, when the response is final (not on the re-reads of a fetch
    waiting in purgatory), and returns the session id to answer with and the
    (partition, answer) pairs the response carries."""

    def __init__(
        self,
        partitions: list[SessionPartition],
        *,
        cache: FetchSessionCache | None = None,
        session: FetchSession | None = None,
        privileged: bool = False,
        uses_topic_ids: bool = False,
    ):
        self.partitions = partitions
        self._cache = cache  # set for a full fetch that asks for a session
        self._session = session  # set for an incremental fetch
        self._privileged = privileged
        self._uses_topic_ids = uses_topic_ids

    def respond(self, answers: list[Answer]) -> tuple[int, list[tuple[SessionPartition, Answer]]]:
        if self._session is not None:
            return self._session.id, self._changed(answers)
        pairs = list(zip(self.partitions, answers, strict=True))
        if self._cache is None or not pairs:
            return INVALID_SESSION_ID, pairs
        for partition, answer in pairs:
            partition.take_response(answer)
        cached = {p.key(self._uses_topic_ids): p for p in self.partitions}
        session_id = self._cache.create(
            cached, privileged=self._privileged, uses_topic_ids=self._uses_topic_ids
        )
        return session_id, pairs

    def _changed(self, answers: list[Answer]) -> list[tuple[SessionPartition, Answer]]:
        session = self._session
        sent = []
        for partition, answer in zip(self.partitions, answers, strict=True):
            if answer is not NO_NEWS and partition.take_response(answer):
                sent.append((partition, answer))
                key = partition.key(session.uses_topic_ids)
                # To the end; a fetch that changed the session meanwhile (a client that
                # gave up on this one) may have forgotten the partition.
                if session.partitions.get(key) is partition:
                    del session.partitions[key]
                    session.partitions[key] = partition
        return sent


def new_context(
    cache: FetchSessionCache,
    session_id: int,
    epoch: int,
    asked: list[SessionPartition],
    forgotten: Iterable[PartitionKey],
    *,
    uses_topic_ids: bool,
    privileged: bool,
    resolve: Callable[[uuid.UUID], str | None],
) -> FetchContext:
    """The context of a Fetch with session ``session_id`` at ``epoch`` asking for
    ``asked`` and forgetting ``forgotten``, per the rules in the module docstring.
    ``resolve`` names a topic id (for sessions keyed by id, whose topics may have gone
    since the session began). Raises FetchSessionError for an unusable session."""
    if epoch in (INITIAL_EPOCH, FINAL_EPOCH):
        if session_id != INVALID_SESSION_ID:
            cache.remove(session_id)
        if epoch == FINAL_EPOCH or cache.max_slots <= 0:
            return FetchContext(asked)
        return FetchContext(
            asked, cache=cache, privileged=privileged, uses_topic_ids=uses_topic_ids
        )
    session = cache.get(session_id)
    if session is None:
        raise FetchSessionError(ErrorCode.FETCH_SESSION_ID_NOT_FOUND)
    if session.epoch != epoch:
        raise FetchSessionError(ErrorCode.INVALID_FETCH_SESSION_EPOCH)
    if session.uses_topic_ids != uses_topic_ids:
        raise FetchSessionError(ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR)
    _update(session, asked, forgotten)
    if not session.partitions:
        cache.remove(session_id)
        return FetchContext(asked)
    cache.touch(session)
    session.epoch = 1 if epoch >= _MAX_EPOCH else epoch + 1
    if uses_topic_ids:
        _rename(session.partitions.values(), resolve)
    return FetchContext(list(session.partitions.values()), session=session)


def _update(
    session: FetchSession, asked: list[SessionPartition], forgotten: Iterable[PartitionKey]
) -> None:
    """Kafka's FetchSession.update: partitions asked for are added or take the new
    request parameters, then the forgotten ones leave."""
    cached = session.partitions
    for partition in asked:
        key = partition.key(session.uses_topic_ids)
        known = cached.get(key)
        if known is None:
            cached[key] = partition
        else:
            known.take_request(partition)
    for key in forgotten:
        cached.pop(key, None)


def _rename(partitions: Iterable[SessionPartition], resolve) -> None:
    names: dict[uuid.UUID, str | None] = {}
    for partition in partitions:
        topic_id = partition.topic_id
        if topic_id not in names:
            names[topic_id] = resolve(topic_id)
        partition.topic = names[topic_id]
