"""A listener's keystore replaced at run time (seed 003: short-lived certificates renewed
without a restart), through Kafka's own ``kafka-configs.sh``: new connections get the new
certificate, an open producer goes on producing, DescribeConfigs shows the new key; a
keystore whose key does not match its certificate is refused with INVALID_CONFIG and
changes nothing. A PKCS12 keystore's password set at run time is stored in ZooKeeper
encoded with ``password.encoder.secret``, so that Kafka's own encoder decodes it."""

from __future__ import annotations

import json
import socket
import ssl
import subprocess
from pathlib import Path

import pytest
from confluent_kafka import Producer
from kazoo.client import KazooClient

from integration.broker_process import BrokerProcess, free_port
from integration.tls_files import TlsFiles
from kafka_reference import JVM_FLAGS, java_executable, kafka_libs
from kafka_reference.tools import run_kafka_tool
from tidelog.security.certificates import pkcs12_store
from waiting import wait_until

TOPIC = "renewed"
ENCODER_SECRET = "encoder-secret"
DECODER = Path(__file__).with_name("KafkaPasswordDecoder.java")


@pytest.fixture
def ssl_broker(tmp_path, zk_chroot):
    tls = TlsFiles.make(tmp_path / "tls")
    port, ssl_port = free_port(), free_port()
    broker = BrokerProcess(
        tmp_path / "broker",
        zk_chroot,
        port=port,
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SSL://127.0.0.1:{ssl_port}",
            **tls.listener_overrides(tls.broker_keystore("broker-old")),
            "password.encoder.secret": ENCODER_SECRET,
        },
    ).start()
    broker.ssl_port, broker.tls = ssl_port, tls
    yield broker
    assert broker.stop() == 0, broker.log()[-3000:]


def served_certificate(broker) -> str:
    """The common name of the certificate a new TLS connection to the broker gets."""
    context = ssl.create_default_context(cafile=str(broker.tls.ca_file))
    raw = socket.create_connection(("127.0.0.1", broker.ssl_port), timeout=10)
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        subject = dict(item[0] for item in tls.getpeercert()["subject"])
    return subject["commonName"]


def alter(broker, *config: str):
    return run_kafka_tool(
        "kafka-configs",
        *("--bootstrap-server", broker.bootstrap, "--entity-type", "brokers"),
        *("--entity-name", str(broker.broker_id), "--alter", "--add-config", ",".join(config)),
    )


def test_a_new_keystore_serves_new_connections_and_spares_open_ones(ssl_broker) -> None:
    tls = ssl_broker.tls
    producer = Producer(
        {
            "bootstrap.servers": f"127.0.0.1:{ssl_broker.ssl_port}",
            "security.protocol": "SSL",
            "ssl.ca.location": str(tls.ca_file),
        }
    )
    for i in range(100):
        producer.produce(TOPIC, f"before-{i}".encode())
    assert producer.flush(30) == 0
    assert served_certificate(ssl_broker) == "broker-old"

    new = tls.broker_keystore("broker-new")
    altered = alter(ssl_broker, f"listener.name.ssl.ssl.keystore.location={new}")
    assert altered.returncode == 0, altered.stderr[-3000:]
    wait_until(
        lambda: served_certificate(ssl_broker) == "broker-new",
        "a new connection gets the new certificate",
    )
    for i in range(100):
        producer.produce(TOPIC, f"after-{i}".encode())
    assert producer.flush(30) == 0  # on the connection opened before the change

    described = run_kafka_tool(
        "kafka-configs",
        *("--bootstrap-server", ssl_broker.bootstrap, "--entity-type", "brokers"),
        *("--entity-name", str(ssl_broker.broker_id), "--describe"),
    )
    assert f"listener.name.ssl.ssl.keystore.location={new}" in described.stdout


def test_a_keystore_whose_key_does_not_match_is_refused(ssl_broker) -> None:
    tls = ssl_broker.tls
    one = tls.ca.issue("CN=one", hosts=["127.0.0.1"])
    other = tls.ca.issue("CN=other", hosts=["127.0.0.1"])
    mismatched = tls.directory / "mismatched.pem"
    mismatched.write_bytes(one.chain_pem + other.key_pem())
    refused = alter(ssl_broker, f"listener.name.ssl.ssl.keystore.location={mismatched}")
    assert refused.returncode != 0
    assert "InvalidConfigurationException" in refused.stdout + refused.stderr
    assert "does not match" in refused.stdout + refused.stderr
    missing = alter(ssl_broker, "listener.name.ssl.ssl.keystore.location=/nonexistent.pem")
    assert "InvalidConfigurationException" in missing.stdout + missing.stderr
    assert served_certificate(ssl_broker) == "broker-old"


def test_listener_keystores_are_set_per_broker_only(ssl_broker) -> None:
    refused = run_kafka_tool(
        "kafka-configs",
        *("--bootstrap-server", ssl_broker.bootstrap, "--entity-type", "brokers"),
        *("--entity-default", "--alter", "--add-config"),
        f"listener.name.ssl.ssl.keystore.location={ssl_broker.tls.ca_file}",
    )
    assert refused.returncode != 0
    assert "broker id must be specified" in refused.stdout + refused.stderr


def test_a_keystore_password_set_at_run_time_is_stored_as_kafka_encodes_it(
    ssl_broker, zk_chroot
) -> None:
    tls = ssl_broker.tls
    store = tls.directory / "broker.p12"
    issued = tls.ca.issue("CN=broker-p12", hosts=["127.0.0.1"])
    store.write_bytes(pkcs12_store("p12-secret", issued))
    altered = alter(
        ssl_broker,
        "listener.name.ssl.ssl.keystore.type=PKCS12",
        f"listener.name.ssl.ssl.keystore.location={store}",
        "listener.name.ssl.ssl.keystore.password=p12-secret",
    )
    assert altered.returncode == 0, altered.stderr[-3000:]
    wait_until(lambda: served_certificate(ssl_broker) == "broker-p12", "the PKCS12 keystore serves")
    zk = KazooClient(hosts=zk_chroot)
    zk.start(timeout=10)
    try:
        data, _ = zk.get(f"/config/brokers/{ssl_broker.broker_id}")
    finally:
        zk.stop()
        zk.close()
    stored = json.loads(data)["config"]["listener.name.ssl.ssl.keystore.password"]
    assert "p12-secret" not in stored
    decoded = subprocess.run(
        [
            java_executable(),
            *JVM_FLAGS,
            "-cp",
            f"{kafka_libs()}/*",
            str(DECODER),
            ENCODER_SECRET,
            stored,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert decoded.stdout.strip() == "p12-secret", decoded.stderr[-3000:]
