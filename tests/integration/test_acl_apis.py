"""Authorization over the APIs, table-driven, on tidelog and on Apache Kafka 3.9 with the
same ACLs: each row sends one request as ``User:alice`` (SASL/PLAIN), first without the
right it needs (Kafka's authorization error, the same for a topic that does not exist as
for one that does), then after each grant, written to ZooKeeper through the ACL store
that both brokers follow. Every step waits for its effect; none sleeps.

Both brokers run ``kafka.security.authorizer.AclAuthorizer`` with the same listeners: a
SASL_PLAINTEXT one for alice, and the PLAINTEXT inter-broker one, whose
``User:ANONYMOUS`` is the super user (Kafka's controller reaches its own broker there)."""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import pytest
from kazoo.client import KazooClient

from integration.broker_process import BrokerProcess, free_port
from kafka_reference import kafka_libs
from tidelog.admin.connection import BrokerConnection
from tidelog.cli.acls import main as acls_main
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.records import build_batch
from tidelog.security.acl_store import AclStore
from tidelog.security.acls import (
    CLUSTER_NAME,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    ResourcePattern,
    ResourceType,
)
from tidelog.security.client_security import ClientSecurity
from tidelog.zookeeper import find_java
from waiting import WaitTimeout, wait_until

E = ErrorCode
OP = AclOperation
ALICE = "User:alice"
PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
ALICE_SECURITY = ClientSecurity.from_properties(
    {
        "security.protocol": "SASL_PLAINTEXT",
        "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": f'{PLAIN_MODULE} required username="alice" password="alice-secret";',
    }
)
TOPIC = "acl-t"
MISSING = "acl-missing"
GROUP = "acl-g"


def security_overrides(plaintext_port: int, sasl_port: int) -> dict[str, str]:
    return {
        "listeners": f"PLAINTEXT://127.0.0.1:{plaintext_port},"
        f"SASL_PLAINTEXT://127.0.0.1:{sasl_port}",
        "inter.broker.listener.name": "PLAINTEXT",
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": f"{PLAIN_MODULE} required "
        'username="admin" password="admin-secret" user_alice="alice-secret";',
        "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
        "super.users": "User:ANONYMOUS",
        "auto.create.topics.enable": "false",
    }


def topic(name: str = TOPIC) -> ResourcePattern:
    return ResourcePattern(ResourceType.TOPIC, name)


def group(name: str = GROUP) -> ResourcePattern:
    return ResourcePattern(ResourceType.GROUP, name)


CLUSTER = ResourcePattern(ResourceType.CLUSTER, CLUSTER_NAME)


class KafkaBroker(BrokerProcess):
    """Apache Kafka 3.9's broker (ZooKeeper mode), from the test cache's jars."""

    name = "Kafka"
    start_timeout = 90.0

    def extra_properties(self) -> dict[str, str]:
        return {
            "offsets.topic.replication.factor": "1",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
        }

    def command(self) -> list[str]:
        return [
            find_java(),
            "-Xmx512m",
            "-XX:+UseSerialGC",
            "-XX:TieredStopAtLevel=1",
            "-cp",
            f"{kafka_libs()}/*",
            "kafka.Kafka",
            str(self.config_path),
        ]


class Target:
    """One broker under test, its ZooKeeper ACL store and a connection to it."""

    def __init__(self, broker: BrokerProcess, sasl_port: int, zk_connect: str):
        self.broker = broker
        self.sasl_port = sasl_port
        self.zk = KazooClient(hosts=zk_connect)
        self.zk.start(timeout=10)
        self.store = AclStore(self.zk)

    def grant(self, pattern: ResourcePattern, operation: AclOperation) -> None:
        entry = AccessControlEntry(ALICE, "*", operation, AclPermissionType.ALLOW)
        self.store.update(pattern, lambda entries: entries | {entry})

    def revoke_all(self) -> None:
        for pattern in self.store.load_all():
            self.store.update(pattern, lambda _: frozenset())

    def request(self, api_key: ApiKey, version: int, body: dict):
        """As alice, through the SASL listener."""
        with BrokerConnection("127.0.0.1", self.sasl_port, security=ALICE_SECURITY) as connection:
            return connection.request(api_key, version, body)

    def close(self) -> None:
        self.zk.stop()
        self.zk.close()


