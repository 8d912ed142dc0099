"""The confluent-kafka (librdkafka) load generator of ``make bench``, run unchanged against
Apache Kafka and tidelog: produce, consume (by ``assign``, no consumer group) and
end-to-end latency, each reporting records/s, MB/s and latency percentiles; and a paced
idempotent acks=all producer (:class:`PacedProducer`) that times a leader's failover.

As a command: ``python bench/loadgen.py produce|consume --bootstrap HOST:PORT --topic T``;
``latency-consumer`` is the consumer half of the end-to-end measurement, run as its own
process by :func:`end_to_end` so that producer and consumer never share a GIL.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import struct
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

MB = 1_000_000
_STAMP = struct.Struct(">q")


def payload(size: int) -> bytes:
    """Random upper-case letters, as kafka-producer-perf-test sends: lz4 finds a little."""
    return bytes(65 + b % 26 for b in os.urandom(size))


def percentiles(values: list[float], points=(50, 99, 99.9)) -> dict[str, float]:
    if not values:
        return {}
    ordered = sorted(values)
    last = len(ordered) - 1
    return {f"p{p:g}": ordered[min(last, round(p / 100 * last))] for p in points}


@dataclass
class Result:
    records: int
    bytes: int
    seconds: float
    latency_ms: dict[str, float] = field(default_factory=dict)

    @property
    def records_per_s(self) -> float:
        return self.records / self.seconds if self.seconds else 0.0

    @property
    def mb_per_s(self) -> float:
        return self.bytes / MB / self.seconds if self.seconds else 0.0

    def to_dict(self) -> dict:
        return {**asdict(self), "records_per_s": self.records_per_s, "mb_per_s": self.mb_per_s}


def producer_config(
    bootstrap: str, compression: str = "none", linger_ms: int = 5, acks: str = "1"
) -> dict:
    return {
        "bootstrap.servers": bootstrap,
        "acks": acks,
        "linger.ms": linger_ms,
        "batch.size": 65536,
        "compression.type": compression,
        "enable.idempotence": False,
        "queue.buffering.max.messages": 500000,
        "queue.buffering.max.kbytes": 262144,
    }


def produce(
    bootstrap: str,
    topic: str,
    count: int,
    size: int,
    *,
    compression: str = "none",
    partitions: int = 1,
    keys: int = 0,
    acks: str = "1",
    sample_every: int = 64,
    security: dict | None = None,
) -> Result:
    """Send ``count`` records of ``size`` bytes as fast as the client can; spread over
    ``partitions`` round-robin; with ``keys`` > 0 the record i has key i % keys.
    Acknowledgement latency is sampled on one record in ``sample_every``. ``security``:
    librdkafka's settings for a secured listener (S15), added to the producer's."""
    producer = Producer(producer_config(bootstrap, compression, acks=acks) | (security or {}))
    value = payload(size)
    acked: list[float] = []

    def on_delivery(sent: float):
        return lambda error, _msg: error or acked.append((time.perf_counter() - sent) * 1000)

    start = time.perf_counter()
    for i in range(count):
        key = b"key-%09d" % (i % keys) if keys else None
        callback = on_delivery(time.perf_counter()) if i % sample_every == 0 else None
        while True:
            try:
                producer.produce(topic, value, key, partition=i % partitions, on_delivery=callback)
                break
            except BufferError:
                producer.poll(0.005)
        if i % 5000 == 0:
            producer.poll(0)
    if producer.flush(300):
        raise RuntimeError(f"{len(producer)} records not acknowledged after 300 s")
    seconds = time.perf_counter() - start
    key_bytes = 13 if keys else 0
    return Result(count, count * (size + key_bytes), seconds, percentiles(acked))


def consumer_config(bootstrap: str) -> dict:
    # group.id is required by librdkafka even with assign(); nothing is ever committed.
    return {
        "bootstrap.servers": bootstrap,
        "group.id": "bench-assign",
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "fetch.max.bytes": 52428800,
        "max.partition.fetch.bytes": 10485760,
        "fetch.wait.max.ms": 100,
    }


def consume(
    bootstrap: str, topic: str, count: int, partitions: int = 1, security: dict | None = None
) -> Result:
    """Read ``count`` records from offset 0 of each partition (assign, no group);
    ``security`` as :func:`produce`'s."""
    consumer = Consumer(consumer_config(bootstrap) | (security or {}))
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = size = 0
    start = time.perf_counter()
    deadline = start + 600
    while seen < count and time.perf_counter() < deadline:
        for message in consumer.consume(min(10000, count - seen), 1):
            if not message.error():
                seen += 1
                size += len(message.value())
    seconds = time.perf_counter() - start
    consumer.close()
    if seen < count:
        raise RuntimeError(f"consumed {seen} of {count} records in 600 s")
    return Result(seen, size, seconds)


def latency_consumer(bootstrap: str, topic: str, count: int, out: Path) -> None:
    """Read ``count`` records from offset 0, each carrying its send time (ns, wall clock)
    in its first 8 bytes; write the end-to-end latencies (ms) as JSON to ``out``."""
    consumer = Consumer(consumer_config(bootstrap) | {"fetch.wait.max.ms": 500})
    consumer.assign([TopicPartition(topic, 0, 0)])
    consumer.consume(1, 0.5)  # connected and fetching before the producer starts
    print("ready", flush=True)
    latencies: list[float] = []  # records stamped 0 are the producer's warm-up
    deadline = time.monotonic() + 600
    while len(latencies) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)  # one at a time: a batch would wait for its last record
        now = time.time_ns()
        if message and not message.error() and (sent := _STAMP.unpack_from(message.value())[0]):
            latencies.append((now - sent) / 1e6)
    consumer.close()
    out.write_text(json.dumps(latencies))


