"""S11 of ``make bench``: partition reassignment, tidelog and Apache Kafka alike.

On four brokers, a topic whose every partition has a replica on broker 1 is filled,
then an idempotent acks=all producer writes to it at a fixed rate while two moves run
through AlterPartitionReassignments (the API ``kafka-reassign-partitions.sh`` uses):

1. every replica leaves broker 1, unthrottled: the time to complete and the copy rate;
2. every replica comes back to broker 1 with a throttle set as
   ``kafka-reassign-partitions.sh --throttle`` sets it (``leader.`` and
   ``follower.replication.throttled.rate`` on every broker, the moving replicas in the
   topic's ``*.replication.throttled.replicas``): the copy rate as a share of the
   throttle, which should be close to 1 and not above it.

For each move the producer's p99 acknowledgement latency of the records in flight during
the move is set against the p99 of the same length of time before it. The copy rate is
the bytes of the moved replicas (the leaders' partition sizes when the move starts) over
the time to complete. The pair of moves runs ``repeats`` times (move 2 restores the
assignment move 1 started from, a preferred-leader election its leaders); each figure is
the median over the repeats, every repeat in the raw JSON, as the p99 of a few hundred
records is set by one stall.
The same admin requests go to both systems, over tidelog's protocol client.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from typing import NamedTuple

import loadgen
from bench_waiting import wait_until
from confluent_kafka import ElectionType, KafkaError, TopicPartition
from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, NewTopic

from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode

__all__ = ["S11_BROKERS", "plot_ack_latency", "s11_reassignment", "settings_line"]

S11_BROKERS = 4
S11_PARTITIONS = 6
S11_PRODUCER_INTERVAL_S = 0.002  # a 1 KiB record every 2 ms: 500 records/s
S11_BASELINE_S = 5.0
S11_MOVE_TIMEOUT_S = 900
TOPIC = "s11-moving"
BROKER_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
TOPIC_REPLICAS = (
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)


class Move(NamedTuple):
    """One reassignment's figures: seconds to complete, bytes moved, and the producer's
    p99 acknowledgement latency (ms) before it and during it."""

    seconds: float
    moved: int
    p99_before: float
    p99_during: float


def settings_line(throttle_mb: float, repeats: int) -> str:
    return (
        f"- S11 (reassignment): {S11_BROKERS} brokers, a {S11_PARTITIONS}-partition RF=3 "
        "topic with a replica of every partition on broker 1 and `min.insync.replicas=2`, "
        f"an idempotent acks=all producer sending 1 KiB every {S11_PRODUCER_INTERVAL_S * 1000:g}"
        f" ms to partition 0 throughout; move 1 takes every replica off broker 1 "
        f"unthrottled, move 2 brings them back with a {throttle_mb:g} MB/s throttle (rates "
        "and throttled replicas set as kafka-reassign-partitions.sh --throttle sets them: "
        "the current replicas on the leader side, the added ones on the follower side); "
        f"the pair of moves {repeats} times, each figure the median of the {repeats}"
    )


def _assignment() -> dict[int, list[int]]:
    """Broker 1 and two of 2, 3, 4 for every partition; broker 1 leads every other one."""
    assignment = {}
    for p in range(S11_PARTITIONS):
        pair = [2 + p % 3, 2 + (p + 1) % 3]
        assignment[p] = [1, *pair] if p % 2 == 0 else [pair[0], 1, pair[1]]
    return assignment


def _fully_replicated(session) -> bool:
    found = session.partitions(TOPIC).values()
    return len(found) == S11_PARTITIONS and all(p.leader >= 0 and len(p.isrs) == 3 for p in found)


def _throttled_replicas(current: dict[int, list[int]], target: dict[int, list[int]]) -> tuple:
    """What kafka-reassign-partitions.sh --throttle writes: the leader side throttles the
    partitions' current replicas, the follower side the replicas being added."""
    leader = ",".join(f"{p}:{b}" for p, replicas in sorted(current.items()) for b in replicas)
    follower = ",".join(
        f"{p}:{b}"
        for p, replicas in sorted(target.items())
        for b in replicas
        if b not in current[p]
    )
    return leader, follower


def _request(session, api_key: ApiKey, body: dict, to_controller: bool = True):
    first = session.brokers[min(session.brokers)]
    with BrokerConnection("127.0.0.1", first.port, timeout=60) as connection:
        if not to_controller:
            return connection.request(api_key, None, body)
        metadata = connection.request(
            ApiKey.METADATA, None, {"topics": [], "allow_auto_topic_creation": False}
        )
    controller = session.brokers[metadata.controller_id]
    with BrokerConnection("127.0.0.1", controller.port, timeout=60) as connection:
        return connection.request(api_key, None, body)