@pytest.fixture(scope="module", params=["tidelog", "kafka"])
def target(request, tmp_path_factory, zookeeper):
    kind = request.param
    connect = f"{zookeeper.connect_string}/acl-apis-{kind}"
    admin = KazooClient(hosts=zookeeper.connect_string)
    admin.start(timeout=10)
    admin.ensure_path(f"/acl-apis-{kind}")
    admin.stop()
    plaintext_port, sasl_port = free_port(), free_port()
    process_class = KafkaBroker if kind == "kafka" else BrokerProcess
    broker = process_class(
        tmp_path_factory.mktemp(f"acl-{kind}"),
        connect,
        port=plaintext_port,
        overrides=security_overrides(plaintext_port, sasl_port),
    ).start()
    made = Target(broker, sasl_port, connect)
    try:
        made.grant(CLUSTER, OP.CREATE)
        wait_until(
            lambda: _create(made, TOPIC, validate_only=False) in (E.NONE, E.TOPIC_ALREADY_EXISTS),
            f"{TOPIC} created on {kind}",
        )
        made.grant(group(), OP.READ)  # implies the Describe FindCoordinator needs
        made.grant(topic(), OP.READ)
        wait_until(lambda: _commit(made) == E.NONE, f"{GROUP} has committed offsets on {kind}")
        made.revoke_all()
        wait_until(
            lambda: _create(made, "acl-probe", validate_only=True) == E.TOPIC_AUTHORIZATION_FAILED,
            "Create on the cluster revoked",
        )
        yield made
    finally:
        code = made.broker.stop()
        made.close()
        # Kafka's JVM ends its shutdown hook with SIGTERM's status
        assert code == (143 if kind == "kafka" else 0), made.broker.log()[-3000:]


def _create(target: Target, name: str, *, validate_only: bool) -> ErrorCode:
    body = {
        "topics": [{"name": name, "num_partitions": 1, "replication_factor": 1}],
        "timeout_ms": 10000,
        "validate_only": validate_only,
    }
    (result,) = target.request(ApiKey.CREATE_TOPICS, 7, body).topics
    return ErrorCode(result.error_code)


def _commit(target: Target) -> ErrorCode:
    """An offset of the topic committed for the group (which makes the group known),
    once its coordinator is found (which makes the offsets topic)."""
    found = target.request(ApiKey.FIND_COORDINATOR, 3, {"key": GROUP, "key_type": 0})
    if found.error_code != E.NONE:
        return ErrorCode(found.error_code)
    body = {
        "group_id": GROUP,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 0}]}],
    }
    (result,) = target.request(ApiKey.OFFSET_COMMIT, 8, body).topics
    return ErrorCode(result.partitions[0].error_code)


@dataclass(frozen=True)
class Row:
    """A request and how to read its answer; ``steps``: the grants added before each
    expected answer (the first step grants nothing)."""

    api_key: ApiKey
    version: int
    body: dict
    answer: object  # response -> value compared
    steps: list = field(default_factory=list)


def _partition_code(topics_attr, partitions_attr):
    def read(response):
        (entry,) = getattr(response, topics_attr)
        (partition,) = getattr(entry, partitions_attr)
        return partition.error_code

    return read


def _topic_code(topics_attr):
    def read(response):
        (entry,) = getattr(response, topics_attr)
        return entry.error_code

    return read


def _top_code(response):
    return response.error_code


