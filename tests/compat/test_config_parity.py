"""Topic and broker config values: accepted or refused by tidelog exactly as by Kafka 3.9.

Every value of the table goes through Kafka's own validation (``KafkaConfigValidator.java``,
one JVM for the whole table: ``LogConfig.validate`` as a ZooKeeper-mode broker checks a
CreateTopics or AlterConfigs request, ``KafkaConfig.fromProps`` as a broker reads
``server.properties``) and through tidelog's (``validate_topic_config``, which both
CreateTopics and AlterConfigs call; ``BrokerConfig`` as the broker reads its file). One
case per key; it fails listing each value the two answer differently. A value both refuse
must be refused by tidelog with a message naming the key and the value, as Kafka's does.

The table: the typical values of each key's type, its type's limits and one past them,
the bounds of Kafka's validator and one past them (checked against Kafka's ConfigDef by
``test_ranges_are_kafkas``), wrongly typed and oddly written values, and for enums, lists
and versions their members, case variants and strangers.

Never skipped: without Apache Kafka's jars these tests fail, telling to run
`make kafka-libs`.
"""

from __future__ import annotations

import re

import pytest

from kafka_reference import run_java_jobs
from tidelog.protocol.admin_enums import ConfigType
from tidelog.server.config import BROKER_CONFIGS, BrokerConfig, ConfigError
from tidelog.server.handlers.config_resources import validate_topic_config
from tidelog.storage.config import LogConfigError
from tidelog.storage.topic_configs import TOPIC_CONFIGS

ZOOKEEPER = {"zookeeper.connect": "127.0.0.1:2181"}  # as KafkaConfigValidator sets it

LIMITS = {
    "short": (-(2**15), 2**15 - 1),
    "int": (-(2**31), 2**31 - 1),
    "long": (-(2**63), 2**63 - 1),
}

# Broker keys of tidelog's table left out, and why.
BROKER_KEYS_LEFT_OUT = {
    # tidelog's own keys: Kafka has none to compare with.
    "log.dirs.draining": "tidelog's own key",
    "socket.idle.poll.us": "tidelog's own key",
    # Dynamic-only in Kafka (DynamicConfig.Broker): KafkaConfig ignores them in a file.
    "leader.replication.throttled.rate": "dynamic-only in Kafka, not KafkaConfig's",
    "follower.replication.throttled.rate": "dynamic-only in Kafka, not KafkaConfig's",
    "replica.alter.log.dirs.io.max.bytes.per.second": "dynamic-only in Kafka, not KafkaConfig's",
    # Refused only in combination with other keys (listener names, their protocols, the
    # inter-broker listener) or depending on the machine (directories, addresses).
    "listeners": "valid only with listener.security.protocol.map and the other listeners",
    "advertised.listeners": "valid only together with listeners",
    "listener.security.protocol.map": "valid only together with listeners",
    "inter.broker.listener.name": "valid only if it names one of the listeners",
    "zookeeper.connect": "set by the table itself (a ZooKeeper-mode broker needs it)",
    "log.dirs": "directories of the machine",
    "log.dir": "a directory of the machine",
    "broker.rack": "any string, nothing to refuse",
    # The authorizer's: Kafka's KafkaConfig takes any class name (the broker fails later,
    # loading it) and leaves the AclAuthorizer's own keys to the authorizer.
    "authorizer.class.name": "any string to KafkaConfig; tidelog refuses unknown classes",
    "client.quota.callback.class": "a class Kafka loads; tidelog refuses any",
    "super.users": "the AclAuthorizer's key, not KafkaConfig's",
    "allow.everyone.if.no.acl.found": "the AclAuthorizer's key, not KafkaConfig's",
    # Kafka's password type takes any string: nothing to refuse.
    "ssl.keystore.password": "any string",
    "ssl.key.password": "any string",
    "ssl.truststore.password": "any string",
    "sasl.jaas.config": "any string (a listener's JAAS entries are checked at start)",
    "delegation.token.secret.key": "any string",
    "delegation.token.master.key": "any string",
    "sasl.enabled.mechanisms": "any list: Kafka checks it only for a SASL listener",
    "sasl.mechanism.inter.broker.protocol": "any string: Kafka checks it only for a SASL "
    "inter-broker listener",
    # TLS keys KafkaConfig does not validate (the listener's SSL factory reads them).
    **{
        key: "any value: KafkaConfig does not validate it"
        for key in (
            "ssl.protocol",
            "ssl.enabled.protocols",
            "ssl.cipher.suites",
            "ssl.keystore.type",
            "ssl.keystore.location",
            "ssl.keystore.key",
            "ssl.keystore.certificate.chain",
            "ssl.truststore.type",
            "ssl.truststore.location",
            "ssl.truststore.certificates",
            "ssl.endpoint.identification.algorithm",
            "ssl.principal.mapping.rules",
        )
    },
    "control.plane.listener.name": "valid only if it names one of the listeners",
    "password.encoder.secret": "any string",
    "password.encoder.old.secret": "any string",
    "password.encoder.keyfactory.algorithm": "any value: KafkaConfig does not validate it",
    "password.encoder.cipher.algorithm": "any value: KafkaConfig does not validate it",
    # Kafka's ZooKeeper client TLS keys: strings, lists and passwords it does not validate.
    **{
        f"zookeeper.{key}": "any value: Kafka does not validate it"
        for key in (
            "clientCnxnSocket",
            "ssl.keystore.location",
            "ssl.keystore.password",
            "ssl.keystore.type",
            "ssl.truststore.location",
            "ssl.truststore.password",
            "ssl.truststore.type",
            "ssl.protocol",
            "ssl.enabled.protocols",
            "ssl.cipher.suites",
            "ssl.endpoint.identification.algorithm",
        )
    },
}