def end_to_end(
    bootstrap: str, topic: str, *, rate_mb: float, size: int, seconds: float, work: Path
) -> tuple[Result, list[float]]:
    """Produce at a fixed rate (``linger.ms=1``) while a consumer process reads, after a
    two-second warm-up; returns the produce result and every measured record's
    produce → receive latency in ms (wall clock, both processes on this machine)."""
    count = int(rate_mb * MB / size * seconds)
    out = work / f"latency-{topic}.json"
    consumer = subprocess.Popen(
        [
            sys.executable,
            __file__,
            "latency-consumer",
            "--bootstrap",
            bootstrap,
            "--topic",
            topic,
            "--count",
            str(count),
            "--out",
            str(out),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert consumer.stdout is not None
    consumer.stdout.readline()
    producer = Producer(producer_config(bootstrap, linger_ms=1))
    body = payload(size)[_STAMP.size :]
    # Warm-up (stamp 0, not measured): metadata known, connections open on both sides.
    warm_up_until = time.monotonic() + 2
    while time.monotonic() < warm_up_until:
        producer.produce(topic, _STAMP.pack(0) + body, partition=0)
        producer.flush(10)
        time.sleep(0.01)
    interval = size / (rate_mb * MB)
    start = time.perf_counter()
    for i in range(count):
        pause = start + i * interval - time.perf_counter()
        if pause > 0:
            time.sleep(pause)
        producer.produce(topic, _STAMP.pack(time.time_ns()) + body, partition=0)
        producer.poll(0)
    producer.flush(60)
    elapsed = time.perf_counter() - start
    if consumer.wait(120) != 0:
        raise RuntimeError("the latency consumer failed")
    latencies = json.loads(out.read_text())
    return Result(count, count * size, elapsed, percentiles(latencies)), latencies


class Acknowledgements:
    """When each acknowledged record of a paced producer was sent and acknowledged
    (``time.perf_counter``, CLOCK_MONOTONIC), in the order the acknowledgements came,
    and the failures; what a failover is timed from."""

    def __init__(self) -> None:
        self.acked: list[tuple[float, float]] = []  # (sent, acknowledged)
        self.failed: list[str] = []

    def first_ack_after(self, moment: float, timeout: float = 300) -> float:
        """Seconds from ``moment`` to the first acknowledgement of a record sent after it."""
        seen, deadline = 0, time.perf_counter() + timeout
        while time.perf_counter() < deadline and not self.failed:
            acked = self.acked[seen:]
            seen += len(acked)
            for sent, at in acked:
                if sent > moment:
                    return at - moment
            time.sleep(0.001)
        raise RuntimeError(f"no record sent after the moment was acknowledged: {self.failed[:3]}")


class PacedProducer(Acknowledgements):
    """In a thread, an idempotent acks=all producer sends a ``size``-byte record to one
    partition about every ``interval`` seconds until the ``with`` block ends, noting when
    each acknowledged record was sent and acknowledged."""

    def __init__(
        self, bootstrap: str, topic: str, partition: int = 0, size: int = 1024, interval=0.001
    ):
        super().__init__()
        self.producer = Producer(
            producer_config(bootstrap, acks="all")
            | {"enable.idempotence": True, "message.timeout.ms": 300000}
        )
        self.topic, self.partition, self.interval = topic, partition, interval
        self.value = payload(size)
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _delivered(self, sent: float):
        def callback(error, _message) -> None:
            if error is None:
                self.acked.append((sent, time.perf_counter()))
            else:
                self.failed.append(str(error))

        return callback

    def _run(self) -> None:
        while not self._done.wait(self.interval):
            sent = time.perf_counter()
            callback = self._delivered(sent)
            with contextlib.suppress(BufferError):  # full while no leader answers: skip
                self.producer.produce(
                    self.topic, self.value, partition=self.partition, on_delivery=callback
                )
            self.producer.poll(0)

    def __enter__(self) -> PacedProducer:
        self._thread.start()
        return self

    def __exit__(self, *_) -> None:
        self._done.set()
        self._thread.join()
        left = self.producer.flush(60)
        if left or self.failed:
            raise RuntimeError(f"{left} records unacknowledged, failures: {self.failed[:3]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mode", choices=["produce", "consume", "latency-consumer"])
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--compression", default="none")
    parser.add_argument("--partitions", type=int, default=1)
    parser.add_argument("--acks", default="1")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    if args.mode == "latency-consumer":
        latency_consumer(args.bootstrap, args.topic, args.count, args.out)
        return
    if args.mode == "produce":
        result = produce(
            args.bootstrap,
            args.topic,
            args.count,
            args.size,
            compression=args.compression,
            partitions=args.partitions,
            acks=args.acks,
        )
    else:
        result = consume(args.bootstrap, args.topic, args.count, args.partitions)
    print(json.dumps(result.to_dict()))


if __name__ == "__main__":
    main()