RECORDS = build_batch([(None, b"acl")])
ROWS = {
    "metadata existing topic": Row(
        ApiKey.METADATA,
        12,
        {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False},
        _topic_code("topics"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic(), OP.DESCRIBE)], E.NONE)],
    ),
    "metadata missing topic": Row(
        ApiKey.METADATA,
        12,
        {"topics": [{"name": MISSING}], "allow_auto_topic_creation": False},
        _topic_code("topics"),
        [
            ([], E.TOPIC_AUTHORIZATION_FAILED),
            ([(topic(MISSING), OP.DESCRIBE)], E.UNKNOWN_TOPIC_OR_PARTITION),
        ],
    ),
    "metadata of every topic": Row(
        ApiKey.METADATA,
        12,
        {"topics": None, "allow_auto_topic_creation": False},
        lambda response: TOPIC in {t.name for t in response.topics},
        [([], False), ([(topic(), OP.READ)], True)],
    ),
    "produce": Row(
        ApiKey.PRODUCE,
        8,
        {
            "acks": 1,
            "timeout_ms": 10000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": RECORDS}]}],
        },
        _partition_code("responses", "partition_responses"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic(), OP.WRITE)], E.NONE)],
    ),
    "produce to a missing topic": Row(
        ApiKey.PRODUCE,
        8,
        {
            "acks": 1,
            "timeout_ms": 10000,
            "topic_data": [{"name": MISSING, "partition_data": [{"index": 0, "records": RECORDS}]}],
        },
        _partition_code("responses", "partition_responses"),
        [([], E.TOPIC_AUTHORIZATION_FAILED)],
    ),
    "fetch": Row(
        ApiKey.FETCH,
        11,
        {
            "max_wait_ms": 0,
            "topics": [{"topic": TOPIC, "partitions": [{"partition": 0}]}],
        },
        _partition_code("responses", "partitions"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic(), OP.READ)], E.NONE)],
    ),
    "list offsets": Row(
        ApiKey.LIST_OFFSETS,
        7,
        {"topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "timestamp": -1}]}]},
        _partition_code("topics", "partitions"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic(), OP.DESCRIBE)], E.NONE)],
    ),
    "offsets for leader epoch": Row(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        4,
        {"topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
        _partition_code("topics", "partitions"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic(), OP.DESCRIBE)], E.NONE)],
    ),
    # ClusterAction on the cluster serves it too, whoever asks
    "offsets for leader epoch by cluster action": Row(
        ApiKey.OFFSET_FOR_LEADER_EPOCH,
        4,
        {"topics": [{"topic": TOPIC, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
        _partition_code("topics", "partitions"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(CLUSTER, OP.CLUSTER_ACTION)], E.NONE)],
    ),
    "follower fetch": Row(
        ApiKey.FETCH,
        11,
        {
            "replica_id": 5,
            "max_wait_ms": 0,
            "topics": [{"topic": TOPIC, "partitions": [{"partition": 0}]}],
        },
        _partition_code("responses", "partitions"),
        [([(topic(), OP.READ)], E.TOPIC_AUTHORIZATION_FAILED)],
    ),
    "leader and isr": Row(
        ApiKey.LEADER_AND_ISR,
        5,
        {"controller_id": 1, "controller_epoch": 1, "broker_epoch": -1, "topic_states": []},
        _top_code,
        [([], E.CLUSTER_AUTHORIZATION_FAILED)],
    ),
    "create topics": Row(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [{"name": "acl-new", "num_partitions": 1, "replication_factor": 1}],
            "timeout_ms": 10000,
            "validate_only": True,
        },
        _topic_code("topics"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic("acl-new"), OP.CREATE)], E.NONE)],
    ),
    "create topics, configs shown to whom may describe them": Row(
        ApiKey.CREATE_TOPICS,
        7,
        {
            "topics": [{"name": "acl-new", "num_partitions": 1, "replication_factor": 1}],
            "timeout_ms": 10000,
            "validate_only": True,
        },
        lambda response: (
            response.topics[0].error_code,
            response.topics[0].topic_config_error_code,
        ),
        [
            ([(topic("acl-new"), OP.CREATE)], (E.NONE, E.TOPIC_AUTHORIZATION_FAILED)),
            ([(topic("acl-new"), OP.DESCRIBE_CONFIGS)], (E.NONE, E.NONE)),
        ],
    ),
    "delete a missing topic": Row(
        ApiKey.DELETE_TOPICS,
        5,
        {"topic_names": [MISSING], "timeout_ms": 10000},
        _topic_code("responses"),
        [
            ([], E.TOPIC_AUTHORIZATION_FAILED),
            ([(topic(MISSING), OP.DELETE)], E.UNKNOWN_TOPIC_OR_PARTITION),
        ],
    ),
    "delete records": Row(
        ApiKey.DELETE_RECORDS,
        2,
        {
            "topics": [{"name": TOPIC, "partitions": [{"partition_index": 0, "offset": 0}]}],
            "timeout_ms": 10000,
        },
        _partition_code("topics", "partitions"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic(), OP.DELETE)], E.NONE)],
    ),
    "describe topic configs": Row(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {"resources": [{"resource_type": 2, "resource_name": TOPIC, "configuration_keys": None}]},
        _topic_code("results"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic(), OP.ALTER_CONFIGS)], E.NONE)],
    ),
    "describe broker configs": Row(
        ApiKey.DESCRIBE_CONFIGS,
        4,
        {"resources": [{"resource_type": 4, "resource_name": "1", "configuration_keys": None}]},
        _topic_code("results"),
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(CLUSTER, OP.DESCRIBE_CONFIGS)], E.NONE)],
    ),
    "alter topic configs": Row(
        ApiKey.INCREMENTAL_ALTER_CONFIGS,
        1,
        {
            "resources": [
                {
                    "resource_type": 2,
                    "resource_name": TOPIC,
                    "configs": [
                        {"name": "retention.ms", "config_operation": 0, "value": "86400000"}
                    ],
                }
            ],
            "validate_only": True,
        },
        _topic_code("responses"),
        [([], E.TOPIC_AUTHORIZATION_FAILED), ([(topic(), OP.ALTER_CONFIGS)], E.NONE)],
    ),
    "find coordinator": Row(
        ApiKey.FIND_COORDINATOR,
        3,
        {"key": GROUP, "key_type": 0},
        _top_code,
        [([], E.GROUP_AUTHORIZATION_FAILED), ([(group(), OP.DESCRIBE)], E.NONE)],
    ),
    "offset fetch": Row(
        ApiKey.OFFSET_FETCH,
        7,
        {"group_id": GROUP, "topics": None},
        _top_code,
        [([], E.GROUP_AUTHORIZATION_FAILED), ([(group(), OP.READ)], E.NONE)],
    ),
    "offset commit": Row(
        ApiKey.OFFSET_COMMIT,
        8,
        {
            "group_id": GROUP,
            "generation_id_or_member_epoch": -1,
            "member_id": "",
            "topics": [
                {"name": TOPIC, "partitions": [{"partition_index": 0, "committed_offset": 0}]}
            ],
        },
        _partition_code("topics", "partitions"),
        [
            ([], E.GROUP_AUTHORIZATION_FAILED),
            ([(group(), OP.READ)], E.TOPIC_AUTHORIZATION_FAILED),
            ([(topic(), OP.READ)], E.NONE),
        ],
    ),
    "describe groups": Row(
        ApiKey.DESCRIBE_GROUPS,
        5,
        {"groups": [GROUP]},
        _topic_code("groups"),
        [([], E.GROUP_AUTHORIZATION_FAILED), ([(group(), OP.DESCRIBE)], E.NONE)],
    ),
    "delete a missing group": Row(
        ApiKey.DELETE_GROUPS,
        2,
        {"groups_names": ["acl-no-group"]},
        _topic_code("results"),
        [
            ([], E.GROUP_AUTHORIZATION_FAILED),
            ([(group("acl-no-group"), OP.DELETE)], E.GROUP_ID_NOT_FOUND),
        ],
    ),
    "heartbeat": Row(
        ApiKey.HEARTBEAT,
        4,
        {"group_id": GROUP, "generation_id": 1, "member_id": "m"},
        _top_code,
        [([], E.GROUP_AUTHORIZATION_FAILED)],
    ),
    "init producer id, idempotent": Row(
        ApiKey.INIT_PRODUCER_ID,
        4,
        {"transactional_id": None, "transaction_timeout_ms": 60000},
        _top_code,
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(CLUSTER, OP.IDEMPOTENT_WRITE)], E.NONE)],
    ),
    "init producer id, idempotent by a topic's write": Row(
        ApiKey.INIT_PRODUCER_ID,
        4,
        {"transactional_id": None, "transaction_timeout_ms": 60000},
        _top_code,
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(topic("acl-any"), OP.WRITE)], E.NONE)],
    ),
    "init producer id, transactional": Row(
        ApiKey.INIT_PRODUCER_ID,
        4,
        {"transactional_id": "acl-tx", "transaction_timeout_ms": 60000},
        _top_code,
        [([], E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED)],
    ),
    "describe cluster's authorized operations": Row(
        ApiKey.DESCRIBE_CLUSTER,
        0,
        {"include_cluster_authorized_operations": True},
        lambda response: (response.error_code, response.cluster_authorized_operations),
        [
            ([], (E.NONE, 0)),
            ([(CLUSTER, OP.DESCRIBE)], (E.NONE, 1 << OP.DESCRIBE)),
        ],
    ),
    "describe log dirs": Row(
        ApiKey.DESCRIBE_LOG_DIRS,
        4,
        {"topics": None},
        _top_code,
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(CLUSTER, OP.DESCRIBE)], E.NONE)],
    ),
    "list partition reassignments": Row(
        ApiKey.LIST_PARTITION_REASSIGNMENTS,
        0,
        {"timeout_ms": 10000, "topics": None},
        _top_code,
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(CLUSTER, OP.DESCRIBE)], E.NONE)],
    ),
    "elect leaders": Row(
        ApiKey.ELECT_LEADERS,
        2,
        {
            "election_type": 0,
            "topic_partitions": [{"topic": TOPIC, "partitions": [0]}],
            "timeout_ms": 10000,
        },
        _top_code,
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(CLUSTER, OP.ALTER)], E.NONE)],
    ),
    "describe acls": Row(
        ApiKey.DESCRIBE_ACLS,
        3,
        {"resource_type_filter": 1, "pattern_type_filter": 1, "operation": 1, "permission_type": 1},
        _top_code,
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(CLUSTER, OP.DESCRIBE)], E.NONE)],
    ),
    "create acls": Row(
        ApiKey.CREATE_ACLS,
        3,
        {
            "creations": [
                {
                    "resource_type": 3,
                    "resource_name": "acl-created",
                    "resource_pattern_type": 3,
                    "principal": "User:someone",
                    "host": "*",
                    "operation": 3,
                    "permission_type": 3,
                }
            ]
        },
        _topic_code("results"),
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(CLUSTER, OP.ALTER)], E.NONE)],
    ),
    "delete acls": Row(
        ApiKey.DELETE_ACLS,
        3,
        {
            "filters": [
                {
                    "resource_type_filter": 1,
                    "pattern_type_filter": 1,
                    "operation": 1,
                    "permission_type": 1,
                    "principal_filter": "User:nobody",
                }
            ]
        },
        _topic_code("filter_results"),
        [([], E.CLUSTER_AUTHORIZATION_FAILED), ([(CLUSTER, OP.ALTER)], E.NONE)],
    ),
}

