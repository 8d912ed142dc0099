"""Every client over SASL_PLAINTEXT and SASL_SSL with PLAIN, SCRAM-SHA-256 and
SCRAM-SHA-512, to one broker with four listeners: PLAINTEXT, SASL (SASL_PLAINTEXT, all
three mechanisms), SASLSSL (SASL_SSL, the same) and PLAINONLY (SASL_PLAINTEXT enabling
PLAIN alone). confluent-kafka, kafka-python, aiokafka and Kafka's
console tools produce and consume; a wrong password and a mechanism the listener does
not enable fail with each library's usual error, and the broker serves the others on."""

from __future__ import annotations

import asyncio
import ssl
import struct
from pathlib import Path

import kafka.errors
import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import KafkaConnectionError
from confluent_kafka import Consumer, KafkaError, Producer
from kafka import KafkaConsumer, KafkaProducer

from integration.broker_process import BrokerProcess, free_port
from integration.clients import RawClient, read_frame
from integration.sasl_setup import (
    MECHANISMS,
    SCRAM_MODULE,
    create_scram_user,
    jaas,
    logs_in,
    sasl_listener_overrides,
    wait_for_login,
)
from integration.tls_files import TlsFiles
from kafka_reference.tools import run_kafka_tool
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.sasl_client import ScramClient, plain_client_token
from waiting import wait_until

RECORDS = 50
USERS = {"alice": "alice-secret", "bob": "bob-secret"}
PROTOCOLS = {"SASL": "SASL_PLAINTEXT", "SASLSSL": "SASL_SSL", "PLAINONLY": "SASL_PLAINTEXT"}


@pytest.fixture(scope="module")
def sasl_broker(tmp_path_factory, module_chroot):
    tls = TlsFiles.make(tmp_path_factory.mktemp("tls"))
    plain, ports = free_port(), {listener: free_port() for listener in PROTOCOLS}
    process = BrokerProcess(
        tmp_path_factory.mktemp("broker"),
        module_chroot,
        port=plain,
        overrides={
            "listeners": ",".join(
                [f"PLAINTEXT://127.0.0.1:{plain}"]
                + [f"{name}://127.0.0.1:{port}" for name, port in ports.items()]
            ),
            "listener.security.protocol.map": ",".join(
                ["PLAINTEXT:PLAINTEXT"] + [f"{n}:{p}" for n, p in PROTOCOLS.items()]
            ),
            "inter.broker.listener.name": "PLAINTEXT",
            "connection.failed.authentication.delay.ms": "20",
            **sasl_listener_overrides("SASL", MECHANISMS, USERS),
            **sasl_listener_overrides("SASLSSL", MECHANISMS, USERS),
            **sasl_listener_overrides("PLAINONLY", ("PLAIN",), USERS),
            **tls.listener_overrides(tls.broker_keystore()),
        },
    ).start()
    for user, password in USERS.items():
        create_scram_user(plain, user, password)
    for user, password in USERS.items():
        wait_for_login(ports["SASL"], "SCRAM-SHA-512", user, password)
    process.sasl_ports = ports
    process.tls = tls
    yield process
    assert process.stop() == 0


def address(broker, listener: str = "SASL") -> str:
    return f"127.0.0.1:{broker.sasl_ports[listener]}"


def values(tag: str) -> list[bytes]:
    return [f"{tag}-{i:03d}".encode() for i in range(RECORDS)]


# -- confluent-kafka -----------------------------------------------------------------------


def confluent_sasl(
    mechanism: str, user: str = "alice", password: str | None = None, tls: TlsFiles | None = None
):
    config = {
        "security.protocol": "SASL_PLAINTEXT" if tls is None else "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.username": user,
        "sasl.password": USERS[user] if password is None else password,
    }
    return config if tls is None else {**config, "ssl.ca.location": str(tls.ca_file)}


def tls_of(broker, listener: str) -> TlsFiles | None:
    return broker.tls if PROTOCOLS[listener] == "SASL_SSL" else None


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


@pytest.mark.parametrize("listener", ("SASL", "SASLSSL"))
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka(sasl_broker, listener, mechanism) -> None:
    topic = f"confluent-{listener.lower()}-{mechanism.lower()}"
    config = confluent_sasl(mechanism, tls=tls_of(sasl_broker, listener))
    got = confluent_round_trip(address(sasl_broker, listener), topic, config)
    assert got == values(topic)


