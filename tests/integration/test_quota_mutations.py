"""The controller mutation quota (KIP-599) on a real broker: partitions created or deleted
take tokens of the client's ``controller_mutation_rate`` bucket (the rate times 11
windows of a second); in the strict versions (CreateTopics v6+, CreatePartitions v3+,
DeleteTopics v5+) the topics after the bucket went into debt are refused with
THROTTLING_QUOTA_EXCEEDED and the response says how long the debt lasts; older versions
serve every topic and throttle the client instead; validate-only requests take no token;
a client id without a quota is not concerned.

Every client's quota is set in one AlterClientQuotas request whose last entry is the
probe's: the broker applies the notifications in order, so once the probe's quota is in
force, so are the others, whose buckets are still full.
"""

from __future__ import annotations

import itertools

import pytest

from integration.cluster import Cluster
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from waiting import wait_until

RATE = 2  # partitions a second: a bucket of 22 tokens
CLIENTS = ("strict", "permissive", "grower", "deleter", "probe")
THROTTLED = ErrorCode.THROTTLING_QUOTA_EXCEEDED


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, module_chroot):
    with Cluster(tmp_path_factory.mktemp("mutations"), module_chroot, size=1) as running:
        set_mutation_rates(running)
        yield running


def connect(cluster: Cluster, client_id: str) -> BrokerConnection:
    return BrokerConnection("127.0.0.1", cluster.brokers[1].port, client_id=client_id, timeout=30)


def set_mutation_rates(cluster: Cluster) -> None:
    with cluster.connect(1) as connection:
        response = connection.request(
            ApiKey.ALTER_CLIENT_QUOTAS,
            None,
            {
                "entries": [
                    {
                        "entity": [{"entity_type": "client-id", "entity_name": client_id}],
                        "ops": [
                            {"key": "controller_mutation_rate", "value": RATE, "remove": False}
                        ],
                    }
                    for client_id in CLIENTS
                ],
                "validate_only": False,
            },
        )
    assert [entry.error_code for entry in response.entries] == [0] * len(CLIENTS)
    probes = itertools.count()
    with connect(cluster, "probe") as connection:

        def in_force() -> bool:
            """23 partitions take the bucket into debt: the next topic is refused."""
            create_topics(connection, 7, {f"probe-{next(probes)}": 23})
            checked = create_topics(connection, 7, {f"probe-{next(probes)}": 1})
            return checked.topics[0].error_code == THROTTLED

        wait_until(in_force, "the controller mutation quotas in force")


def create_topics(connection, version: int, topics: dict[str, int], validate_only=False):
    return connection.request(
        ApiKey.CREATE_TOPICS,
        version,
        {
            "topics": [
                {"name": name, "num_partitions": count, "replication_factor": 1}
                for name, count in topics.items()
            ],
            "timeout_ms": 10_000,
            "validate_only": validate_only,
        },
    )


def errors(results) -> dict[str, int]:
    return {result.name: result.error_code for result in results}


def test_strict_create_topics_serves_topics_until_the_bucket_is_in_debt(cluster):
    with connect(cluster, "strict") as connection:
        dry = create_topics(connection, 7, {"s-dry": 50}, validate_only=True)
        assert errors(dry.topics) == {"s-dry": ErrorCode.NONE}
        response = create_topics(connection, 7, {"s-one": 20, "s-two": 5, "s-three": 1})
        assert errors(response.topics) == {
            "s-one": ErrorCode.NONE,  # 22 tokens -> 2
            "s-two": ErrorCode.NONE,  # 2 -> -3: a debt of 1.5 s
            "s-three": THROTTLED,
        }
        refused = response.topics[2]
        assert refused.error_message == "The throttling quota has been exceeded."
        assert 0 < response.throttle_time_ms <= 1500
    with connect(cluster, "no-quota") as other:
        assert errors(create_topics(other, 7, {"o-one": 30}).topics) == {"o-one": 0}


def test_older_versions_serve_every_topic_and_throttle_the_client(cluster):
    with connect(cluster, "permissive") as connection:
        first = create_topics(connection, 5, {"p-one": 30})  # 22 -> -8: 4 s of debt
        assert errors(first.topics) == {"p-one": ErrorCode.NONE}
        assert 3500 <= first.throttle_time_ms <= 4000
        second = create_topics(connection, 5, {"p-two": 1})
        assert errors(second.topics) == {"p-two": ErrorCode.NONE}
        assert second.throttle_time_ms > 0


def test_strict_create_partitions_and_delete_topics(cluster):
    with connect(cluster, "no-quota") as other:
        assert errors(create_topics(other, 7, {"g": 1, "d-big": 30, "d-small": 1}).topics) == {
            "g": 0,
            "d-big": 0,
            "d-small": 0,
        }
    with connect(cluster, "grower") as connection:

        def grow(count: int):
            return connection.request(
                ApiKey.CREATE_PARTITIONS,
                3,
                {
                    "topics": [{"name": "g", "count": count, "assignments": None}],
                    "timeout_ms": 10_000,
                    "validate_only": False,
                },
            )

        assert grow(30).results[0].error_code == ErrorCode.NONE  # 29 added: 22 -> -7
        refused = grow(31)
        assert refused.results[0].error_code == THROTTLED
        assert refused.throttle_time_ms > 0
    with connect(cluster, "deleter") as connection:
        response = connection.request(
            ApiKey.DELETE_TOPICS,
            6,
            {
                "topics": [{"name": "d-big"}, {"name": "d-small"}],
                "timeout_ms": 10_000,
            },
        )
        assert errors(response.responses) == {"d-big": ErrorCode.NONE, "d-small": THROTTLED}
