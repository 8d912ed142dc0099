"""Spark's own Kafka source and sink (the Java client inside Spark) against tidelog: the
batch source reads a topic of every compression codec, and the sink writes with an
idempotent producer."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaProducer

from integration.clients import CODECS, assert_stored_compressed
from tidelog.admin import AdminClient
from tidelog.records.batch import iter_batch_headers

COUNT = 300


def read_topic(spark, bootstrap: str, topic: str) -> list[tuple[bytes, bytes]]:
    records = (
        spark.read.format("kafka")
        .option("kafka.bootstrap.servers", bootstrap)
        .option("subscribe", topic)
        .load()
    )
    return sorted((bytes(r.key), bytes(r.value)) for r in records.select("key", "value").collect())


@pytest.mark.parametrize("codec", CODECS)
def test_the_batch_source_reads_every_codec(local_cluster, spark, codec):
    topic = f"spark-codec-{codec}"
    AdminClient(local_cluster.bootstrap).create_topic(topic, 3, 3)
    producer = KafkaProducer(
        bootstrap_servers=local_cluster.bootstrap,
        compression_type=None if codec == "none" else codec,
        linger_ms=20,
    )
    sent = [(f"k{n % 7}".encode(), f"{codec}-{n}".encode() * 5) for n in range(COUNT)]
    for key, value in sent:
        producer.send(topic, value, key=key)
    producer.flush()
    producer.close()
    assert_stored_compressed(local_cluster.log_dirs, topic, codec)
    assert read_topic(spark, local_cluster.bootstrap, topic) == sorted(sent)


def stored_producer_ids(log_dirs: list[Path], topic: str) -> set[int]:
    return {
        header.producer_id
        for log_dir in log_dirs
        for segment in log_dir.glob(f"{topic}-*/*.log")
        for header in iter_batch_headers(segment.read_bytes())
    }


def test_the_sink_writes_with_an_idempotent_producer(local_cluster, spark):
    topic = "spark-sink"
    AdminClient(local_cluster.bootstrap).create_topic(topic, 3, 3)
    rows = spark.range(COUNT).selectExpr(
        "cast(id % 7 as string) as key", "concat('sink-', cast(id as string)) as value"
    )
    (
        rows.write.format("kafka")
        .option("kafka.bootstrap.servers", local_cluster.bootstrap)
        .option("kafka.enable.idempotence", "true")
        .option("kafka.acks", "all")
        .option("topic", topic)
        .save()
    )
    expected = sorted((str(n % 7).encode(), f"sink-{n}".encode()) for n in range(COUNT))
    assert read_topic(spark, local_cluster.bootstrap, topic) == expected
    producer_ids = stored_producer_ids(local_cluster.log_dirs, topic)
    assert producer_ids and all(pid >= 0 for pid in producer_ids), producer_ids
