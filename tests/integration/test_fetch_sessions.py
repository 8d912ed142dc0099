"""Incremental fetch sessions (KIP-227), checked on the wire: a proxy in front of the
broker decodes every Fetch and its answer. A kafka-python consumer of 1,000 partitions
opens a session with its first, full fetch and then names, and hears of, only the
partitions that changed; a follower broker does the same; a consumer whose session a
follower evicts falls back to a full fetch and loses nothing."""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic

from integration.broker_process import BrokerProcess
from integration.clients import FrameProxy
from tidelog.protocol import ApiKey, decode_request, decode_response
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

CONSUMER = -1


@dataclass
class FetchSeen:
    """One Fetch as it went to the broker, and the answer it got."""

    replica_id: int
    session_id: int
    epoch: int
    partitions: int  # named in the request
    forgotten: int
    error_code: int = -1
    answer_session_id: int = -1
    answered: int = -1  # partitions in the answer


class FetchRecorder(FrameProxy):
    """A proxy that records every answered Fetch, in the order the answers came."""

    def __init__(self):
        super().__init__()
        self.fetches: list[FetchSeen] = []
        self._asked: dict[tuple[int, int], FetchSeen] = {}

    def on_request(self, connection, api_key, version, frame) -> None:
        if api_key != ApiKey.FETCH:
            return
        header, body = decode_request(frame)
        replica_id = body.replica_id
        if body.replica_state is not None and body.replica_state.replica_id >= 0:
            replica_id = body.replica_state.replica_id
        seen = FetchSeen(
            replica_id,
            body.session_id,
            body.session_epoch,
            sum(len(t.partitions) for t in body.topics),
            sum(len(t.partitions) for t in body.forgotten_topics_data or ()),
        )
        with self._lock:
            self._asked[(connection, header.correlation_id)] = seen

    def on_response(self, connection, api_key, version, frame) -> bool:
        if api_key == ApiKey.FETCH:
            (correlation_id,) = struct.unpack_from(">i", frame)
            _, body = decode_response(frame, api_key, version)
            with self._lock:
                seen = self._asked.pop((connection, correlation_id))
                seen.error_code = body.error_code
                seen.answer_session_id = body.session_id
                seen.answered = sum(len(t.partitions) for t in body.responses)
                self.fetches.append(seen)
        return True

    def of(self, replica_id: int) -> list[FetchSeen]:
        with self._lock:
            return [f for f in self.fetches if f.replica_id == replica_id]


