"""Fetch responses through TLS carry the bytes at the positions the fetch asked for.

Through TLS a file slice cannot go by the kernel's sendfile. asyncio's own fallback reads
from the file's current position, which is shared by every descriptor duplicated from
the segment's, and which a PLAINTEXT connection's sendfile moves: a TLS fetch from
offset 0 after a plaintext one then read the wrong bytes (or none, and its consumer
waited for ever). The broker reads such slices at their positions itself."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from integration.clients import create_topics
from integration.tls_files import TlsFiles, ssl_broker

TOPIC = "positions"
RECORDS = 3000  # about 3 MB: responses far past the 64 KiB that go inline


@pytest.fixture
def broker(tmp_path, zk_chroot):
    tls = TlsFiles.make(tmp_path / "tls")
    process = ssl_broker(tls, tmp_path / "broker", zk_chroot)
    process.ssl_settings = {
        "bootstrap.servers": f"127.0.0.1:{process.ssl_port}",
        "security.protocol": "SSL",
        "ssl.ca.location": str(tls.ca_file),
    }
    yield process
    assert process.stop() == 0, process.log()[-3000:]


def value(i: int) -> bytes:
    return f"{i:08d}".encode() * 128  # 1 KiB, its number throughout


def read_all(settings: dict) -> list[bytes]:
    consumer = Consumer({**settings, "group.id": "positions", "enable.auto.commit": False})
    consumer.assign([TopicPartition(TOPIC, 0, 0)])
    values: list[bytes] = []
    try:
        for _ in range(120):
            for message in consumer.consume(1000, 1.0):
                assert message.error() is None, message.error()
                values.append(message.value())
            if len(values) >= RECORDS:
                break
    finally:
        consumer.close()
    return values


def test_a_tls_fetch_after_a_plaintext_one_reads_its_own_positions(broker):
    create_topics(broker.bootstrap, [TOPIC], 1)
    producer = Producer({"bootstrap.servers": broker.bootstrap, "linger.ms": 20})
    for i in range(RECORDS):
        producer.produce(TOPIC, value(i))
        producer.poll(0)
    assert producer.flush(60) == 0
    expected = [value(i) for i in range(RECORDS)]
    assert read_all({"bootstrap.servers": broker.bootstrap}) == expected  # sendfile
    assert read_all(broker.ssl_settings) == expected  # then through TLS, from 0