def confluent_refusals(bootstrap: str, config: dict[str, str]) -> list[str]:
    """The authentication errors confluent-kafka reports trying to produce."""
    errors: list[KafkaError] = []
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "error_cb": errors.append,
            "message.timeout.ms": 3000,
            **config,
        }
    )
    producer.produce("confluent-refused", b"x")
    producer.flush(10)
    return [e.str() for e in errors if e.code() == KafkaError._AUTHENTICATION]


# What the broker tells a client whose credentials it refuses (Kafka's messages).
REFUSALS = {
    "PLAIN": "Authentication failed: Invalid username or password",
    **{
        m: "Authentication failed during authentication due to invalid credentials with "
        f"SASL mechanism {m}"
        for m in MECHANISMS[1:]
    },
}


@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_confluent_kafka_wrong_password(sasl_broker, mechanism) -> None:
    refusals = confluent_refusals(address(sasl_broker), confluent_sasl(mechanism, password="wrong"))
    assert refusals and REFUSALS[mechanism] in refusals[0], refusals
    assert logs_in(sasl_broker.sasl_ports["SASL"], mechanism, "bob", USERS["bob"])


def test_confluent_kafka_mechanism_the_listener_does_not_enable(sasl_broker) -> None:
    refusals = confluent_refusals(
        address(sasl_broker, "PLAINONLY"), confluent_sasl("SCRAM-SHA-512")
    )
    assert refusals, refusals
    assert "Unsupported SASL mechanism: broker's supported mechanisms: PLAIN" in refusals[0]
    topic = "confluent-plain-only"
    got = confluent_round_trip(
        address(sasl_broker, "PLAINONLY"), topic, confluent_sasl("PLAIN", "bob")
    )
    assert got == values(topic)


# -- kafka-python --------------------------------------------------------------------------


def kafka_python_sasl(
    mechanism: str, user: str = "alice", password: str | None = None, tls: TlsFiles | None = None
):
    config = {
        "security_protocol": "SASL_PLAINTEXT" if tls is None else "SASL_SSL",
        "sasl_mechanism": mechanism,
        "sasl_plain_username": user,
        "sasl_plain_password": USERS[user] if password is None else password,
    }
    return config if tls is None else {**config, "ssl_cafile": str(tls.ca_file)}


@pytest.mark.parametrize("listener", ("SASL", "SASLSSL"))
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_kafka_python(sasl_broker, listener, mechanism) -> None:
    topic = f"kafka-python-{listener.lower()}-{mechanism.lower()}"
    config = kafka_python_sasl(mechanism, "bob", tls=tls_of(sasl_broker, listener))
    bootstrap = address(sasl_broker, listener)
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


@pytest.mark.parametrize(
    ("listener", "mechanism", "password", "refusal"),
    [
        ("SASL", "SCRAM-SHA-256", "wrong", "Invalid client credentials"),
        ("SASL", "PLAIN", "wrong", "Authentication failed: Invalid username or password"),
        ("PLAINONLY", "SCRAM-SHA-256", None, "unsupported SASL mechanism 'SCRAM-SHA-256'"),
    ],
)
def test_kafka_python_refused(sasl_broker, listener, mechanism, password, refusal) -> None:
    """kafka-python never gets in: it gives up bootstrapping, and the broker logged each
    refused attempt. (Which error kafka-python logs is its own race: the broker closes the
    connection right after its refusal, as Kafka does, and kafka-python 3.0 drops data
    that arrives together with the close. The refusals themselves are compared with
    Kafka's in test_sasl_kafka_parity.)"""
    logged = len(sasl_broker.log().splitlines())
    with pytest.raises(kafka.errors.KafkaTimeoutError, match="Unable to bootstrap"):
        KafkaProducer(
            bootstrap_servers=address(sasl_broker, listener),
            bootstrap_timeout_ms=2000,
            **kafka_python_sasl(mechanism, password=password),
        )
    failures = [
        line
        for line in sasl_broker.log().splitlines()[logged:]
        if "Failed authentication with client at 127.0.0.1:" in line
    ]
    assert failures and all(f" on {listener} ({refusal})" in line for line in failures), failures
    assert logs_in(sasl_broker.sasl_ports["SASL"], "SCRAM-SHA-256", "bob", USERS["bob"])


# -- aiokafka ------------------------------------------------------------------------------


