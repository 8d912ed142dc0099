"""One consumer-group member as a process of its own, so that a test can SIGKILL it::

    PYTHONPATH=tests python -m integration.group_member --lib confluent \\
        --bootstrap 127.0.0.1:9092 --topic t --group g --client-id member-a

It subscribes to one topic and, until SIGTERM, polls; the records of each poll are
printed (that is their processing) and then committed synchronously, each partition at
its last record's offset + 1 — so a committed offset never runs ahead of what was
printed. On SIGTERM it closes the consumer (a dynamic member leaves the group; a static
one, with ``--instance-id``, does not) and exits 0.

stdout carries one JSON object a line, flushed at once:

* ``{"assigned": [partitions], "member_id": ..., "generation": ...}`` whenever the
  assignment differs from the last one printed (``generation`` where the library tells
  it, else null);
* ``{"records": [[partition, offset, value], ...]}`` for each non-empty poll;
* ``{"commit_error": "..."}`` when a commit fails (the records come again to whoever
  owns the partition next);
* ``{"closed": true}`` after the consumer is closed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import signal
import sys
import threading

POLL_SECONDS = 0.2
HEARTBEAT_INTERVAL_MS = 500
# Where a partition has no committed offset: the end. The tests commit offset 0 for
# every partition before members start, so that an offset lost between two owners shows
# as records never consumed rather than as records consumed again.
OFFSET_RESET = "latest"


class Output:
    def __init__(self) -> None:
        self._last_assignment: list[int] | None = None

    @staticmethod
    def emit(**fields) -> None:
        sys.stdout.write(json.dumps(fields) + "\n")
        sys.stdout.flush()

    def assignment(self, partitions, member_id: str | None, generation: int | None) -> None:
        assigned = sorted(partitions)
        if assigned != self._last_assignment:
            self._last_assignment = assigned
            self.emit(assigned=assigned, member_id=member_id, generation=generation)

    def records(self, records: list[tuple[int, int, bytes]]) -> None:
        if records:
            self.emit(records=[[p, o, v.decode()] for p, o, v in records])


def next_offsets(records: list[tuple[int, int, bytes]]) -> dict[int, int]:
    """Partition → the offset after its last record in ``records``."""
    offsets: dict[int, int] = {}
    for partition, offset, _ in records:
        offsets[partition] = max(offsets.get(partition, 0), offset + 1)
    return offsets


def python_client_settings(args: argparse.Namespace) -> dict:
    """kafka-python's and aiokafka's consumer settings (the same names in both)."""
    return {
        "bootstrap_servers": args.bootstrap,
        "group_id": args.group,
        "client_id": args.client_id,
        "group_instance_id": args.instance_id or None,
        "enable_auto_commit": False,  # committed below, after processing
        "auto_offset_reset": OFFSET_RESET,
        "session_timeout_ms": args.session_timeout_ms,
        "heartbeat_interval_ms": HEARTBEAT_INTERVAL_MS,
        "metadata_max_age_ms": 1000,
    }


def run_confluent(args: argparse.Namespace, stop: threading.Event, out: Output) -> None:
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    config = {
        "bootstrap.servers": args.bootstrap,
        "group.id": args.group,
        "client.id": args.client_id,
        "enable.auto.commit": False,  # committed below, after processing
        "auto.offset.reset": OFFSET_RESET,
        "session.timeout.ms": args.session_timeout_ms,
        "heartbeat.interval.ms": HEARTBEAT_INTERVAL_MS,
        "topic.metadata.refresh.interval.ms": 1000,
    }
    if args.instance_id:
        config["group.instance.id"] = args.instance_id
    consumer = Consumer(config)
    consumer.subscribe([args.topic])
    try:
        while not stop.is_set():
            messages = consumer.consume(1000, POLL_SECONDS)
            records = [
                (m.partition(), m.offset(), m.value()) for m in messages if m.error() is None
            ]
            out.assignment(
                [tp.partition for tp in consumer.assignment()], consumer.memberid(), None
            )
            out.records(records)
            offsets = next_offsets(records)
            if offsets:
                try:
                    consumer.commit(
                        offsets=[TopicPartition(args.topic, p, o) for p, o in offsets.items()],
                        asynchronous=False,
                    )
                except KafkaException as error:
                    out.emit(commit_error=str(error))
    finally:
        consumer.close()
    out.emit(closed=True)


def run_kafka_python(args: argparse.Namespace, stop: threading.Event, out: Output) -> None:
    from kafka import KafkaConsumer, TopicPartition
    from kafka.errors import KafkaError
    from kafka.structs import OffsetAndMetadata

    consumer = KafkaConsumer(**python_client_settings(args))
    consumer.subscribe([args.topic])
    # The topic's partitions known before the first JoinGroup: kafka-python 3.0.12 rejoins
    # when a metadata update changes the partitions of a subscribed topic after the
    # member, as the leader, assigned without them; and if that rejoin's SyncGroup answer
    # comes after the poll() that sent it returned, the answer is never applied. The
    # member keeps its old assignment and sends no more heartbeats until its session ends.
    consumer.partitions_for_topic(args.topic)
    try:
        while not stop.is_set():
            polled = consumer.poll(timeout_ms=int(POLL_SECONDS * 1000))
            records = [(tp.partition, m.offset, m.value) for tp, ms in polled.items() for m in ms]
            generation = consumer._coordinator._generation  # the library's own view
            out.assignment(
                [tp.partition for tp in consumer.assignment()],
                generation.member_id,
                generation.generation_id,
            )
            out.records(records)
            offsets = next_offsets(records)
            if offsets:
                try:
                    consumer.commit(
                        {
                            TopicPartition(args.topic, p): OffsetAndMetadata(o, "", -1)
                            for p, o in offsets.items()
                        }
                    )
                except KafkaError as error:
                    out.emit(commit_error=repr(error))
    finally:
        consumer.close(autocommit=False)
    out.emit(closed=True)


async def run_aiokafka(args: argparse.Namespace, stop: threading.Event, out: Output) -> None:
    from aiokafka import AIOKafkaConsumer, TopicPartition
    from aiokafka.errors import KafkaError

    consumer = AIOKafkaConsumer(**python_client_settings(args))
    await consumer.start()
    consumer.subscribe([args.topic])
    try:
        while not stop.is_set():
            polled = await consumer.getmany(timeout_ms=int(POLL_SECONDS * 1000))
            records = [(tp.partition, m.offset, m.value) for tp, ms in polled.items() for m in ms]
            coordinator = consumer._coordinator  # the library's own view
            out.assignment(
                [tp.partition for tp in consumer.assignment()],
                coordinator.member_id,
                coordinator.generation,
            )
            out.records(records)
            offsets = next_offsets(records)
            if offsets:
                try:
                    await consumer.commit(
                        {TopicPartition(args.topic, p): o for p, o in offsets.items()}
                    )
                except KafkaError as error:
                    out.emit(commit_error=repr(error))
    finally:
        await consumer.stop()
    out.emit(closed=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lib", choices=["confluent", "kafka-python", "aiokafka"], required=True)
    parser.add_argument("--bootstrap", required=True)
    parser.add_argument("--topic", required=True)
    parser.add_argument("--group", required=True)
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--instance-id", default="")
    parser.add_argument("--session-timeout-ms", type=int, default=10000)
    args = parser.parse_args()

    # The client library's warnings (failed heartbeats, rejoins) go to the stderr file the
    # test shows when a member misbehaves.
    logging.basicConfig(
        level=logging.INFO, stream=sys.stderr, format="%(asctime)s %(name)s %(message)s"
    )
    logging.getLogger("kafka.coordinator.heartbeat").setLevel(logging.DEBUG)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    out = Output()
    if args.lib == "confluent":
        run_confluent(args, stop, out)
    elif args.lib == "kafka-python":
        run_kafka_python(args, stop, out)
    else:
        asyncio.run(run_aiokafka(args, stop, out))


if __name__ == "__main__":
    main()
