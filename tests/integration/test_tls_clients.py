"""Every client over TLS to one broker with three listeners: PLAINTEXT, SSL (a client
certificate optional) and MTLS (``ssl.client.auth=required`` on that listener only).
confluent-kafka, kafka-python, aiokafka, Kafka's console tools and tidelog's own admin
connection produce and consume; a client without a certificate, or with one of another
CA, is refused on MTLS with its library's usual error, and the broker serves the others
on."""

from __future__ import annotations

import asyncio
import ssl
from pathlib import Path

import kafka.errors
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer

from integration.broker_process import BrokerProcess, free_port
from integration.tls_files import TlsFiles
from kafka_reference.tools import run_kafka_tool
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.security.certificates import CertificateAuthority
from tidelog.security.client_security import ClientSecurity
from waiting import wait_until

RECORDS = 300  # with 2 KiB values: fetches past the network layer's inline bound


@pytest.fixture(scope="module")
def tls(tmp_path_factory) -> TlsFiles:
    return TlsFiles.make(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def tls_broker(tmp_path_factory, module_chroot, tls: TlsFiles):
    plain, ports = free_port(), {"SSL": free_port(), "MTLS": free_port()}
    process = BrokerProcess(
        tmp_path_factory.mktemp("broker"),
        module_chroot,
        port=plain,
        overrides={
            "listeners": f"PLAINTEXT://127.0.0.1:{plain},SSL://127.0.0.1:{ports['SSL']},"
            f"MTLS://127.0.0.1:{ports['MTLS']}",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,SSL:SSL,MTLS:SSL",
            "listener.name.ssl.ssl.client.auth": "requested",
            "listener.name.mtls.ssl.client.auth": "required",
            **tls.listener_overrides(tls.broker_keystore()),
        },
    ).start()
    process.tls_ports = ports
    yield process
    assert process.stop() == 0


def address(broker, listener: str) -> str:
    return f"127.0.0.1:{broker.tls_ports[listener]}"


def values(tag: str) -> list[bytes]:
    return [f"{tag}-{i:04d}-".encode() + b"v" * 2048 for i in range(RECORDS)]


# -- confluent-kafka -----------------------------------------------------------------------


def confluent_ssl(tls: TlsFiles, client=None) -> dict[str, str]:
    config = {"security.protocol": "SSL", "ssl.ca.location": str(tls.ca_file)}
    if client is not None:
        config |= {
            "ssl.certificate.location": str(client.certificate),
            "ssl.key.location": str(client.key),
        }
    return config


def confluent_round_trip(bootstrap: str, topic: str, config: dict[str, str]) -> list[bytes]:
    producer = Producer({"bootstrap.servers": bootstrap, **config})
    for value in values(topic):
        producer.produce(topic, value)
    assert producer.flush(30) == 0
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"{topic}-group",
            "auto.offset.reset": "earliest",
            "enable.auto.commit": False,
            **config,
        }
    )
    consumer.subscribe([topic])
    got: list[bytes] = []
    try:

        def all_read() -> bool:
            messages = consumer.consume(RECORDS, 1)
            got.extend(m.value() for m in messages if m.error() is None)
            return len(got) >= RECORDS

        wait_until(all_read, f"confluent-kafka reads {RECORDS} records of {topic}")
    finally:
        consumer.close()
    return got


def test_confluent_kafka_with_and_without_a_client_certificate(tls, tls_broker) -> None:
    alice = tls.client("CN=alice,OU=eng")
    for listener, client in (("SSL", None), ("MTLS", alice)):
        topic = f"confluent-{listener.lower()}"
        got = confluent_round_trip(address(tls_broker, listener), topic, confluent_ssl(tls, client))
        assert got == values(topic)


def test_confluent_kafka_without_a_certificate_is_refused_on_mtls(tls, tls_broker) -> None:
    errors: list[KafkaError] = []
    producer = Producer(
        {
            "bootstrap.servers": address(tls_broker, "MTLS"),
            "error_cb": errors.append,
            "message.timeout.ms": 3000,
            **confluent_ssl(tls),
        }
    )
    producer.produce("confluent-refused", b"x")
    producer.flush(10)
    codes = {e.code() for e in errors}
    assert codes & {KafkaError._SSL, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN}, errors
    # The broker serves everyone else on.
    topic = "confluent-after-refusal"
    assert confluent_round_trip(tls_broker.bootstrap, topic, {}) == values(topic)