# Groups are listed to whom may Describe them, or the cluster.
for case, grant in (("by group", (group(), OP.DESCRIBE)), ("by cluster", (CLUSTER, OP.DESCRIBE))):
    ROWS[f"list groups, {case}"] = Row(
        ApiKey.LIST_GROUPS,
        4,
        {"states_filter": []},
        lambda response: (response.error_code, GROUP in {g.group_id for g in response.groups}),
        [([], (E.NONE, False)), ([grant], (E.NONE, True))],
    )
# A topic that does not exist is refused like one that does.
ROWS["fetch from a missing topic"] = Row(
    ApiKey.FETCH,
    11,
    {"max_wait_ms": 0, "topics": [{"topic": MISSING, "partitions": [{"partition": 0}]}]},
    _partition_code("responses", "partitions"),
    [([], E.TOPIC_AUTHORIZATION_FAILED)],
)
ROWS["list offsets of a missing topic"] = Row(
    ApiKey.LIST_OFFSETS,
    7,
    {"topics": [{"name": MISSING, "partitions": [{"partition_index": 0, "timestamp": -1}]}]},
    _partition_code("topics", "partitions"),
    [([], E.TOPIC_AUTHORIZATION_FAILED)],
)

# The operations a client may ask to see (Metadata v8+), as bit fields.
ROWS["metadata with the topic's authorized operations"] = Row(
    ApiKey.METADATA,
    12,
    {
        "topics": [{"name": TOPIC}],
        "allow_auto_topic_creation": False,
        "include_topic_authorized_operations": True,
    },
    lambda response: (
        response.topics[0].error_code,
        response.topics[0].topic_authorized_operations,
    ),
    [
        ([(topic(), OP.DESCRIBE)], (E.NONE, 1 << OP.DESCRIBE)),
        ([(topic(), OP.WRITE)], (E.NONE, 1 << OP.DESCRIBE | 1 << OP.WRITE)),
    ],
)
ROWS["describe groups with their authorized operations"] = Row(
    ApiKey.DESCRIBE_GROUPS,
    5,
    {"groups": [GROUP], "include_authorized_operations": True},
    lambda response: (response.groups[0].error_code, response.groups[0].authorized_operations),
    [
        ([(group(), OP.DESCRIBE)], (E.NONE, 1 << OP.DESCRIBE)),
        ([(group(), OP.DELETE)], (E.NONE, 1 << OP.DESCRIBE | 1 << OP.DELETE)),
    ],
)
ROWS["metadata with the cluster's authorized operations"] = Row(
    ApiKey.METADATA,
    10,
    {
        "topics": [],
        "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": True,
    },
    lambda response: response.cluster_authorized_operations,
    [
        ([], 0),
        ([(CLUSTER, OP.DESCRIBE)], 1 << OP.DESCRIBE),
        ([(CLUSTER, OP.ALTER)], 1 << OP.DESCRIBE | 1 << OP.ALTER),
    ],
)
# Requests naming several topics: each answered on its own.
ROWS["produce to an allowed and a refused topic"] = Row(
    ApiKey.PRODUCE,
    8,
    {
        "acks": 1,
        "timeout_ms": 10000,
        "topic_data": [
            {"name": name, "partition_data": [{"index": 0, "records": RECORDS}]}
            for name in (TOPIC, MISSING)
        ],
    },
    lambda response: {
        t.name: [p.error_code for p in t.partition_responses] for t in response.responses
    },
    [([(topic(), OP.WRITE)], {TOPIC: [E.NONE], MISSING: [E.TOPIC_AUTHORIZATION_FAILED]})],
)
ROWS["metadata of an allowed and a refused topic"] = Row(
    ApiKey.METADATA,
    12,
    {"topics": [{"name": TOPIC}, {"name": MISSING}], "allow_auto_topic_creation": False},
    lambda response: {t.name: t.error_code for t in response.topics},
    [([(topic(), OP.DESCRIBE)], {TOPIC: E.NONE, MISSING: E.TOPIC_AUTHORIZATION_FAILED})],
)

