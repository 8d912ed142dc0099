"""Three brokers whose inter-broker listener is SSL with mutual TLS, or SASL_SSL with
PLAIN: the controller's requests, the replica fetchers, the refusal watches and the
controlled shutdowns go over it, so a topic of three replicas takes acks=all writes and
keeps its ISR full; clients use the PLAINTEXT listener."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, Producer

from integration.cluster import Cluster
from integration.tls_files import TlsFiles
from waiting import wait_until

TOPIC = "replicated-over-tls"
RECORDS = 2000


PLAIN_BROKER = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="broker" password="broker-secret" user_broker="broker-secret";'
)
INTERNAL = {
    "SSL": {"listener.name.internal.ssl.client.auth": "required"},
    "SASL_SSL": {
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "listener.name.internal.sasl.enabled.mechanisms": "PLAIN",
        "listener.name.internal.plain.sasl.jaas.config": PLAIN_BROKER,
    },
}


@pytest.mark.parametrize("protocol", sorted(INTERNAL))
def test_replication_over_a_secure_inter_broker_listener(tmp_path, zk_chroot, protocol) -> None:
    tls = TlsFiles.make(tmp_path / "tls")
    cluster = Cluster(
        tmp_path,
        zk_chroot,
        size=3,
        overrides={
            "listener.security.protocol.map": f"PLAINTEXT:PLAINTEXT,INTERNAL:{protocol}",
            "inter.broker.listener.name": "INTERNAL",
            **INTERNAL[protocol],
            **tls.listener_overrides(tls.broker_keystore()),
        },
    )
    for broker in cluster.brokers.values():
        with broker.config_path.open("a") as config:  # each broker's own client port
            config.write(f"listeners=PLAINTEXT://127.0.0.1:{broker.port},INTERNAL://127.0.0.1:0\n")
    with cluster:
        cluster.create_topic(TOPIC, partitions=3, replication_factor=3)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(RECORDS):
            producer.produce(TOPIC, f"value-{i}".encode())
            producer.poll(0)
        assert producer.flush(60) == 0

        def isr_full() -> bool:
            leaders = cluster.leaders(1, TOPIC)
            return all(isr == [1, 2, 3] for _, _, isr in leaders.values())

        wait_until(isr_full, f"every partition of {TOPIC} has all three replicas in its ISR")
        registered = cluster.zk.get("/brokers/ids/2")[0].decode()
        assert "INTERNAL://127.0.0.1:" in registered

        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": "tls-inter-broker",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe([TOPIC])
        got: list[bytes] = []
        try:

            def all_read() -> bool:
                got.extend(m.value() for m in consumer.consume(RECORDS, 1) if m.error() is None)
                return len(got) >= RECORDS

            wait_until(all_read, f"{RECORDS} records read back")
        finally:
            consumer.close()
        assert sorted(got) == sorted(f"value-{i}".encode() for i in range(RECORDS))
