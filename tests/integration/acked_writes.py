"""An idempotent acks=all producer that writes without pause while faults are injected,
and the check that every record it saw acknowledged was kept, once, in order."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer, TopicPartition

from integration.cluster import wait_until

__all__ = ["ContinuousProducer", "assert_acknowledged_records_kept"]


class ContinuousProducer:
    """Writes numbered records round-robin over the partitions until stopped, as fast as
    it can or ``per_second`` records a second (a test that waits on something slow keeps
    what it must read back afterwards bounded); remembers what was acknowledged and
    where."""

    def __init__(
        self, bootstrap: str, topic: str, partitions: int, per_second: float | None = None
    ):
        self.topic = topic
        self.partitions = partitions
        self.per_second = per_second
        self.producer = Producer(
            {
                "bootstrap.servers": bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
                "message.timeout.ms": 120000,
                "retry.backoff.ms": 50,
            }
        )
        self.acked: dict[int, dict[int, bytes]] = {p: {} for p in range(partitions)}
        # Acknowledged without an offset: librdkafka's implicit acks, when a request with
        # an uncertain outcome (a timeout) is followed by an accepted one, prove its
        # records persisted without learning where.
        self.acked_unplaced: dict[int, list[bytes]] = {p: [] for p in range(partitions)}
        self.failed: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, error, message) -> None:
        if error is not None:
            self.failed.append(str(error))
        elif message.offset() is None:
            self.acked_unplaced[message.partition()].append(message.value())
        else:
            self.acked[message.partition()][message.offset()] = message.value()

    def _run(self) -> None:
        number = 0
        started = time.monotonic()
        while not self._stop.is_set():
            if self.per_second and number >= (time.monotonic() - started) * self.per_second:
                self.producer.poll(0.001)
                continue
            partition = number % self.partitions
            try:
                self.producer.produce(
                    self.topic, b"%d" % number, partition=partition, on_delivery=self._delivered
                )
                number += 1
            except BufferError:
                pass
            self.producer.poll(0.001 if number % 20 == 0 else 0)

    def count(self) -> int:
        return sum(len(a) for a in self.acked.values())

    def wait_for_more(self, count: int, what: str, timeout: float = 60) -> None:
        before = self.count()
        wait_until(lambda: self.count() >= before + count, what, timeout=timeout)

    def __enter__(self) -> ContinuousProducer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()
        left = self.producer.flush(120)
        assert left == 0, f"{left} records never acknowledged nor failed"


def assert_acknowledged_records_kept(
    bootstrap: str, producer: ContinuousProducer, context: str = ""
) -> None:
    """Read every partition to its last acknowledged offset: each acknowledged record is
    there at its offset (one acknowledged without an offset, somewhere in its partition),
    no offset repeats and the producer's numbers stay in order."""
    assert not producer.failed, f"{producer.failed[:5]} {context}"
    acked = producer.acked
    found = _read(bootstrap, producer.topic, {p: max(acked[p], default=-1) + 1 for p in acked})
    for partition, records in found.items():
        offsets = [offset for offset, _ in records]
        assert offsets == sorted(set(offsets)), f"partition {partition} repeats {context}"
        log = dict(records)
        lost = {o: v for o, v in acked[partition].items() if log.get(o) != v}
        assert not lost, f"partition {partition} lost {len(lost)} acked records {context}"
        numbers = [int(value) for _, value in records]
        assert numbers == sorted(
            set(numbers)
        ), f"partition {partition} disordered {context}: {_first_disorder(records)}"
        missing = set(producer.acked_unplaced[partition]) - set(log.values())
        assert not missing, f"partition {partition} lost {len(missing)} acked records {context}"


def _read(bootstrap: str, topic: str, ends: dict[int, int]) -> dict[int, list]:
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    found: dict[int, list] = {p: [] for p in ends}

    def done() -> bool:
        for message in consumer.consume(1000, 0.5):
            if not message.error():
                found[message.partition()].append((message.offset(), message.value()))
        short = {p: f"{len(found[p])} of {ends[p]}" for p in ends if len(found[p]) < ends[p]}
        assert not short, f"records read per partition short of the last acknowledged: {short}"
        return True

    try:
        wait_until(done, "every acknowledged record consumed", timeout=90)
    finally:
        consumer.close()
    return found


def _first_disorder(records: list[tuple[int, bytes]]) -> str:
    """Where a partition's numbers first stop rising: the (offset, number) pairs around
    it, and whether the number came before (a duplicate) or is merely late."""
    numbers = [int(value) for _, value in records]
    at = next(i for i in range(1, len(numbers)) if numbers[i] <= numbers[i - 1])
    seen_at = numbers.index(numbers[at])
    kind = f"a duplicate of offset {records[seen_at][0]}" if seen_at < at else "late"
    around = [(offset, int(value)) for offset, value in records[max(0, at - 3) : at + 3]]
    return f"offset {records[at][0]} holds {numbers[at]}, {kind}; around it: {around}"