# Values left out, and why.
VALUES_LEFT_OUT = {
    # Kafka's validator takes any digits, and its broker then fails to read the entry as
    # an Int when it applies the config; tidelog refuses the value when it is set.
    **{
        ("topic", f"{side}.replication.throttled.replicas", "2147483648:1"): "not an Int: "
        "Kafka accepts it, then fails to apply it"
        for side in ("leader", "follower")
    },
    # Kafka's validator takes 4 to 11, and its log then fails to open a segment ("Invalid
    # max index size": no room for one time-index entry); tidelog refuses below 12.
    **{
        (scope, key, value): "Kafka accepts it, then fails to open a segment"
        for scope, key in (("topic", "segment.index.bytes"), ("broker", "log.index.size.max.bytes"))
        for value in ("4", "\t7")
    },
}

# Values at the edges of Kafka's checks between keys, against the other keys' defaults.
EDGES = {
    "broker.id": ("1000", "1001"),
    "connections.max.idle.ms": ("100", "101"),
    "connection.failed.authentication.delay.ms": ("599999", "600000"),
    "log.cleaner.dedupe.buffer.size": ("1048576", "1048577", "2097152"),
    "log.cleaner.threads": ("128", "127"),
    "log.index.size.max.bytes": ("12",),
    "segment.index.bytes": ("12",),
    "log.retention.minutes": ("-5",),
    "log.retention.ms": ("-5",),
    "replica.fetch.wait.max.ms": ("30000", "30001"),
    "replica.lag.time.max.ms": ("499", "500"),
    "replica.socket.timeout.ms": ("499", "500"),
}