def create(bootstrap: str, name: str, assignment: dict[int, list[int]]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics([NewTopic(name, replica_assignments=assignment)])
    finally:
        admin.close()


def produce(bootstrap: str, topic: str, partitions: range, per_partition: int) -> int:
    producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all", linger_ms=5)
    for partition in partitions:
        for i in range(per_partition):
            producer.send(topic, value=b"%d-%d" % (partition, i), partition=partition)
    producer.flush(timeout=60)
    producer.close()
    return len(partitions) * per_partition


def assigned_consumer(bootstrap: str, topic: str, partitions: int) -> KafkaConsumer:
    """A consumer of every partition from offset 0, positions set by hand so that its
    first fetch names them all (no offset reset in between)."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, fetch_max_wait_ms=200)
    assigned = [TopicPartition(topic, p) for p in range(partitions)]
    consumer.assign(assigned)
    for tp in assigned:
        consumer.seek(tp, 0)
    return consumer


def consume(consumer: KafkaConsumer, count: int, timeout: float = 60) -> dict[tuple, bytes]:
    """``count`` records by (partition, offset); more, or too few in time, fail."""
    got: dict[tuple, bytes] = {}

    def polled_enough() -> bool:
        for tp, records in consumer.poll(timeout_ms=500).items():
            got.update({(tp.partition, r.offset): r.value for r in records})
        return len(got) >= count

    wait_until(polled_enough, f"{count} records consumed", timeout, interval=0)
    assert len(got) == count, f"consumed {len(got)} of {count}"
    return got


def poll_until(consumer: KafkaConsumer, check, what: str) -> None:
    """Keep a caught-up consumer fetching (it fetches only in poll) until ``check``."""

    stray = []

    def polled_and_checked() -> bool:
        stray.extend(consumer.poll(timeout_ms=100).values())
        return check()

    wait_until(polled_and_checked, what)
    assert not stray, f"records nobody produced: {stray}"


def assert_incremental_after_the_first(fetches: list[FetchSeen]) -> int:
    """The first fetch is full (answered for every partition it names) and opens a
    session; every later one continues it with the next epoch. Returns the session id."""
    first, later = fetches[0], fetches[1:]
    assert (first.session_id, first.epoch) == (0, 0), first
    assert first.error_code == ErrorCode.NONE and first.answered == first.partitions, first
    session_id = first.answer_session_id
    assert session_id > 0, first
    assert later, "no fetch after the first"
    assert [(f.session_id, f.epoch) for f in later] == [
        (session_id, epoch) for epoch in range(1, len(later) + 1)
    ]
    assert all(f.error_code == ErrorCode.NONE for f in later), later
    return session_id


def test_a_consumer_of_a_thousand_partitions_fetches_incrementally(tmp_path, zk_chroot):
    proxy = FetchRecorder()
    broker = BrokerProcess(
        tmp_path / "broker",
        zk_chroot,
        overrides={"advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}"},
    ).start()
    consumer = None
    try:
        proxy.start(broker.port)
        bootstrap = f"127.0.0.1:{proxy.port}"
        create(bootstrap, "fs-wide", {p: [1] for p in range(1000)})
        produced = produce(bootstrap, "fs-wide", range(0, 1000, 20), 40)  # 50 partitions
        consumer = assigned_consumer(bootstrap, "fs-wide", 1000)
        records = consume(consumer, produced)
        assert all(v == b"%d-%d" % key for key, v in records.items())
        poll_until(consumer, lambda: len(proxy.of(CONSUMER)) >= 10, "ten consumer fetches")
        more = produce(bootstrap, "fs-wide", range(7, 1000, 100), 3)  # 10 other partitions
        consume(consumer, more)
    finally:
        if consumer is not None:
            consumer.close()
        proxy.close()
        assert broker.stop() == 0
    fetches = proxy.of(CONSUMER)
    assert fetches[0].partitions == 1000, fetches[0]
    assert_incremental_after_the_first(fetches)
    later = fetches[1:]
    # Only the 60 partitions with records ever change: no later fetch names, or hears
    # of, more than those; a caught-up consumer's fetch names nothing and hears nothing.
    assert max(f.partitions for f in later) <= 60, later
    assert max(f.answered for f in later) <= 60, later
    assert any(f.partitions == 0 and f.answered == 0 for f in later), later


def test_followers_fetch_in_sessions_and_evict_a_consumers(tmp_path, zk_chroot):
    """With one session slot on the leader, a follower's new session takes it from the
    consumer's (a follower's session is worth more); the consumer's next incremental
    fetch gets FETCH_SESSION_ID_NOT_FOUND and it goes on with full fetches."""
    proxy = FetchRecorder()
    leader = BrokerProcess(
        tmp_path / "broker-1",
        zk_chroot,
        broker_id=1,
        overrides={
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{proxy.port}",
            "max.incremental.fetch.session.cache.slots": "1",
        },
    ).start()
    follower = BrokerProcess(tmp_path / "broker-2", zk_chroot, broker_id=2).start()
    consumer = None
    try:
        proxy.start(leader.port)
        bootstrap = f"127.0.0.1:{proxy.port}"
        create(bootstrap, "fs-consumed", {p: [1] for p in range(20)})
        produced = produce(bootstrap, "fs-consumed", range(20), 5)
        consumer = assigned_consumer(bootstrap, "fs-consumed", 20)
        consume(consumer, produced)
        poll_until(consumer, lambda: len(proxy.of(CONSUMER)) >= 3, "a session in use")
        create(bootstrap, "fs-replicated", {p: [1, 2] for p in range(20)})
        replicated = produce(bootstrap, "fs-replicated", range(20), 5)  # acks=all
        # Caught up, the follower's incremental fetch names nothing and hears nothing.
        wait_until(
            lambda: any(f.partitions == 0 and f.answered == 0 for f in proxy.of(2)[1:]),
            "a fetch of the caught-up follower",
        )
        more = produce(bootstrap, "fs-consumed", range(20), 5)
        consume(consumer, more)
    finally:
        if consumer is not None:
            consumer.close()
        proxy.close()
        assert follower.stop() == 0
        assert leader.stop() == 0
    assert replicated == 100
    followed = proxy.of(2)
    assert_incremental_after_the_first(followed)
    fetches = proxy.of(CONSUMER)
    evicted = next(
        i for i, f in enumerate(fetches) if f.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND
    )
    assert fetches[evicted].session_id > 0, fetches[evicted]
    assert_incremental_after_the_first(fetches[:evicted])
    after = fetches[evicted + 1 :]
    assert after, "no fetch after the eviction"
    # The follower holds the only slot: the consumer's fetches stay full, answered for
    # every partition they name, with no new session.
    assert all(
        (f.session_id, f.epoch, f.answer_session_id) == (0, 0, 0) and f.answered == f.partitions > 0
        for f in after
    ), after