def _reassign(session, targets: dict[int, list[int]]) -> None:
    body = {
        "timeout_ms": 60000,
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": p, "replicas": r} for p, r in sorted(targets.items())
                ],
            }
        ],
    }
    response = _request(session, ApiKey.ALTER_PARTITION_REASSIGNMENTS, body)
    errors = [
        (p.partition_index, ErrorCode(p.error_code).name, p.error_message)
        for t in response.responses
        for p in t.partitions
        if p.error_code
    ]
    if response.error_code or errors:
        raise RuntimeError(f"AlterPartitionReassignments failed: {response.error_code} {errors}")


def _elect_preferred_leaders(
    session, producer: loadgen.PacedProducer, assignment: dict[int, list[int]]
) -> None:
    """Give every partition its preferred leader back (a preferred election, as
    ``kafka-leader-election.sh --election-type preferred`` runs it), as the first move
    found them: move 2 leaves partition 0's leader where move 1 put it, and without
    this only the first repeat would move that leader. Returns once the producer has an
    acknowledgement of a record sent after the election."""
    partitions = [TopicPartition(TOPIC, p) for p in assignment]
    results = session.admin.elect_leaders(ElectionType.PREFERRED, partitions).result(60)
    errors = {
        tp.partition: error
        for tp, error in results.items()
        if error is not None and error.code() != KafkaError.ELECTION_NOT_NEEDED
    }
    if errors:
        raise RuntimeError(f"S11: the preferred-leader election failed: {errors}")
    preferred = {p: replicas[0] for p, replicas in assignment.items()}
    wait_until(
        lambda: {p: m.leader for p, m in session.partitions(TOPIC).items()} == preferred,
        "the preferred leaders",
    )
    producer.first_ack_after(time.perf_counter())


def _moving(session) -> int:
    response = _request(
        session, ApiKey.LIST_PARTITION_REASSIGNMENTS, {"timeout_ms": 60000, "topics": None}
    )
    return sum(len(t.partitions) for t in response.topics)


def _leader_bytes(session) -> int:
    """The summed size of the topic's partitions on their leaders (DescribeLogDirs)."""
    leaders = {p: m.leader for p, m in session.partitions(TOPIC).items()}
    total = 0
    for broker_id, broker in session.brokers.items():
        with BrokerConnection("127.0.0.1", broker.port, timeout=60) as connection:
            response = connection.request(ApiKey.DESCRIBE_LOG_DIRS, None, {"topics": None})
        for result in response.results:
            for topic in result.topics:
                if topic.name == TOPIC:
                    total += sum(
                        p.partition_size
                        for p in topic.partitions
                        if leaders.get(p.partition_index) == broker_id and not p.is_future_key
                    )
    return total


def _set_throttle(session, rate: int | None, replicas: tuple[str, str] | None) -> None:
    """Set (or, with None, delete) the broker rates and the topic's throttled replicas
    (leader side, follower side)."""
    operation = AlterConfigOpType.SET if rate is not None else AlterConfigOpType.DELETE
    values = replicas or ("", "")
    resources = [
        ConfigResource(
            "BROKER",
            str(broker_id),
            incremental_configs=[
                ConfigEntry(name, str(rate or ""), incremental_operation=operation)
                for name in BROKER_RATES
            ],
        )
        for broker_id in session.brokers
    ]
    resources.append(
        ConfigResource(
            "TOPIC",
            TOPIC,
            incremental_configs=[
                ConfigEntry(name, value, incremental_operation=operation)
                for name, value in zip(TOPIC_REPLICAS, values, strict=True)
            ],
        )
    )
    for resource in resources:  # librdkafka takes one broker resource per call
        for future in session.admin.incremental_alter_configs([resource]).values():
            future.result(60)


def _p99(acked: list[tuple[float, float]], start: float, end: float) -> float:
    """The p99 ack latency of the records in flight at some moment of [start, end): sent
    before its end, acknowledged after its start. Fewer than 20 of them (a move of a quick
    run can take milliseconds) give the worst one, which is what a p99 of a few samples
    is; a window so short that no record was in flight gives the latency of the record
    sent nearest to it."""
    in_flight = [(at - sent) * 1000 for sent, at in acked if sent < end and at > start]
    if not in_flight:
        sent, at = min(acked, key=lambda record: abs(record[0] - start))
        in_flight = [(at - sent) * 1000]
    if len(in_flight) < 20:
        return max(in_flight)
    return statistics.quantiles(in_flight, n=100)[98]


def _move(session, producer: loadgen.PacedProducer, targets: dict[int, list[int]]) -> Move:
    """One reassignment; its time window goes to ``session.s11_moves`` for the plot."""
    moved = _leader_bytes(session)
    before = time.perf_counter()
    time.sleep(S11_BASELINE_S)
    start = time.perf_counter()
    _reassign(session, targets)
    deadline = start + S11_MOVE_TIMEOUT_S
    while _moving(session):
        if time.perf_counter() > deadline:
            raise TimeoutError(f"S11: the reassignment did not complete in {S11_MOVE_TIMEOUT_S} s")
        time.sleep(0.05)
    end = time.perf_counter()
    session.s11_moves.append((start, end))
    seconds = end - start
    baseline_start = max(before, start - seconds)
    # Acks of one partition come in order: once a record sent after the move is
    # acknowledged, so is every record in flight during it, the slowest included.
    producer.first_ack_after(end)
    acked = list(producer.acked)
    return Move(seconds, moved, _p99(acked, baseline_start, start), _p99(acked, start, end))


