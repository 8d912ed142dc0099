"""An idempotent acks=all producer that writes without pause while faults are injected,
and the check that every record it saw acknowledged was kept, once, in order.

The producer is Apache Kafka's ``VerifiableProducer``, the tool Kafka's own system tests
check acknowledged writes with: its Java producer retries a batch that an old leader
answered NOT_LEADER_OR_FOLLOWER with the batch's own producer epoch and sequence, so the
new leader, which replicated the batch already, deduplicates it. librdkafka (confluent-
kafka 2.16) may instead renumber such a batch under a bumped epoch when another
partition's request meets a sequence gap during the same leader move (its open issue
4953, seen here as 45 records written twice after a reassignment); no broker can tell
that re-send from new records, so it would hide what these tests are for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import NamedTuple

from confluent_kafka import Consumer, TopicPartition

from kafka_reference import JVM_FLAGS, java_executable, kafka_libs
from waiting import wait_until

__all__ = ["ContinuousProducer", "assert_acknowledged_records_kept"]

VERIFIABLE_PRODUCER = "org.apache.kafka.tools.VerifiableProducer"
PRODUCER_CONFIG = {
    "enable.idempotence": "true",
    "retries": "2147483647",  # the tool's own default is 0, which idempotence refuses
    "linger.ms": "2",
    "delivery.timeout.ms": "120000",
    "retry.backoff.ms": "50",
    "partitioner.class": "org.apache.kafka.clients.producer.RoundRobinPartitioner",
}
# Unthrottled, the Java producer writes ~145,000 records/s here and starves the brokers
# of the 2 cores; this is the pace the tests were written for (the earlier Python loop).
DEFAULT_PER_SECOND = 5000
SHUTDOWN_TIMEOUT_S = 150  # delivery.timeout.ms, and the JVM's own exit
# What a send gets when the stopping tool's shutdown hook closes the producer: during
# the close, or once it is over (the tool's send loop can still be running then). Either
# way the record never reached a batch, let alone a broker.
REFUSED_AT_CLOSE = {
    "Producer closed while send in progress",
    "Cannot perform operation after producer has been closed",
}


class Ack(NamedTuple):
    """One acknowledged record: its value and when the producer learnt of it (ms)."""

    value: bytes
    at_ms: int


class ContinuousProducer:
    """Writes increasing numbers round-robin over the partitions until stopped, about
    ``per_second`` records a second (fewer for a test that waits on something slow, so
    that what it must read back afterwards stays bounded); remembers what was
    acknowledged and where, from the tool's JSON line per acknowledgement.
    ``command_config``: Kafka's client properties to connect with (a secured cluster's),
    under the producer's own settings."""

    def __init__(
        self,
        bootstrap: str,
        topic: str,
        partitions: int,
        per_second: int = DEFAULT_PER_SECOND,
        *,
        command_config: Path | None = None,
    ):
        self.topic = topic
        self.acked: dict[int, dict[int, Ack]] = {p: {} for p in range(partitions)}
        # An offset acknowledged for a second record: (partition, offset, the first
        # record's Ack, the second's), which assert_acknowledged_records_kept reports
        # with what the log holds there.
        self.acked_twice: list[tuple[int, int, Ack, Ack]] = []
        self.failed: list[str] = []
        self._summary: dict = {}
        self._started = threading.Event()
        self._stopping = threading.Event()
        self._refused_at_close = 0
        with tempfile.NamedTemporaryFile("w", suffix=".properties", delete=False) as config:
            if command_config is not None:
                config.write(command_config.read_text() + "\n")
            config.write("".join(f"{k}={v}\n" for k, v in PRODUCER_CONFIG.items()))
        self._config_path = config.name
        self._command = [
            java_executable(),
            *JVM_FLAGS,
            "-cp",
            f"{kafka_libs()}/*",
            VERIFIABLE_PRODUCER,
            "--bootstrap-server",
            bootstrap,
            "--topic",
            topic,
            "--acks",
            "-1",
            "--producer.config",
            self._config_path,
            "--throughput",
            str(per_second),
        ]
        self._process: subprocess.Popen | None = None
        self._reader = threading.Thread(target=self._read_events, daemon=True)

    def _read_events(self) -> None:
        for line in self._process.stdout:
            if not line.startswith("{"):
                continue
            event = json.loads(line)
            name = event.get("name")
            if name == "producer_send_success":
                self._record_ack(event)
            elif name == "producer_send_error":
                if self._stopping.is_set() and event["message"] in REFUSED_AT_CLOSE:
                    self._refused_at_close += 1
                else:
                    self.failed.append(f"{event['exception']}: {event['message']}")
            elif name == "startup_complete":
                self._started.set()
            elif name == "tool_data":
                self._summary = event

    def _record_ack(self, event: dict) -> None:
        partition, offset = event["partition"], event["offset"]
        ack = Ack(event["value"].encode(), event["timestamp"])
        earlier = self.acked[partition].get(offset)
        if earlier is not None:
            self.acked_twice.append((partition, offset, earlier, ack))
        self.acked[partition][offset] = ack

    def count(self) -> int:
        return sum(len(a) for a in self.acked.values())

    def wait_for_more(self, count: int, what: str, timeout: float = 60) -> None:
        before = self.count()
        wait_until(lambda: self.count() >= before + count, what, timeout=timeout)

    def __enter__(self) -> ContinuousProducer:
        self._errors = tempfile.TemporaryFile("w+")
        self._process = subprocess.Popen(
            self._command, stdout=subprocess.PIPE, stderr=self._errors, text=True
        )
        self._reader.start()
        wait_until(
            lambda: self._started.is_set() or self._process.poll() is not None,
            "the verifiable producer started",
            timeout=60,
        )
        if not self._started.is_set():
            self._errors.seek(0)
            raise AssertionError(f"the verifiable producer failed: {self._errors.read()[-2000:]}")
        return self

    def __exit__(self, *exc) -> None:
        """Stop sending; the tool's shutdown hook closes the producer, which waits for
        every record in flight to be acknowledged or to fail, then reports its totals."""
        self._stopping.set()
        self._process.send_signal(signal.SIGTERM)
        try:
            self._process.wait(SHUTDOWN_TIMEOUT_S)
        finally:
            self._process.kill()
            self._reader.join(10)
            self._errors.close()
            os.unlink(self._config_path)
        sent, acked = self._summary.get("sent"), self._summary.get("acked")
        assert sent is not None, "the verifiable producer did not report its totals"
        left = sent - acked - len(self.failed) - self._refused_at_close
        assert left == 0, f"{left} records never acknowledged nor failed"
        seen = self.count() + len(self.acked_twice)
        assert acked == seen, f"{acked} acknowledged, {seen} reported"