def aiokafka_sasl(
    mechanism: str, user: str = "alice", password: str | None = None, tls: TlsFiles | None = None
):
    config = kafka_python_sasl(mechanism, user, password)
    if tls is None:
        return config
    context = ssl.create_default_context(cafile=str(tls.ca_file))
    return {**config, "security_protocol": "SASL_SSL", "ssl_context": context}


@pytest.mark.parametrize("listener", ("SASL", "SASLSSL"))
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_aiokafka(sasl_broker, listener, mechanism) -> None:
    topic = f"aiokafka-{listener.lower()}-{mechanism.lower()}"
    config = aiokafka_sasl(mechanism, tls=tls_of(sasl_broker, listener))

    async def main() -> list[bytes]:
        bootstrap = address(sasl_broker, listener)
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap, **config)
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
            auto_offset_reset="earliest",
            enable_auto_commit=False,
            **config,
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


def test_aiokafka_wrong_password(sasl_broker) -> None:
    async def main() -> None:
        producer = AIOKafkaProducer(
            bootstrap_servers=address(sasl_broker),
            **aiokafka_sasl("SCRAM-SHA-512", password="wrong"),
        )
        try:
            await producer.start()
        finally:
            await producer.stop()

    with pytest.raises(KafkaConnectionError, match="Unable to bootstrap"):
        asyncio.run(main())
    assert logs_in(sasl_broker.sasl_ports["SASL"], "PLAIN", "bob", USERS["bob"])


# -- Kafka's console tools -----------------------------------------------------------------


def properties_file(path: Path, properties: dict[str, str]) -> Path:
    path.write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    return path


@pytest.mark.parametrize(
    ("listener", "mechanism"),
    [("SASL", "PLAIN"), ("SASL", "SCRAM-SHA-512"), ("SASLSSL", "SCRAM-SHA-256")],
)
def test_kafkas_console_tools(sasl_broker, tmp_path, listener, mechanism) -> None:
    topic = f"console-{listener.lower()}-{mechanism.lower()}"
    tls = tls_of(sasl_broker, listener)
    module = (
        SCRAM_MODULE
        if mechanism != "PLAIN"
        else "org.apache.kafka.common.security.plain.PlainLoginModule"
    )
    config = properties_file(
        tmp_path / "client.properties",
        {
            **({} if tls is None else tls.client_properties()),
            "security.protocol": PROTOCOLS[listener],
            "sasl.mechanism": mechanism,
            "sasl.jaas.config": jaas(module, "alice", USERS["alice"]),
        },
    )
    lines = [f"line-{i}" for i in range(RECORDS)]
    produced = run_kafka_tool(
        "kafka-console-producer",
        *("--bootstrap-server", address(sasl_broker, listener), "--topic", topic),
        *("--producer.config", str(config)),
        stdin="\n".join(lines) + "\n",
    )
    assert produced.returncode == 0, produced.stderr[-3000:]
    consumed = run_kafka_tool(
        "kafka-console-consumer",
        *("--bootstrap-server", address(sasl_broker, listener), "--topic", topic),
        "--from-beginning",
        *("--max-messages", str(len(lines)), "--consumer.config", str(config)),
        timeout=120,
    )
    assert consumed.returncode == 0, consumed.stderr[-3000:]
    assert consumed.stdout.split() == lines


# -- SaslHandshake v0: raw tokens, as Kafka's oldest SASL clients send them ------------------


def raw_exchange(sock, tokens) -> list[bytes]:
    """Each token sent as a bare size-prefixed frame; the broker's answers, likewise."""
    answers = []
    for token in tokens:
        sock.sendall(struct.pack(">i", len(token)) + token)
        answers.append(read_frame(sock))
    return answers


@pytest.mark.parametrize("mechanism", ("PLAIN", "SCRAM-SHA-256"))
def test_handshake_v0_then_raw_tokens(sasl_broker, mechanism) -> None:
    with RawClient(sasl_broker.sasl_ports["SASL"]) as client:
        handshake = client.request(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": mechanism})
        assert handshake.error_code == ErrorCode.NONE and mechanism in handshake.mechanisms
        if mechanism == "PLAIN":
            assert raw_exchange(client.sock, [plain_client_token("bob", USERS["bob"])]) == [b""]
        else:
            scram = ScramClient(mechanism, "bob", USERS["bob"])
            (server_first,) = raw_exchange(client.sock, [scram.first()])
            (server_final,) = raw_exchange(client.sock, [scram.final(server_first)])
            scram.verify(server_final)
        assert client.request(ApiKey.METADATA, 1, {"topics": []}).brokers