# Kafka 3.9's Range validators of the table's keys: (min, max), None where the type's
# own limit is the bound. Keys absent have no Range (test_ranges_are_kafkas checks both).
TOPIC_RANGES = {
    "compression.lz4.level": (1, 17),
    "compression.zstd.level": (-131072, 22),
    "delete.retention.ms": (0, None),
    "file.delete.delay.ms": (0, None),
    "flush.messages": (1, None),
    "flush.ms": (0, None),
    "index.interval.bytes": (0, None),
    "local.retention.bytes": (-2, None),
    "local.retention.ms": (-2, None),
    "max.compaction.lag.ms": (1, None),
    "max.message.bytes": (0, None),
    "message.timestamp.after.max.ms": (0, None),
    "message.timestamp.before.max.ms": (0, None),
    "message.timestamp.difference.max.ms": (0, None),
    "min.cleanable.dirty.ratio": (0, 1),
    "min.compaction.lag.ms": (0, None),
    "min.insync.replicas": (1, None),
    "retention.ms": (-1, None),
    "segment.bytes": (14, None),
    "segment.index.bytes": (4, None),
    "segment.jitter.ms": (0, None),
    "segment.ms": (1, None),
}
BROKER_RANGES = {
    "num.partitions": (1, None),
    "max.connections": (0, None),
    "max.connections.per.ip": (0, None),
    "message.max.bytes": (0, None),
    "socket.request.max.bytes": (1, None),
    "connection.failed.authentication.delay.ms": (0, None),
    "delegation.token.max.lifetime.ms": (1, None),
    "delegation.token.expiry.time.ms": (1, None),
    "delegation.token.expiry.check.interval.ms": (1, None),
    "num.network.threads": (1, None),
    "num.io.threads": (1, None),
    "num.recovery.threads.per.data.dir": (1, None),
    "queued.max.requests": (1, None),
    "fetch.max.bytes": (1024, None),
    "max.incremental.fetch.session.cache.slots": (0, None),
    "log.segment.bytes": (14, None),
    "log.roll.hours": (1, None),
    "log.roll.jitter.hours": (0, None),
    "log.index.size.max.bytes": (4, None),
    "log.index.interval.bytes": (0, None),
    "log.retention.check.interval.ms": (1, None),
    "log.segment.delete.delay.ms": (0, None),
    "log.flush.interval.messages": (1, None),
    "log.flush.offset.checkpoint.interval.ms": (0, None),
    "log.flush.start.offset.checkpoint.interval.ms": (0, None),
    "log.message.timestamp.difference.max.ms": (0, None),
    "log.cleaner.threads": (0, None),
    "log.cleaner.io.buffer.size": (0, None),
    "log.cleaner.backoff.ms": (0, None),
    "log.cleaner.min.cleanable.ratio": (0, 1),
    "log.cleaner.min.compaction.lag.ms": (0, None),
    "log.cleaner.max.compaction.lag.ms": (1, None),
    "log.cleaner.delete.retention.ms": (0, None),
    "compression.lz4.level": (1, 17),
    "compression.zstd.level": (-131072, 22),
    "log.local.retention.ms": (-2, None),
    "log.local.retention.bytes": (-2, None),
    "min.insync.replicas": (1, None),
    "offsets.topic.num.partitions": (1, None),
    "offsets.topic.replication.factor": (1, None),
    "offsets.topic.segment.bytes": (1, None),
    "offsets.retention.minutes": (1, None),
    "offsets.retention.check.interval.ms": (1, None),
    "offsets.commit.timeout.ms": (1, None),
    "group.max.size": (1, None),
    "transaction.state.log.num.partitions": (1, None),
    "transaction.state.log.replication.factor": (1, None),
    "transaction.state.log.min.isr": (1, None),
    "producer.id.expiration.ms": (1, None),
    "replica.fetch.max.bytes": (0, None),
    "replica.fetch.response.max.bytes": (0, None),
    "replica.fetch.backoff.ms": (0, None),
    "leader.imbalance.check.interval.seconds": (1, None),
    "replication.quota.window.num": (1, None),
    "replication.quota.window.size.seconds": (1, None),
    "password.encoder.key.length": (8, None),
    "password.encoder.iterations": (1024, None),
    "quota.window.num": (1, None),
    "quota.window.size.seconds": (1, None),
    "controller.quota.window.num": (1, None),
    "controller.quota.window.size.seconds": (1, None),
}

VERSIONS = (
    *("0.10.0.0", "0.10.0", "2.8", "3.0-IV1", "4.0", "3.9-IV0", "x", "3.0", "3.9", "3.9.1"),
    *("0.8.0", "0.8", "0.9.0.1", "1.0", "1.0.0", "2.1-IV2", "2.1.anything", "3.0.", "3.0-iv1"),
    *("4.0-IV0", "4.0-IV1", "4.0-IV2", "3.8-IV1", "", " 3.0", "3.0 ", "0.11.0.3", "3"),
)

