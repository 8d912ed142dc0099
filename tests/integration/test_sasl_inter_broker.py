"""Three brokers whose inter-broker listener is SASL_SSL with SCRAM-SHA-512, the brokers'
own user made first with Kafka's tool against ZooKeeper, as Kafka's documentation has
it: the controller's requests and the replica fetchers authenticate, so a topic of three
replicas takes acks=all writes from a client on the same listener and keeps its ISR
full. A password changed in ZooKeeper with ``kafka-configs.sh --zookeeper`` takes effect
on every broker for new logins. (The test harness reads Metadata on a PLAINTEXT
listener.)"""

from __future__ import annotations

from confluent_kafka import Consumer, Producer

from integration.broker_process import free_port
from integration.cluster import Cluster
from integration.sasl_setup import SCRAM_MODULE, jaas
from integration.tls_files import TlsFiles
from kafka_reference.tools import run_kafka_tool
from tidelog.admin.connection import BrokerConnection
from tidelog.security.client_security import ClientSecurity
from tidelog.security.sasl_client import SaslAuthenticationFailed
from waiting import wait_until

TOPIC = "replicated-over-scram"
RECORDS = 1000
MECHANISM = "SCRAM-SHA-512"


def set_password(zk_connect: str, user: str, password: str) -> None:
    result = run_kafka_tool(
        "kafka-configs",
        *("--zookeeper", zk_connect, "--alter", "--entity-type", "users"),
        *("--entity-name", user, "--add-config", f"{MECHANISM}=[password={password}]"),
    )
    assert result.returncode == 0, f"{result.stdout}\n{result.stderr}"


def client_properties(tls: TlsFiles, user: str, password: str) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(tls.ca_file),
        "sasl.mechanism": MECHANISM,
        "sasl.jaas.config": jaas(SCRAM_MODULE, user, password),
    }


def logs_in(tls: TlsFiles, port: int, user: str, password: str) -> bool:
    security = ClientSecurity.from_properties(client_properties(tls, user, password))
    try:
        BrokerConnection("127.0.0.1", port, security=security).close()
    except SaslAuthenticationFailed:
        return False
    return True


def test_replication_and_clients_over_scram_sha_512(tmp_path, zk_chroot) -> None:
    tls = TlsFiles.make(tmp_path / "tls")
    set_password(zk_chroot, "broker", "broker-secret")
    set_password(zk_chroot, "alice", "alice-1")
    cluster = Cluster(
        tmp_path,
        zk_chroot,
        size=3,
        overrides={
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,INTERNAL:SASL_SSL",
            "inter.broker.listener.name": "INTERNAL",
            "sasl.mechanism.inter.broker.protocol": MECHANISM,
            "listener.name.internal.sasl.enabled.mechanisms": MECHANISM,
            # the brokers log in as "broker"
            "listener.name.internal.scram-sha-512.sasl.jaas.config": jaas(
                SCRAM_MODULE, "broker", "broker-secret"
            ),
            **tls.listener_overrides(tls.broker_keystore()),
        },
    )
    internal = {}
    for broker_id, broker in cluster.brokers.items():
        internal[broker_id] = free_port()
        with broker.config_path.open("a") as config:
            config.write(
                f"listeners=PLAINTEXT://127.0.0.1:{broker.port},"
                f"INTERNAL://127.0.0.1:{internal[broker_id]}\n"
            )
    bootstrap = ",".join(f"127.0.0.1:{port}" for port in internal.values())
    client = {
        "bootstrap.servers": bootstrap,
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(tls.ca_file),
        "sasl.mechanism": MECHANISM,
        "sasl.username": "alice",
        "sasl.password": "alice-1",
    }
    with cluster:
        cluster.create_topic(TOPIC, partitions=3, replication_factor=3)
        producer = Producer({**client, "acks": "all"})
        for i in range(RECORDS):
            producer.produce(TOPIC, f"value-{i}".encode())
            producer.poll(0)
        assert producer.flush(60) == 0

        def isr_full() -> bool:
            leaders = cluster.leaders(1, TOPIC)
            return all(isr == [1, 2, 3] for _, _, isr in leaders.values())

        wait_until(isr_full, f"every partition of {TOPIC} has all three replicas in its ISR")
        consumer = Consumer(
            {**client, "group.id": "scram-inter-broker", "auto.offset.reset": "earliest"}
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

        set_password(zk_chroot, "alice", "alice-2")
        for broker_id, port in internal.items():
            wait_until(
                lambda port=port: logs_in(tls, port, "alice", "alice-2"),
                f"broker {broker_id} accepts alice's new password",
            )
            assert not logs_in(tls, port, "alice", "alice-1")
