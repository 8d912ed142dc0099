"""``tidelog-local start --security``: a local cluster secured end to end, used as its
``client.properties`` and ``cluster.json`` say by Kafka's own Java tools, by tidelog's
tools (``--command-config``) and by confluent-kafka, while a client without the
credentials is turned away."""

from __future__ import annotations

import json
import signal
import subprocess

import pytest
from confluent_kafka import Consumer, KafkaException, Producer
from confluent_kafka.admin import AdminClient as ConfluentAdmin

from cli.test_local import TIDELOG_LOCAL, free_port_run, stop_after_failure, wait_for
from kafka_reference.tools import run_kafka_tool

TIDELOG_TOPICS = TIDELOG_LOCAL.with_name("tidelog-topics")
BROKERS = 2


@pytest.fixture(scope="module", params=["sasl_ssl", "ssl"])
def secured(request, tmp_path_factory):
    """A running ``tidelog-local start --security <mode>`` of two brokers: its base
    directory and its cluster.json."""
    base = tmp_path_factory.mktemp(f"local-{request.param}")
    first = free_port_run(BROKERS + 1)
    process = subprocess.Popen(
        [
            str(TIDELOG_LOCAL),
            "start",
            "--dir",
            str(base),
            "--security",
            request.param,
            "--brokers",
            str(BROKERS),
            "--zk-port",
            str(first + BROKERS),
            "--base-port",
            str(first),
            "--partitions",
            "2",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(base / "cluster.json", process, timeout=120)
        yield base, json.loads((base / "cluster.json").read_text())
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=120)
        assert process.returncode == 0, err
    finally:
        stop_after_failure(process)


def _confluent_config(cluster: dict) -> dict:
    """confluent-kafka's settings from cluster.json's security object."""
    security = cluster["security"]
    config = {
        "bootstrap.servers": cluster["bootstrap"],
        "security.protocol": security["protocol"],
        "ssl.ca.location": security["ca_file"],
    }
    if security["mechanism"]:
        config.update(
            {
                "sasl.mechanism": security["mechanism"],
                "sasl.username": security["username"],
                "sasl.password": security["password"],
            }
        )
    else:
        config.update(
            {
                "ssl.certificate.location": security["keystore_file"],
                "ssl.key.location": security["keystore_file"],
            }
        )
    return config


def test_cluster_json_says_how_to_connect(secured):
    base, cluster = secured
    security = cluster["security"]
    assert security["ca_file"] == str(base / "security" / "ca.pem")
    assert security["username"] == "admin"
    if security["protocol"] == "SASL_SSL":
        assert security["mechanism"] == "SCRAM-SHA-512"
        assert len(security["password"]) >= 16
        assert f'password="{security["password"]}"' in (base / "client.properties").read_text()
    else:
        assert security["protocol"] == "SSL"
        assert security["mechanism"] is None and security["password"] is None
    # Keys and passwords are for their owner's eyes only.
    for private in (base / "client.properties", base / "security" / "broker.pem"):
        assert private.stat().st_mode & 0o077 == 0, private


def test_kafka_java_tools_use_client_properties(secured):
    base, cluster = secured
    properties = str(base / "client.properties")
    bootstrap = cluster["bootstrap"].split(",")[0]
    topic = "java-tools"
    created = run_kafka_tool(
        "kafka-topics",
        "--bootstrap-server",
        bootstrap,
        "--command-config",
        properties,
        "--create",
        "--topic",
        topic,
        "--partitions",
        "2",
        "--replication-factor",
        "2",
    )
    assert created.returncode == 0, created.stderr[-3000:]
    lines = [f"record-{i}" for i in range(20)]
    produced = run_kafka_tool(
        "kafka-console-producer",
        "--bootstrap-server",
        bootstrap,
        "--producer.config",
        properties,
        "--topic",
        topic,
        stdin="\n".join(lines) + "\n",
    )
    assert produced.returncode == 0, produced.stderr[-3000:]
    consumed = run_kafka_tool(
        "kafka-console-consumer",
        "--bootstrap-server",
        bootstrap,
        "--consumer.config",
        properties,
        "--topic",
        topic,
        "--group",
        "java-tools-group",
        "--from-beginning",
        "--max-messages",
        str(len(lines)),
        "--timeout-ms",
        "30000",
    )
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    assert sorted(consumed.stdout.split()) == sorted(lines)


def test_tidelog_tools_take_command_config(secured):
    base, cluster = secured
    bootstrap = cluster["bootstrap"]
    listed = subprocess.run(
        [
            str(TIDELOG_TOPICS),
            *("--bootstrap-server", bootstrap, "--list"),
            *("--command-config", str(base / "client.properties")),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert listed.returncode == 0, listed.stderr
    assert "demo" in listed.stdout.split()
    # Without it the tool cannot talk to the secured listener: one line, status 1.
    refused = subprocess.run(
        [str(TIDELOG_TOPICS), "--bootstrap-server", bootstrap, "--list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: ") and len(refused.stderr.splitlines()) == 1
    # A wrong password, or a certificate the cluster's CA did not sign: one line too.
    properties = (base / "client.properties").read_text()
    if cluster["security"]["mechanism"]:
        password = cluster["security"]["password"]
        wrong = properties.replace(f'password="{password}"', 'password="not-the-password"')
    else:
        wrong = "".join(
            line + "\n" for line in properties.splitlines() if not line.startswith("ssl.keystore")
        )
    assert wrong != properties
    (base / "wrong.properties").write_text(wrong)
    refused = subprocess.run(
        [
            str(TIDELOG_TOPICS),
            *("--bootstrap-server", bootstrap, "--list"),
            *("--command-config", str(base / "wrong.properties")),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode == 1
    assert refused.stderr.startswith("Error: ") and len(refused.stderr.splitlines()) == 1


def test_confluent_kafka_with_cluster_json(secured):
    _, cluster = secured
    config = _confluent_config(cluster)
    producer = Producer(config)
    for i in range(10):
        producer.produce("demo", key=b"k", value=f"v{i}".encode())
    assert producer.flush(30) == 0
    consumer = Consumer({**config, "group.id": "json-group", "auto.offset.reset": "earliest"})
    consumer.subscribe(["demo"])
    values = set()
    try:
        for _ in range(60):
            message = consumer.poll(1.0)
            if message is not None and message.error() is None:
                values.add(message.value())
            if len(values) == 10:
                break
    finally:
        consumer.close()
    assert values == {f"v{i}".encode() for i in range(10)}


def test_a_client_without_credentials_is_turned_away(secured):
    _, cluster = secured
    config = _confluent_config(cluster)
    if cluster["security"]["mechanism"]:
        config["sasl.password"] = "not-the-password"
    else:  # a certificate the cluster's CA did not sign is no certificate
        for key in ("ssl.certificate.location", "ssl.key.location"):
            del config[key]
    admin = ConfluentAdmin({**config, "socket.timeout.ms": 5000})
    with pytest.raises(KafkaException):
        admin.list_topics(timeout=8)
