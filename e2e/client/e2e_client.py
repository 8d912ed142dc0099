"""The e2e suite's client inside the kind cluster (image ``tidelog-e2e-client``): kafka-python
for produce and consume, tidelog's admin library for topics and metadata. Every command
prints one JSON document on stdout and exits non-zero when what it checks is not so.

    python e2e_client.py create-topic   --bootstrap B --topic T --partitions P \
                                        --replication-factor R [--min-insync-replicas M]
                                        [--timeout S]
    python e2e_client.py describe-topic --bootstrap B --topic T
    python e2e_client.py produce        --bootstrap B --topic T --count N [--prefix S]
                                        [--per-second R] [--idempotent]
                                        [--until-stdin-closes]
    python e2e_client.py consume        --bootstrap B --topic T --expect N [--prefix S]
                                        [--group G]
    python e2e_client.py set-config     --bootstrap B --topic T --config KEY=VALUE ...
    python e2e_client.py read-all       --bootstrap B --topic T
    python e2e_client.py connect        --bootstrap HOST:PORT [--timeout S]

``produce`` and ``consume`` log in as a User with ``--secret-dir DIR``, the User's
Secret mounted there: SCRAM-SHA-512 over TLS with its ``sasl.jaas.config`` (or another
``--password``), or TLS with its ``user.crt`` and ``user.key``, trusting its ``ca.crt``
either way. A client that cannot get in reports ``{"error": ..., "message": ...}``.
``connect`` reports whether a TCP connection to the address opens (a NetworkPolicy's
verdict).

``produce`` writes with acks=all (idempotent with ``--idempotent``; otherwise
kafka-python's defaults), R records a second with ``--per-second`` (a producer running
while something happens: it says ``producing`` on stderr once its first record is
acknowledged), at most N records, fewer when ``--until-stdin-closes`` and its stdin
closes first, and reports how many it sent and how many were acknowledged; ``consume``
reads the topic from the beginning (as group G, which commits what it read, when given)
and fails unless it finds every record ``produce`` would have written with that prefix
and count, and reports those that are in the log twice (at two offsets) and those that
follow a later one of their partition (an idempotent producer's records are there once,
in order); ``set-config`` sets topic configs, as another tool than the operator would;
``read-all`` reports every record of the topic as it is in the log (key and value as
text, in partition and offset order), with no group.
"""

from __future__ import annotations

import argparse
import itertools
import json
import socket
import sys
import threading
import time
from pathlib import Path

from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.errors import KafkaError

from tidelog.admin import AdminClient
from tidelog.admin.topics import AlterConfigOp, ConfigResourceType, OpType
from tidelog.security.jaas import parse_jaas_config


def create_topic(args: argparse.Namespace) -> dict:
    """Create the topic (or find it) and wait, up to ``--timeout``, until every partition
    has a leader, as clients need; the last description either way."""
    AdminClient(args.bootstrap).create_topic(
        args.topic,
        args.partitions,
        args.replication_factor,
        {"min.insync.replicas": str(args.min_insync_replicas)},
        exist_ok=True,
    )
    deadline = time.monotonic() + args.timeout
    while True:
        described = describe_topic(args)
        led = all(p["leader"] >= 0 for p in described["partitions"].values())
        if (described["error_code"] == 0 and led) or time.monotonic() > deadline:
            return described
        time.sleep(0.5)


def describe_topic(args: argparse.Namespace) -> dict:
    metadata = AdminClient(args.bootstrap).metadata([args.topic])
    (topic,) = metadata.topics
    return {
        "error_code": topic.error_code,
        "brokers": {b.node_id: f"{b.host}:{b.port}" for b in metadata.brokers},
        "partitions": {
            p.partition_index: {
                "leader": p.leader_id,
                "replicas": sorted(p.replica_nodes),
                "isr": sorted(p.isr_nodes),
            }
            for p in topic.partitions
        },
    }


PRODUCING = "producing"


def security(args: argparse.Namespace) -> dict:
    """kafka-python's settings for the User whose Secret is in ``--secret-dir``."""
    if not getattr(args, "secret_dir", None):
        return {}
    directory = Path(args.secret_dir)
    if (directory / "user.crt").exists():
        return {
            "security_protocol": "SSL",
            "ssl_cafile": str(directory / "ca.crt"),
            "ssl_certfile": str(directory / "user.crt"),
            "ssl_keyfile": str(directory / "user.key"),
        }
    options = parse_jaas_config((directory / "sasl.jaas.config").read_text()).options
    return {
        "security_protocol": "SASL_SSL",
        "ssl_cafile": str(directory / "ca.crt"),
        "sasl_mechanism": "SCRAM-SHA-512",
        "sasl_plain_username": options["username"],
        "sasl_plain_password": args.password or options["password"],
    }


def connect(args: argparse.Namespace) -> dict:
    host, _, port = args.bootstrap.rpartition(":")
    try:
        with socket.create_connection((host, int(port)), timeout=args.timeout):
            return {"connected": True}
    except OSError as error:
        return {"connected": False, "reason": str(error)}


def values(prefix: str, count: int) -> list[bytes]:
    return [f"{prefix}-{n}".encode() for n in range(count)]