def assert_acknowledged_records_kept(
    bootstrap: str,
    producer: ContinuousProducer,
    context: str = "",
    *,
    client_config: Mapping[str, str] | None = None,
) -> None:
    """Read every partition to its last acknowledged offset: no offset was acknowledged
    for two records, each acknowledged record is there at its offset, no offset repeats
    and the producer's numbers stay in order. ``client_config``: confluent-kafka settings
    of the reading consumer besides ``bootstrap`` (a secured cluster's)."""
    assert not producer.failed, f"{producer.failed[:5]} {context}"
    acked = producer.acked
    found, epochs = _read(
        {"bootstrap.servers": bootstrap, **(client_config or {})},
        producer.topic,
        {p: max(acked[p], default=-1) + 1 for p in acked},
        epochs_of={(p, o) for p, o, _, _ in producer.acked_twice},
    )
    logs = {p: dict(records) for p, records in found.items()}
    twice = [
        f"partition {p} offset {o}: {first.value!r} acknowledged at {first.at_ms} ms and "
        f"{second.value!r} at {second.at_ms} ms; the log holds {logs[p].get(o)!r} (leader "
        f"epoch {epochs.get((p, o))})"
        for p, o, first, second in producer.acked_twice
    ]
    assert not twice, f"offsets acknowledged twice {context}: {twice[:10]}"
    for partition, records in found.items():
        offsets = [offset for offset, _ in records]
        assert offsets == sorted(set(offsets)), f"partition {partition} repeats {context}"
        log = logs[partition]
        lost = {o: a.value for o, a in acked[partition].items() if log.get(o) != a.value}
        assert not lost, f"partition {partition} lost {len(lost)} acked records {context}"
        numbers = [int(value) for _, value in records]
        assert numbers == sorted(
            set(numbers)
        ), f"partition {partition} disordered {context}: {_first_disorder(records)}"


def _read(
    client: Mapping[str, str], topic: str, ends: dict[int, int], epochs_of: set[tuple[int, int]]
) -> tuple[dict[int, list], dict]:
    """Each partition's (offset, value) pairs up to ``ends``, read with the ``client``
    settings, and the leader epoch that wrote the record at each (partition, offset) of
    ``epochs_of``."""
    consumer = Consumer({**client, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in ends])
    found: dict[int, list] = {p: [] for p in ends}
    epochs: dict[tuple[int, int], int | None] = {}

    def done() -> bool:
        for message in consumer.consume(1000, 0.5):
            if not message.error():
                partition, offset = message.partition(), message.offset()
                found[partition].append((offset, message.value()))
                if (partition, offset) in epochs_of:
                    epochs[(partition, offset)] = message.leader_epoch()
        short = {p: f"{len(found[p])} of {ends[p]}" for p in ends if len(found[p]) < ends[p]}
        assert not short, f"records read per partition short of the last acknowledged: {short}"
        return True

    try:
        wait_until(done, "every acknowledged record consumed", timeout=90)
    finally:
        consumer.close()
    return found, epochs


def _first_disorder(records: list[tuple[int, bytes]]) -> str:
    """Where a partition's numbers first stop rising: the (offset, number) pairs around
    it, and whether the number came before (a duplicate) or is merely late."""
    numbers = [int(value) for _, value in records]
    at = next(i for i in range(1, len(numbers)) if numbers[i] <= numbers[i - 1])
    seen_at = numbers.index(numbers[at])
    kind = f"a duplicate of offset {records[seen_at][0]}" if seen_at < at else "late"
    around = [(offset, int(value)) for offset, value in records[max(0, at - 3) : at + 3]]
    return f"offset {records[at][0]} holds {numbers[at]}, {kind}; around it: {around}"