# Values of keys whose type says too little: enums, lists, versions.
MEMBERS = {
    "cleanup.policy": (
        *("delete", "compact", "compact,delete", "delete,compact", "compact, delete"),
        *("Delete", "COMPACT", "", " ", "delete,", ",delete", "delete,,compact", "none"),
        *("delete,delete", " compact ", "compact ,delete", "delete;compact"),
    ),
    "compression.type": (
        *("producer", "uncompressed", "gzip", "snappy", "lz4", "zstd", "none", "GZIP"),
        *("Gzip", "", " lz4", "brotli", "gzip,lz4"),
    ),
    "message.timestamp.type": (
        *("CreateTime", "LogAppendTime", "createtime", "CREATETIME", "NoTimestampType"),
        *("", " LogAppendTime"),
    ),
    "message.format.version": VERSIONS,
    "leader.replication.throttled.replicas": (
        *("*", "0:1", "0:1,1:2", "0:1, 1:2", "", "abc", "0:", ":1", "-1:1", "0:1,*"),
        *(" *", "0:1,", "0:1:2", "2147483648:1", "0 : 1", "* "),
    ),
    "compression.gzip.level": ("-1", "1", "9", "0", "10", "-2", "6", "abc", ""),
    "ssl.client.auth": ("none", "requested", "required", "NONE", "Required", "", " none", "x"),
    "security.inter.broker.protocol": (
        *("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL", "ssl", "Sasl_Ssl", "TLS", ""),
    ),
}
MEMBERS["follower.replication.throttled.replicas"] = MEMBERS[
    "leader.replication.throttled.replicas"
]
MEMBERS["max.connections.per.ip.overrides"] = (
    *("", "127.0.0.1:5", "localhost:5,127.0.0.1:7", " 127.0.0.1 : 5 ", "no-such-host:3"),
    *("127.0.0.1", "127.0.0.1:x", "a:1:2", "127.0.0.1:-1", "127.0.0.1:99999999999", ","),
)
MEMBERS["log.cleanup.policy"] = MEMBERS["cleanup.policy"]
MEMBERS["log.message.timestamp.type"] = MEMBERS["message.timestamp.type"]
MEMBERS["log.message.format.version"] = VERSIONS

MISTYPED = ("abc", "1.5", "", " 1", "1 ", "+1", "1_000", "0x10", "1e3", "\t7", "٣", "1,2")
BOOLEANS = ("true", "false", "TRUE", "False", "yes", "1", "", " true", "t", "abc")
DOUBLES = (
    *("0", "0.5", "1", "1.0", "1.5", "-0.1", "-1", "abc", "", "NaN", "Infinity", "1e-1"),
    *(" 0.5", "0.5d", "0.5f", "0x1p-1", ".5", "1.", "0_5", "inf", "nan"),
)


def _numbers(kind: str, bounds: tuple[int, int | None] | None) -> tuple[str, ...]:
    low, high = LIMITS[kind]
    values = {0, 1, -1, 1000, low, high, low - 1, high + 1}
    if bounds is not None:
        values |= {bounds[0] - 1, bounds[0]}
        if bounds[1] is not None:
            values |= {bounds[1], bounds[1] + 1}
    return (*(str(v) for v in sorted(values)), *MISTYPED)


def _values(scope: str, key: str, kind: str, bounds) -> tuple[str, ...]:
    return tuple(
        value
        for value in (*_typed_values(key, kind, bounds), *EDGES.get(key, ()))
        if (scope, key, value) not in VALUES_LEFT_OUT
    )


def _typed_values(key: str, kind: str, bounds) -> tuple[str, ...]:
    if key in MEMBERS:
        return MEMBERS[key]
    if kind in LIMITS:
        return _numbers(kind, bounds)
    if kind == "double":
        extra = () if bounds is None else (str(bounds[0]), str(bounds[1]), "1.0000001")
        return (*DOUBLES, *extra)
    if kind == "boolean":
        return BOOLEANS
    raise AssertionError(f"no values for {key} ({kind}): add it to MEMBERS")


