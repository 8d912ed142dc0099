"""Client quotas configured as on Kafka: ``kafka-configs.sh --bootstrap-server``
(AlterClientQuotas / DescribeClientQuotas) for users, client ids, both and their
defaults, stored in ZooKeeper as Kafka stores them beside a user's SCRAM credentials,
AlterClientQuotas' refusals as Kafka's, and a change made through one broker applied by
every broker. (Kafka 3.9's ``kafka-configs.sh --zookeeper`` takes only SCRAM
credentials for users and refuses client quotas: here it writes a user's credentials,
which a quota change then keeps.)

Two brokers serve the module; each test uses its own entity names.
"""

from __future__ import annotations

import json

import pytest

from integration.cluster import Cluster
from kafka_reference.tools import run_kafka_tool
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.records.builder import build_batch
from waiting import wait_until


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, module_chroot):
    with Cluster(tmp_path_factory.mktemp("quotas"), module_chroot, size=2) as running:
        yield running


def configs(cluster: Cluster, *args: str, zookeeper: bool = False):
    where = ("--zookeeper", cluster.zk_connect) if zookeeper else ("--bootstrap-server",)
    if not zookeeper:
        where = (*where, cluster.brokers[1].bootstrap)
    return run_kafka_tool("kafka-configs", *where, *args)


def ok(result) -> str:
    assert result.returncode == 0, f"exit {result.returncode}\n{result.stdout}\n{result.stderr}"
    return result.stdout


def znode(cluster: Cluster, path: str) -> dict:
    return json.loads(cluster.zk.get(path)[0])


def test_kafka_configs_sets_and_describes_quotas_where_kafka_keeps_them(cluster):
    ok(
        configs(
            cluster,
            *("--alter", "--entity-type", "users", "--entity-name", "carol"),
            *("--add-config", "SCRAM-SHA-256=[iterations=4096,password=secret]"),
            zookeeper=True,
        )
    )
    scram = znode(cluster, "/config/users/carol")["config"]["SCRAM-SHA-256"]
    ok(
        configs(
            cluster,
            *("--alter", "--entity-type", "users", "--entity-name", "carol"),
            *("--add-config", "producer_byte_rate=1024,consumer_byte_rate=2048"),
        )
    )
    ok(
        configs(
            cluster,
            *("--alter", "--entity-type", "users", "--entity-name", "carol"),
            *("--entity-type", "clients", "--entity-name", "app 1"),
            *("--add-config", "request_percentage=12.5"),
        )
    )
    ok(
        configs(
            cluster,
            *("--alter", "--entity-type", "clients", "--entity-default"),
            *("--add-config", "controller_mutation_rate=3"),
        )
    )
    assert znode(cluster, "/config/users/carol") == {
        "version": 1,
        "config": {
            "SCRAM-SHA-256": scram,
            "consumer_byte_rate": "2048",
            "producer_byte_rate": "1024",
        },
    }
    assert znode(cluster, "/config/users/carol/clients/app%201")["config"] == {
        "request_percentage": "12.5"
    }
    assert znode(cluster, "/config/clients/<default>")["config"] == {
        "controller_mutation_rate": "3.0"
    }
    changes = [
        json.loads(cluster.zk.get(f"/config/changes/{name}")[0])
        for name in sorted(cluster.zk.get_children("/config/changes"))
    ]
    assert {"version": 2, "entity_path": "users/carol/clients/app%201"} in changes

    both = ok(
        configs(
            cluster,
            *("--describe", "--entity-type", "users", "--entity-name", "carol"),
            *("--entity-type", "clients", "--entity-name", "app 1"),
        )
    )
    assert both.strip() == (
        "Quota configs for user-principal 'carol', client-id 'app 1' are request_percentage=12.5"
    )
    clients = ok(configs(cluster, "--describe", "--entity-type", "clients"))
    assert "Quota configs for the default client-id are controller_mutation_rate=3.0" in clients
    users = ok(configs(cluster, "--describe", "--entity-type", "users", "--entity-name", "carol"))
    assert (
        "Quota configs for user-principal 'carol' are consumer_byte_rate=2048.0, "
        "producer_byte_rate=1024.0"
    ) in users
    assert "SCRAM credential configs for user-principal 'carol' are SCRAM-SHA-256" in users

    ok(
        configs(
            cluster,
            *("--alter", "--entity-type", "users", "--entity-name", "carol"),
            *("--delete-config", "consumer_byte_rate"),
        )
    )
    assert znode(cluster, "/config/users/carol")["config"] == {
        "SCRAM-SHA-256": scram,
        "producer_byte_rate": "1024",
    }
    # and a credential written through the broker (AlterUserScramCredentials) keeps them
    ok(
        configs(
            cluster,
            *("--alter", "--entity-type", "users", "--entity-name", "carol"),
            *("--add-config", "SCRAM-SHA-512=[password=other]"),
        )
    )
    kept = znode(cluster, "/config/users/carol")["config"]
    assert kept["producer_byte_rate"] == "1024"
    assert set(kept) == {"SCRAM-SHA-256", "SCRAM-SHA-512", "producer_byte_rate"}


