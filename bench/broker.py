"""One broker against confluent-kafka (librdkafka): produce and consume throughput with
1 KiB records and acks=1, broker CPU seconds per GB produced, and broker RSS idle and
under load. Usage: ``python bench/broker.py [--megabytes N]``.

The broker and ZooKeeper are real processes on loopback; CPU and RSS are read from
/proc for the broker's process. The comparison with Apache Kafka on the same load is
``make bench`` (issue 4); this script tracks tidelog on its own.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from pathlib import Path

from confluent_kafka import Consumer, Producer, TopicPartition

from tidelog.admin import AdminClient
from tidelog.server.process import BrokerProcess
from tidelog.zookeeper import ZooKeeperServer

RECORD = os.urandom(1024)
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK  # utime + stime


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def produce(bootstrap: str, topic: str, count: int) -> float:
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "acks": 1,
            "linger.ms": 5,
            "batch.size": 65536,
            "compression.type": "none",
            "enable.idempotence": False,
            "queue.buffering.max.messages": 200000,
        }
    )
    start = time.perf_counter()
    for _ in range(count):
        while True:
            try:
                producer.produce(topic, RECORD)
                break
            except BufferError:
                producer.poll(0.01)
    producer.flush(120)
    return time.perf_counter() - start


def consume(bootstrap: str, topic: str, count: int) -> float:
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": "bench",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52428800,
            "max.partition.fetch.bytes": 10485760,
        }
    )
    consumer.assign([TopicPartition(topic, 0, 0)])
    seen = 0
    start = time.perf_counter()
    while seen < count:
        for message in consumer.consume(10000, 5):
            if not message.error():
                seen += 1
    elapsed = time.perf_counter() - start
    consumer.close()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--megabytes", type=int, default=512)
    args = parser.parse_args()
    count = args.megabytes * 1024
    with tempfile.TemporaryDirectory(dir=Path(__file__).resolve().parent.parent) as base:
        zookeeper = ZooKeeperServer(Path(base) / "zk").start()
        broker = BrokerProcess(Path(base) / "broker", zookeeper.connect_string).start()
        try:
            pid = broker.process.pid
            AdminClient(broker.bootstrap).create_topic("bench", 1, 1)
            time.sleep(1)
            idle_rss = rss_mb(pid)
            peak = [idle_rss]
            done = threading.Event()

            def sample() -> None:
                while not done.wait(0.2):
                    peak[0] = max(peak[0], rss_mb(pid))

            sampler = threading.Thread(target=sample, daemon=True)
            sampler.start()
            cpu_before = cpu_seconds(pid)
            produced_s = produce(broker.bootstrap, "bench", count)
            cpu_produce = cpu_seconds(pid) - cpu_before
            consumed_s = consume(broker.bootstrap, "bench", count)
            done.set()
            gigabytes = count * len(RECORD) / 1e9
            print(f"records: {count} x {len(RECORD)} B, acks=1, 1 partition, no compression")
            print(
                f"produce: {count / produced_s:,.0f} records/s, "
                f"{gigabytes * 1000 / produced_s:.1f} MB/s"
            )
            print(
                f"consume: {count / consumed_s:,.0f} records/s, "
                f"{gigabytes * 1000 / consumed_s:.1f} MB/s"
            )
            print(f"broker CPU: {cpu_produce / gigabytes:.1f} CPU-seconds per GB produced")
            print(f"broker RSS: idle {idle_rss:.0f} MB, peak under load {peak[0]:.0f} MB")
        finally:
            broker.stop()
            zookeeper.stop()


if __name__ == "__main__":
    main()