def _record_moves(record_median: Callable, case: str, moves: list[Move]) -> float:
    """Each figure's median over the repeats of one move, the repeats beside it; returns
    the median copy rate (MB/s)."""
    figures = {
        ("admin", "time to complete", "s"): [m.seconds for m in moves],
        ("admin", "copy rate", "MB/s"): [m.moved / m.seconds / loadgen.MB for m in moves],
        ("loadgen", "ack p99 before", "ms"): [m.p99_before for m in moves],
        ("loadgen", "ack p99 during", "ms"): [m.p99_during for m in moves],
        ("loadgen", "ack p99 during / before", "×"): [m.p99_during / m.p99_before for m in moves],
    }
    for (tool, metric, unit), values in figures.items():
        record_median("S11", case, tool, metric, values, unit)
    return statistics.median(figures["admin", "copy rate", "MB/s"])


def s11_reassignment(session, megabytes: int, throttle_mb: float, repeats: int) -> None:
    """The two moves above on ``session`` (four brokers), ``repeats`` times."""
    assignment = _assignment()
    topic = NewTopic(  # librdkafka wants the count beside an explicit assignment
        TOPIC,
        S11_PARTITIONS,
        replica_assignment=[assignment[p] for p in range(S11_PARTITIONS)],
        config={"min.insync.replicas": "2"},
    )
    session.admin.create_topics([topic], operation_timeout=60)[TOPIC].result(120)
    wait_until(lambda: _fully_replicated(session), "leaders and full ISRs")
    count = megabytes * loadgen.MB // 1024
    loadgen.produce(session.bootstrap, TOPIC, count, 1024, partitions=S11_PARTITIONS, acks="1")
    wait_until(lambda: _fully_replicated(session), "full ISRs after the fill")
    off_broker_1 = {
        p: [b for b in replicas if b != 1] + [({2, 3, 4} - set(replicas)).pop()]
        for p, replicas in assignment.items()
    }
    throttle = int(throttle_mb * loadgen.MB)
    session.s11_moves = []
    unthrottled: list[Move] = []
    throttled: list[Move] = []
    with loadgen.PacedProducer(
        session.bootstrap, TOPIC, interval=S11_PRODUCER_INTERVAL_S
    ) as producer:
        producer.first_ack_after(time.perf_counter())
        for repeat in range(repeats):
            if repeat:
                _elect_preferred_leaders(session, producer, assignment)
            unthrottled.append(_move(session, producer, off_broker_1))
            _set_throttle(session, throttle, _throttled_replicas(off_broker_1, assignment))
            try:
                throttled.append(_move(session, producer, assignment))
            finally:
                _set_throttle(session, None, None)
        session.s11_acks = list(producer.acked)
    _record_moves(session.record_median, "off broker 1, unthrottled", unthrottled)
    case = f"back to broker 1, throttle {throttle_mb:g} MB/s"
    rate = _record_moves(session.record_median, case, throttled)
    session.record("S11", case, "admin", "copy rate / throttle", rate / throttle_mb, "×")


def plot_ack_latency(sessions: list, path) -> bool:
    """The S11 producer's acknowledgement latency over time, one panel per system, every
    move shaded; False when no session ran S11."""
    traced = [s for s in sessions if getattr(s, "s11_acks", None)]
    if not traced:
        return False
    import matplotlib.pyplot as plt

    figure, panels = plt.subplots(
        len(traced), 1, figsize=(10, 3 * len(traced)), sharey=True, squeeze=False
    )
    for (axes,), session in zip(panels, traced, strict=True):
        origin = session.s11_acks[0][0]
        axes.plot(
            [sent - origin for sent, _ in session.s11_acks],
            [(at - sent) * 1000 for sent, at in session.s11_acks],
            ",",
        )
        for n, (start, end) in enumerate(session.s11_moves):  # unthrottled, throttled, ...
            label, colour = (("unthrottled", "tab:orange"), ("throttled", "tab:green"))[n % 2]
            axes.axvspan(
                start - origin,
                end - origin,
                alpha=0.25,
                color=colour,
                label=f"move, {label}" if n < 2 else None,
            )
        axes.set_yscale("log")
        axes.set_ylabel("ack latency, ms")
        axes.set_title(f"S11 {session.system}: acks=all producer during the reassignments")
        axes.legend(loc="upper right")
    panels[-1][0].set_xlabel("seconds since the producer started")
    figure.tight_layout()
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return True