# CreateAcls that Kafka refuses one by one (with Alter on the cluster granted): the
# invalid names with INVALID_REQUEST, the values only filters hold and a principal
# without a type with UNKNOWN_SERVER_ERROR, as Kafka's ZooKeeper-mode broker answers.
BAD_CREATIONS = {
    "cluster not named kafka-cluster": (
        {"resource_type": 4, "resource_name": "other"},
        E.INVALID_REQUEST,
    ),
    "empty name": ({"resource_type": 2, "resource_name": ""}, E.INVALID_REQUEST),
    "pattern type match": (
        {"resource_type": 2, "resource_name": "t", "resource_pattern_type": 2},
        E.UNKNOWN_SERVER_ERROR,
    ),
    "operation any": (
        {"resource_type": 2, "resource_name": "t", "operation": 1},
        E.UNKNOWN_SERVER_ERROR,
    ),
    "principal without a type": (
        {"resource_type": 2, "resource_name": "t", "principal": "bob"},
        E.UNKNOWN_SERVER_ERROR,
    ),
}
for case, (fields, code) in BAD_CREATIONS.items():
    creation = {
        "resource_pattern_type": 3,
        "principal": "User:someone",
        "host": "*",
        "operation": 3,
        "permission_type": 3,
        **fields,
    }
    ROWS[f"create acls, {case}"] = Row(
        ApiKey.CREATE_ACLS,
        3,
        {"creations": [creation]},
        _topic_code("results"),
        [([(CLUSTER, OP.ALTER)], code)],
    )