def alter(connection: BrokerConnection, entity: list[tuple[str, str | None]], ops, **request):
    response = connection.request(
        ApiKey.ALTER_CLIENT_QUOTAS,
        request.get("version"),
        {
            "entries": [
                {
                    "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
                    "ops": [{"key": k, "value": v, "remove": v is None} for k, v in ops],
                }
            ],
            "validate_only": request.get("validate_only", False),
        },
    )
    (entry,) = response.entries
    return entry.error_code, entry.error_message


def describe(connection: BrokerConnection, components, strict=False, version=None):
    return connection.request(
        ApiKey.DESCRIBE_CLIENT_QUOTAS,
        version,
        {
            "components": [
                {"entity_type": t, "match_type": m, "match": n} for t, m, n in components
            ],
            "strict": strict,
        },
    )


def entries(response) -> dict:
    return {
        tuple((e.entity_type, e.entity_name) for e in entry.entity): {
            v.key: v.value for v in entry.values
        }
        for entry in response.entries
    }


def test_alter_and_describe_client_quotas_answer_as_kafka(cluster):
    invalid = ErrorCode.INVALID_REQUEST
    with cluster.connect(2) as connection:
        assert alter(connection, [("user", "dora")], [("producer_byte_rate", 10.0)]) == (0, None)
        assert (
            alter(connection, [("user", None), ("client-id", "d1")], [("request_percentage", 7)])[0]
            == 0
        )
        assert alter(connection, [("user", "dora")], [("foo", 1.0)]) == (
            invalid,
            "Invalid configuration key foo",
        )
        assert alter(connection, [("user", "dora")], [("consumer_byte_rate", 1.5)]) == (
            invalid,
            "Configuration consumer_byte_rate must be a LONG value",
        )
        assert alter(connection, [], [("producer_byte_rate", 1.0)]) == (
            invalid,
            "Invalid empty client quota entity",
        )
        assert alter(connection, [("group", "g")], [("producer_byte_rate", 1.0)]) == (
            invalid,
            "Unhandled client quota entity type: group",
        )
        assert alter(connection, [("client-id", "")], [("producer_byte_rate", 1.0)]) == (
            invalid,
            "Empty client-id not supported",
        )
        validated = alter(
            connection, [("client-id", "d2")], [("producer_byte_rate", 5.0)], validate_only=True
        )
        assert validated == (0, None)
        assert not cluster.zk.exists("/config/clients/d2")

        exact_user = describe(connection, [("user", 0, "dora")])
        assert entries(exact_user) == {(("user", "dora"),): {"producer_byte_rate": 10.0}}
        # version 0, before flexible versions, answers the same
        assert alter(connection, [("user", "dora")], [("consumer_byte_rate", 9.0)], version=0) == (
            0,
            None,
        )
        assert entries(describe(connection, [("user", 0, "dora")], version=0)) == {
            (("user", "dora"),): {"producer_byte_rate": 10.0, "consumer_byte_rate": 9.0}
        }
        assert alter(connection, [("client-id", "d3")], [("consumer_byte_rate", 3.0)])[0] == 0
        any_client = entries(describe(connection, [("client-id", 2, None)], strict=True))
        assert any_client[(("client-id", "d3"),)] == {"consumer_byte_rate": 3.0}
        assert all(len(entity) == 1 for entity in any_client)  # strict: no user part
        default_user = entries(describe(connection, [("user", 1, None)]))
        assert default_user == {(("user", None), ("client-id", "d1")): {"request_percentage": 7.0}}
        strict_default_user = entries(describe(connection, [("user", 1, None)], strict=True))
        assert strict_default_user == {}
        custom = describe(connection, [("group", 2, None)])
        assert (custom.error_code, custom.error_message) == (
            ErrorCode.UNSUPPORTED_VERSION,
            "Custom entity type 'group' not supported",
        )


def produce_throttle_ms(cluster: Cluster, broker_id: int, topic: str, partition: int) -> int:
    """A Produce of one small batch from client id ``slow``: its throttle_time_ms."""
    broker = cluster.brokers[broker_id]
    with BrokerConnection("127.0.0.1", broker.port, client_id="slow", timeout=10) as connection:
        response = connection.request(
            ApiKey.PRODUCE,
            None,
            {
                "acks": 1,
                "timeout_ms": 5000,
                "topic_data": [
                    {
                        "name": topic,
                        "partition_data": [
                            {"index": partition, "records": build_batch([(None, b"x" * 100)])}
                        ],
                    }
                ],
            },
        )
    (topic_response,) = response.responses
    assert topic_response.partition_responses[0].error_code == 0
    return response.throttle_time_ms


def test_a_quota_set_through_one_broker_is_applied_by_every_broker(cluster):
    cluster.create_topic("everywhere", assignment={0: [1], 1: [2]})
    assert produce_throttle_ms(cluster, 1, "everywhere", 0) == 0
    assert produce_throttle_ms(cluster, 2, "everywhere", 1) == 0
    ok(
        configs(
            cluster,
            *("--alter", "--entity-type", "clients", "--entity-name", "slow"),
            *("--add-config", "producer_byte_rate=1"),
        )
    )
    for broker_id, partition in ((1, 0), (2, 1)):
        wait_until(
            lambda b=broker_id, p=partition: produce_throttle_ms(cluster, b, "everywhere", p) > 0,
            f"broker {broker_id} throttles client id slow",
        )