# -- kafka-python --------------------------------------------------------------------------


def kafka_python_ssl(tls: TlsFiles, client=None) -> dict[str, object]:
    config: dict[str, object] = {"security_protocol": "SSL", "ssl_cafile": str(tls.ca_file)}
    if client is not None:
        config |= {"ssl_certfile": str(client.certificate), "ssl_keyfile": str(client.key)}
    return config


def test_kafka_python_produces_and_consumes_over_mtls(tls, tls_broker) -> None:
    topic = "kafka-python-mtls"
    config = kafka_python_ssl(tls, tls.client("CN=bob"))
    bootstrap = address(tls_broker, "MTLS")
    producer = KafkaProducer(bootstrap_servers=bootstrap, **config)
    for value in values(topic):
        producer.send(topic, value)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(
        topic,
        bootstrap_servers=bootstrap,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=20000,
        **config,
    )
    got = []
    for message in consumer:
        got.append(message.value)
        if len(got) == RECORDS:
            break
    consumer.close()
    assert got == values(topic)


def test_kafka_python_with_a_foreign_certificate_cannot_bootstrap(tls, tls_broker) -> None:
    foreign = tls.client("CN=mallory", ca=CertificateAuthority("CN=other-ca"))
    with pytest.raises(kafka.errors.KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(
            bootstrap_servers=address(tls_broker, "MTLS"),
            request_timeout_ms=5000,
            **kafka_python_ssl(tls, foreign),
        )


# -- aiokafka ------------------------------------------------------------------------------


def test_aiokafka_produces_and_consumes_over_ssl(tls, tls_broker) -> None:
    topic = "aiokafka-ssl"
    context = ssl.create_default_context(cafile=str(tls.ca_file))

    async def main() -> list[bytes]:
        bootstrap = address(tls_broker, "SSL")
        producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap, security_protocol="SSL", ssl_context=context
        )
        await producer.start()
        try:
            for value in values(topic):
                await producer.send(topic, value)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(
            topic,
            bootstrap_servers=bootstrap,
            security_protocol="SSL",
            ssl_context=context,
            auto_offset_reset="earliest",
            enable_auto_commit=False,
        )
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(30):
                while len(got) < RECORDS:
                    batches = await consumer.getmany(timeout_ms=1000)
                    got += [m.value for messages in batches.values() for m in messages]
        finally:
            await consumer.stop()
        return got

    assert asyncio.run(main()) == values(topic)


# -- Kafka's console tools -----------------------------------------------------------------


def properties_file(path: Path, properties: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    return path


def test_kafkas_console_tools_over_mtls(tls, tls_broker) -> None:
    topic = "console-mtls"
    config = properties_file(
        tls.directory / "client.properties",
        tls.client_properties(tls.client("CN=console")),
    )
    bootstrap = address(tls_broker, "MTLS")
    lines = [f"line-{i}" for i in range(50)]
    produced = run_kafka_tool(
        "kafka-console-producer",
        *("--bootstrap-server", bootstrap, "--topic", topic),
        *("--producer.config", str(config)),
        stdin="\n".join(lines) + "\n",
    )
    assert produced.returncode == 0, produced.stderr[-3000:]
    consumed = run_kafka_tool(
        "kafka-console-consumer",
        *("--bootstrap-server", bootstrap, "--topic", topic, "--from-beginning"),
        *("--max-messages", str(len(lines)), "--consumer.config", str(config)),
        timeout=120,
    )
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    assert consumed.stdout.split() == lines


# -- tidelog's own connection --------------------------------------------------------------


def test_tidelogs_connection_from_client_properties(tls, tls_broker) -> None:
    security = ClientSecurity.from_properties(tls.client_properties(tls.client("CN=admin")))
    with BrokerConnection("127.0.0.1", tls_broker.tls_ports["MTLS"], security=security) as c:
        brokers = c.request(ApiKey.METADATA, None, {"topics": []}).brokers
    assert [(b.host, b.port) for b in brokers] == [("127.0.0.1", tls_broker.tls_ports["MTLS"])]
    no_certificate = ClientSecurity.from_properties(tls.client_properties())
    with pytest.raises((ssl.SSLError, ConnectionError)):  # at ApiVersions, its first request
        BrokerConnection("127.0.0.1", tls_broker.tls_ports["MTLS"], security=no_certificate)