@pytest.mark.parametrize("row", ROWS.values(), ids=ROWS)
def test_api_needs_its_right(target, row):
    try:
        for grants, expected in row.steps:
            for pattern, operation in grants:
                target.grant(pattern, operation)
            answers = []

            def settled(expected=expected, answers=answers) -> bool:
                answers.append(row.answer(target.request(row.api_key, row.version, row.body)))
                return answers[-1] == expected

            try:
                wait_until(settled, f"{row.api_key.name} answers {expected!r}", timeout=15)
            except WaitTimeout as error:
                raise AssertionError(
                    f"{error} after granting {grants}; it answers {answers[-1]!r}"
                ) from None
    finally:
        target.revoke_all()


def test_tidelog_acls_as_a_sasl_user(target, tmp_path):
    """``tidelog-acls --command-config`` logs in as alice; listing needs Describe on
    the cluster, adding Alter."""
    properties = tmp_path / "alice.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        f'sasl.jaas.config={PLAIN_MODULE} required username="alice" password="alice-secret";\n'
    )
    base = ["--bootstrap-server", f"127.0.0.1:{target.sasl_port}"]
    base += ["--command-config", str(properties)]
    add = [*base, "--add", "--allow-principal", "User:bob", "--operation", "Read"]
    add += ["--topic", "acl-cli"]

    def run(argv) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        return acls_main(argv, out, err), out.getvalue(), err.getvalue()

    try:
        # (the grants of the test before are revoked: wait until the broker has seen it)
        code, _, err = wait_until(
            lambda: (answer := run([*base, "--list"]))[0] == 1 and answer,
            "alice may not list the ACLs",
        )
        assert err.startswith("Error: ACL command failed due to ") and err.count("\n") == 1, err
        target.grant(CLUSTER, OP.ALTER)
        wait_until(lambda: run(add)[0] == 0, "alice adds an ACL once she may alter the cluster")
        code, out, _ = run([*base, "--list", "--topic", "acl-cli"])
        assert code == 0 and "(principal=User:bob, host=*, operation=READ" in out
    finally:
        target.revoke_all()