_TOPIC_KINDS = {
    ConfigType.INT: "int",
    ConfigType.LONG: "long",
    ConfigType.DOUBLE: "double",
    ConfigType.BOOLEAN: "boolean",
    ConfigType.STRING: "string",
    ConfigType.LIST: "list",
}
TOPIC_TABLE = {
    key: _values("topic", key, _TOPIC_KINDS[spec.type], TOPIC_RANGES.get(key))
    for key, spec in TOPIC_CONFIGS.items()
}
BROKER_TABLE = {
    key: _values("broker", key, spec.type, BROKER_RANGES.get(key))
    for key, spec in BROKER_CONFIGS.items()
    if key not in BROKER_KEYS_LEFT_OUT
}
TABLES = {"topic": TOPIC_TABLE, "broker": BROKER_TABLE}
BASE_LOG_CONFIG = BrokerConfig(ZOOKEEPER).log_config()


def tidelog_refusal(scope: str, key: str, value: str) -> str | None:
    """tidelog's message refusing ``value`` for ``key``, None when it accepts it."""
    try:
        if scope == "topic":
            validate_topic_config({key: value}, BASE_LOG_CONFIG)
        else:
            BrokerConfig({**ZOOKEEPER, key: value})
    except (LogConfigError, ConfigError) as error:
        return str(error)
    return None


@pytest.fixture(scope="module")
def kafka():
    """Kafka's answers: ``describe`` (each scope's ConfigDef) and ``refusal`` (scope, key,
    value) → Kafka's message, or None where it accepts; all from one JVM."""
    jobs = [{"describe": scope} for scope in TABLES]
    cases = [(s, k, v) for s, t in TABLES.items() for k, values in t.items() for v in values]
    jobs += [{"scope": s, "key": k, "value": v} for s, k, v in cases]
    answers = run_java_jobs("KafkaConfigValidator", jobs)
    described = dict(zip(TABLES, answers, strict=False))
    refusals = {
        case: (None if answer["accepted"] else answer["message"])
        for case, answer in zip(cases, answers[len(TABLES) :], strict=True)
    }
    return described, refusals


def _range(validator: str | None) -> tuple[int, int | None] | None:
    match = re.fullmatch(r"\[(-?\d+),\.\.\.(?:,(-?\d+))?\]", validator or "")
    if match is None:
        return None
    return int(match[1]), None if match[2] is None else int(match[2])


def test_topic_keys_are_kafkas(kafka):
    described, _ = kafka
    assert sorted(TOPIC_CONFIGS) == sorted(described["topic"])


@pytest.mark.parametrize("scope", TABLES)
def test_ranges_are_kafkas(kafka, scope):
    described, _ = kafka
    ranges = TOPIC_RANGES if scope == "topic" else BROKER_RANGES
    kafkas = {
        key: _range(described[scope][key]["validator"])
        for key in TABLES[scope]
        if _range(described[scope][key]["validator"]) is not None
    }
    assert kafkas == ranges


def _names_less(ours: str, theirs: str, value: str) -> bool:
    """Whether Kafka's refusal names the value as written and tidelog's does not (Kafka
    names a parsed value, ``1`` for ``+1``, where its validator refuses it)."""
    return value.strip() in theirs and value.strip() not in ours


CASES = [(scope, key) for scope, table in TABLES.items() for key in table]


@pytest.mark.parametrize(("scope", "key"), CASES, ids=[f"{s}:{k}" for s, k in CASES])
def test_accepted_and_refused_as_kafka_does(kafka, scope, key):
    _, refusals = kafka
    disagreements = []
    for value in TABLES[scope][key]:
        theirs = refusals[(scope, key, value)]
        ours = tidelog_refusal(scope, key, value)
        if (theirs is None) != (ours is None):
            disagreements.append(
                f"{value!r}: Kafka {'accepts' if theirs is None else 'refuses: ' + theirs}; "
                f"tidelog {'accepts' if ours is None else 'refuses: ' + ours}"
            )
        elif ours is not None and (key not in ours or _names_less(ours, theirs, value)):
            disagreements.append(f"{value!r}: tidelog's refusal names not both: {ours}")
    assert not disagreements, f"{scope} config {key}:\n" + "\n".join(disagreements)