def produce(args: argparse.Namespace) -> dict:
    # kafka-python's defaults are the Java producer's: retries until delivery.timeout.ms
    # (120 s), which rides out a leader's failover as applications expect.
    producer = KafkaProducer(
        bootstrap_servers=args.bootstrap,
        acks="all",
        enable_idempotence=args.idempotent,
        **security(args),
    )
    stopped = threading.Event()
    if args.until_stdin_closes:
        threading.Thread(target=lambda: (sys.stdin.read(), stopped.set()), daemon=True).start()
    futures = []
    started = time.monotonic()
    for n, value in enumerate(values(args.prefix, args.count)):
        if args.per_second:
            stopped.wait(max(0.0, started + n / args.per_second - time.monotonic()))
        if stopped.is_set():
            break
        futures.append(producer.send(args.topic, value))
        if args.per_second and n == 0:
            futures[0].get(timeout=120)
            print(PRODUCING, file=sys.stderr, flush=True)
    producer.flush(120)
    failures = [str(f.exception) for f in futures if f.failed()]
    producer.close()
    sent = len(futures)
    return {"sent": sent, "acknowledged": sent - len(failures), "failures": failures[:5]}


def consume(args: argparse.Namespace) -> dict:
    wanted = set(values(args.prefix, args.expect))
    consumer = KafkaConsumer(
        args.topic,
        bootstrap_servers=args.bootstrap,
        group_id=args.group or f"e2e-{args.topic}-{args.prefix}",
        auto_offset_reset="earliest",
        consumer_timeout_ms=5000,
        **security(args),
    )
    # where each wanted record was read: a consumer may read one offset twice (after a
    # rebalance), but a record at two offsets was written twice
    positions: dict[bytes, set[tuple[int, int]]] = {}
    numbers: dict[int, dict[int, int]] = {}  # partition → offset → the record's number
    deadline = time.monotonic() + args.timeout
    while not wanted <= positions.keys() and time.monotonic() < deadline:
        for message in consumer:
            if message.value in wanted:
                positions.setdefault(message.value, set()).add((message.partition, message.offset))
                number = int(message.value.rsplit(b"-", 1)[1])
                numbers.setdefault(message.partition, {})[message.offset] = number
    consumer.close()
    missing = sorted(v.decode() for v in wanted - positions.keys())
    in_offset_order = [[n for _, n in sorted(p.items())] for p in numbers.values()]
    return {
        "consumed": len(positions),
        "missing": missing[:10],
        "missing_count": len(missing),
        "duplicates": sum(len(at) - 1 for at in positions.values()),
        "out_of_order": sum(b < a for ns in in_offset_order for a, b in itertools.pairwise(ns)),
    }


def read_all(args: argparse.Namespace) -> dict:
    consumer = KafkaConsumer(
        bootstrap_servers=args.bootstrap,
        group_id=None,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        consumer_timeout_ms=5000,
    )
    partitions = consumer.partitions_for_topic(args.topic) or set()
    consumer.assign([TopicPartition(args.topic, p) for p in sorted(partitions)])
    found = sorted((m.partition, m.offset, m.key, m.value) for m in consumer)
    consumer.close()
    return {"records": [[k.decode(), v.decode()] for _, _, k, v in found]}


def set_config(args: argparse.Namespace) -> dict:
    changes = [
        AlterConfigOp(k, OpType.SET, v) for k, _, v in (c.partition("=") for c in args.config)
    ]
    errors = AdminClient(args.bootstrap).incremental_alter_configs(
        ConfigResourceType.TOPIC, {args.topic: changes}
    )
    error = errors.get(args.topic)
    return {"error_code": 0 if error is None else int(error.code), "error": str(error or "")}


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, function in [
        ("create-topic", create_topic),
        ("describe-topic", describe_topic),
        ("produce", produce),
        ("consume", consume),
        ("set-config", set_config),
        ("read-all", read_all),
        ("connect", connect),
    ]:
        command = commands.add_parser(name)
        command.set_defaults(function=function)
        command.add_argument("--bootstrap", required=True)
        if name == "connect":
            command.add_argument("--timeout", type=float, default=5)
            continue
        command.add_argument("--topic", required=True)
        if name == "create-topic":
            command.add_argument("--partitions", type=int, required=True)
            command.add_argument("--replication-factor", type=int, required=True)
            command.add_argument("--min-insync-replicas", type=int, default=2)
            command.add_argument("--timeout", type=float, default=60)
        if name in ("produce", "consume"):
            command.add_argument("--prefix", default="record")
            command.add_argument("--secret-dir", help="a User's Secret, mounted")
            command.add_argument("--password", help="instead of the Secret's")
        if name == "produce":
            command.add_argument("--count", type=int, required=True)
            command.add_argument("--per-second", type=float)
            command.add_argument("--idempotent", action="store_true")
            command.add_argument("--until-stdin-closes", action="store_true")
        if name == "consume":
            command.add_argument("--expect", type=int, required=True)
            command.add_argument("--timeout", type=float, default=60)
            command.add_argument("--group")
        if name == "set-config":
            command.add_argument("--config", action="append", required=True)
    return parser


def main() -> int:
    args = _parser().parse_args()
    try:
        result = args.function(args)
    except KafkaError as error:  # refused, or no broker would let the client in
        result = {"error": type(error).__name__, "message": str(error)}
    print(json.dumps(result))
    failed = (
        result.get("failures")
        or result.get("missing_count")
        or result.get("error_code")
        or result.get("error")
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
