"""S4 and S5 of ``make bench``, on one broker: scenarios whose figure is the broker's work
on its log directory. S4 creates a topic of many partitions (directories, index files,
checkpoints, thousands of fsyncs) and times metadata and a produce over all of them; S5
compacts a log (:data:`COMPACTED_TOPIC`) and watches its size on disk.

Each scenario takes a started :class:`session.Session` and records its figures there.
"""

from __future__ import annotations

import os
import time

import loadgen
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource
from measure import collector_paused, partition_bytes
from session import Session
from settings import Scale

__all__ = ["COMPACTED_TOPIC", "s4_partitions", "s5_compaction"]

COMPACTED_TOPIC = {
    "cleanup.policy": "compact",
    "min.cleanable.dirty.ratio": "0.01",
    "file.delete.delay.ms": "1000",
}


def s4_partitions(session: Session, scale: Scale) -> None:
    """Create a topic of ``s4_partitions`` partitions on a fresh broker, time until each
    has a leader, then metadata requests and a produce over all of them. The page cache's
    dirty pages (whichever system wrote them) are written out first, so that the
    creation's fsyncs do not queue behind them."""
    n = scale.s4_partitions
    case = f"{n} partitions"
    os.sync()
    start = time.perf_counter()
    session.create_topic("s4-many", n)
    session.record("S4", case, "admin", "create → all leaders", time.perf_counter() - start, "s")
    timings = []
    with collector_paused():
        for _ in range(30):
            start = time.perf_counter()
            session.admin.list_topics("s4-many", timeout=10)
            timings.append((time.perf_counter() - start) * 1000)
    for p, value in loadgen.percentiles(timings, (50, 99)).items():
        session.record("S4", case, "admin", f"metadata {p}", value, "ms")
    count = scale.s4_megabytes * loadgen.MB // 1024
    result = loadgen.produce(session.bootstrap, "s4-many", count, 1024, partitions=n)
    session.record("S4", case, "loadgen", "throughput", result.mb_per_s, "MB/s")


def s5_compaction(session: Session, scale: Scale) -> None:
    """Produce with ``cleanup.policy=delete`` (nothing cleans while records arrive), then
    switch the topic to ``compact`` and time until its size on disk stops shrinking:
    both cleaners start from the same log at the same moment."""
    topic, keys = "s5-compacted", scale.s5_keys
    case = f"{keys:,} keys x {scale.s5_values_per_key}"
    configs = COMPACTED_TOPIC | {
        "segment.bytes": str(scale.s5_segment_bytes),
        "segment.ms": str(scale.s5_segment_ms),
        "cleanup.policy": "delete",
        "retention.ms": "-1",
    }
    session.create_topic(topic, 1, configs)
    count = keys * scale.s5_values_per_key
    result = loadgen.produce(session.bootstrap, topic, count, 100, keys=keys)
    session.record("S5", case, "loadgen", "produce", result.mb_per_s, "MB/s")
    time.sleep(scale.s5_segment_ms / 1000 + 1)  # let the last segment roll
    log_dirs = session.broker.log_dirs
    before = last = partition_bytes(log_dirs, topic)
    resource = ConfigResource(
        ConfigResource.Type.TOPIC,
        topic,
        incremental_configs=[
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.SET)
        ],
    )
    session.admin.incremental_alter_configs([resource])[resource].result(60)
    start = last_change = time.monotonic()
    while time.monotonic() - start < scale.s5_timeout_s:
        time.sleep(0.5)
        now = partition_bytes(log_dirs, topic)
        if now != last:
            last, last_change = now, time.monotonic()
        elif last < before and time.monotonic() - last_change > scale.s5_stable_s:
            break
    session.record("S5", case, "disk", "bytes before", before, "B")
    session.record("S5", case, "disk", "bytes after", last, "B")
    cleaned = last < before
    session.record(
        "S5", case, "disk", "time to clean", last_change - start if cleaned else None, "s"
    )
