"""SCRAM credentials managed as on Kafka: ``kafka-configs.sh --bootstrap-server``
(AlterUserScramCredentials / DescribeUserScramCredentials) and ``--zookeeper`` (the znode
written directly) agree on ``/config/users/<user>``; what is stored verifies the password;
the refusals are Kafka's; a user's other keys survive. One broker serves the module;
each test uses its own user names."""

from __future__ import annotations

import json

import pytest
from kazoo.client import KazooClient

from integration.broker_process import BrokerProcess
from kafka_reference.tools import run_kafka_tool
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.sasl import ScramServer
from tidelog.security.sasl_client import ScramClient
from tidelog.security.scram_credentials import ScramCredential


@pytest.fixture(scope="module")
def broker(tmp_path_factory, module_chroot):
    process = BrokerProcess(tmp_path_factory.mktemp("scram"), module_chroot).start()
    yield process
    assert process.stop() == 0, process.log()[-3000:]


def configs(broker, *args: str, zookeeper: str | None = None):
    where = ("--zookeeper", zookeeper) if zookeeper else ("--bootstrap-server", broker.bootstrap)
    return run_kafka_tool("kafka-configs", *where, "--entity-type", "users", *args)


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def stored(zk_connect: str, user: str) -> dict[str, str]:
    client = KazooClient(hosts=zk_connect)
    client.start()
    try:
        return json.loads(client.get(f"/config/users/{user}")[0])["config"]
    finally:
        client.stop()


def logs_in(credential_text: str, mechanism: str, user: str, password: str) -> bool:
    server = ScramServer(mechanism, {user: ScramCredential.parse(credential_text)}.get)
    client = ScramClient(mechanism, user, password)
    try:
        client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    except Exception:
        return False
    return server.complete


def test_kafka_configs_alters_and_describes_credentials(broker, module_chroot):
    out = ok(
        configs(
            broker,
            *("--alter", "--entity-name", "alice"),
            "--add-config",
            "SCRAM-SHA-512=[password=alice-secret],SCRAM-SHA-256=[iterations=8192,password=a2]",
        )
    )
    assert "Completed updating config for user alice." in out
    described = ok(configs(broker, "--describe", "--entity-name", "alice"))
    assert (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096"
    ) in described
    config = stored(module_chroot, "alice")
    assert (
        config["SCRAM-SHA-512"].startswith("salt=") and "iterations=4096" in config["SCRAM-SHA-512"]
    )
    assert logs_in(config["SCRAM-SHA-512"], "SCRAM-SHA-512", "alice", "alice-secret")
    assert not logs_in(config["SCRAM-SHA-512"], "SCRAM-SHA-512", "alice", "alice-secreT")
    assert logs_in(config["SCRAM-SHA-256"], "SCRAM-SHA-256", "alice", "a2")

    ok(configs(broker, "--alter", "--entity-name", "alice", "--delete-config", "SCRAM-SHA-256"))
    described = ok(configs(broker, "--describe", "--entity-name", "alice"))
    assert "are SCRAM-SHA-512=iterations=4096" in described
    assert set(stored(module_chroot, "alice")) == {"SCRAM-SHA-512"}


def test_kafka_configs_refusals_are_kafkas(broker):
    missing = configs(broker, "--alter", "--entity-name", "bob", "--delete-config", "SCRAM-SHA-256")
    assert missing.returncode != 0
    assert "Attempt to delete a user credential that does not exist" in missing.stderr
    # kafka-configs.sh checks iterations itself; the broker checks them again
    with BrokerConnection("127.0.0.1", broker.port) as connection:
        answer = connection.request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {
                "deletions": [],
                "upsertions": [
                    {
                        "name": user,
                        "mechanism": 2,
                        "iterations": iterations,
                        "salt": b"s",
                        "salted_password": b"p" * 64,
                    }
                    for user, iterations in (("bob", 4095), ("bobby", 16385))
                ],
            },
        )
    assert [(r.user, r.error_code, r.error_message) for r in answer.results] == [
        ("bob", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too few iterations"),
        ("bobby", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Too many iterations"),
    ]


def test_zookeeper_written_credentials_are_described_and_other_keys_kept(broker, module_chroot):
    ok(
        configs(
            broker,
            *("--alter", "--entity-name", "carol@example.com"),
            *("--add-config", "SCRAM-SHA-256=[iterations=4096,password=c1]"),
            zookeeper=module_chroot,
        )
    )
    # the user's znode also holds a quota, as Kafka keeps both in one document
    client = KazooClient(hosts=module_chroot)
    client.start()
    path = "/config/users/carol%40example.com"
    document = json.loads(client.get(path)[0])
    document["config"]["producer_byte_rate"] = "1024"
    client.set(path, json.dumps(document).encode())
    client.stop()
    ok(
        configs(
            broker,
            *("--alter", "--entity-name", "carol@example.com"),
            *("--add-config", "SCRAM-SHA-512=[password=c2]"),
        )
    )
    assert set(stored(module_chroot, "carol%40example.com")) == {
        "SCRAM-SHA-256",
        "SCRAM-SHA-512",
        "producer_byte_rate",
    }
    with BrokerConnection("127.0.0.1", broker.port) as connection:
        everyone = connection.request(ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, 0, {"users": None})
        assert "carol@example.com" in [r.user for r in everyone.results]
        named = connection.request(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            0,
            {
                "users": [
                    {"name": "carol@example.com"},
                    {"name": "nobody"},
                    {"name": "x"},
                    {"name": "x"},
                ]
            },
        )
    assert [(r.user, r.error_code) for r in named.results] == [
        ("carol@example.com", ErrorCode.NONE),
        ("nobody", ErrorCode.RESOURCE_NOT_FOUND),
        ("x", ErrorCode.DUPLICATE_RESOURCE),
    ]
    assert [(i.mechanism, i.iterations) for i in named.results[0].credential_infos] == [
        (1, 4096),
        (2, 4096),
    ]


def test_alter_refuses_a_user_whole_and_applies_the_others(broker, module_chroot):
    salted = b"s" * 64
    with BrokerConnection("127.0.0.1", broker.port) as connection:
        answer = connection.request(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            0,
            {
                "deletions": [{"name": "dave", "mechanism": 1}],
                "upsertions": [
                    {
                        "name": "dave",
                        "mechanism": 1,
                        "iterations": 4096,
                        "salt": b"x",
                        "salted_password": salted,
                    },
                    {
                        "name": "erin",
                        "mechanism": 2,
                        "iterations": 4096,
                        "salt": b"x",
                        "salted_password": salted,
                    },
                    {
                        "name": "frank",
                        "mechanism": 3,
                        "iterations": 4096,
                        "salt": b"x",
                        "salted_password": salted,
                    },
                    {
                        "name": "",
                        "mechanism": 2,
                        "iterations": 4096,
                        "salt": b"x",
                        "salted_password": salted,
                    },
                ],
            },
        )
    # in Kafka's order: the illegal, the duplicated, then the done
    assert [(r.user, r.error_code, r.error_message) for r in answer.results] == [
        ("frank", ErrorCode.UNSUPPORTED_SASL_MECHANISM, "Unknown SCRAM mechanism"),
        ("", ErrorCode.UNACCEPTABLE_CREDENTIAL, "Username must not be empty"),
        (
            "dave",
            ErrorCode.DUPLICATE_RESOURCE,
            "A user credential cannot be altered twice in the same request",
        ),
        ("erin", ErrorCode.NONE, ""),
    ]
    assert set(stored(module_chroot, "erin")) == {"SCRAM-SHA-512"}
