"""S7 and S8 of ``make bench``, on a cluster of :data:`settings.CLUSTER_SIZE` brokers of
one system: replicated produce with both load generators at acks=all and acks=1, then
paced (S7), and failover after a kill -9 of a partition's leader, seen by two clients
(S8), each failover split where ZooKeeper names the new leader.

Each scenario takes a started :class:`session.Session` and records its figures there.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from collections import defaultdict
from dataclasses import dataclass

import loadgen
import perf_tools
from bench_waiting import ZnodeWatch, registration_gone, wait_until
from measure import PeakRss
from session import Session
from settings import CLUSTER_SETTINGS, CLUSTER_SIZE, REPLICATED_TOPIC, ZOOKEEPER_TICK_MS, Scale
from throughput import ProduceCase, produce_with_both_tools, record_acks

__all__ = [
    "S7_ACKS",
    "S7_PACED_RATE",
    "S7_PARTITIONS",
    "S8_CLIENTS",
    "S8_PING_CYCLE_S",
    "Failover",
    "kill_leader",
    "leader_moved",
    "rejoin",
    "s7_paced",
    "s7_replicated_produce",
    "s8_failover",
    "wait_for_phase",
]

# A ZooKeeper session expires a timeout after the last packet its client sent, and an
# idle client pings every third of the timeout (Kafka's and kazoo's alike), so how long a
# kill -9 takes to be noticed depends on where in that ping cycle it lands. A kill at a
# fixed delay after the previous restart lands at the same phase every time (tidelog's
# kill to expiry was 6.96-7.07 s in 2026-11-26-bc856dd, Kafka's 4.78-6.58 s), so S8
# waits a random part of one cycle before each kill; the same delays for both systems.
S8_PING_CYCLE_S = int(CLUSTER_SETTINGS["zookeeper.session.timeout.ms"]) / 3000
# S8's two clients, by their tool names in the report: confluent-kafka (librdkafka) and
# Apache Kafka's own Java producer; how each finds a new leader: bench/results/README.md.
S8_CLIENTS = ("loadgen", "java-producer")
S7_ACKS = ("all", "1")
S7_PARTITIONS = 6
# 1 KiB records/s of S7's paced run: 5 MB/s, as S3, under what either system's three
# brokers carry at acks=all here (14-21 MB/s), so that its ack latency is the brokers'
# and not the producer's queue, as it is at full speed.
S7_PACED_RATE = 5_000


def s7_replicated_produce(session: Session, scale: Scale) -> None:
    """Both tools at acks=all and acks=1 into 6-partition RF=3 topics, as fast as they
    go; then kafka-producer-perf-test at :data:`S7_PACED_RATE`; peak summed RSS."""
    count = scale.s7_megabytes * loadgen.MB // 1024
    with PeakRss(session.pids) as peak:
        for acks in S7_ACKS:
            label = f"{S7_PARTITIONS}p RF={CLUSTER_SIZE} 1KiB acks={acks}"
            case = ProduceCase(f"s7-acks-{acks}", label, 1024, acks=acks, partitions=S7_PARTITIONS)
            produce_with_both_tools(session, "S7", case, count, REPLICATED_TOPIC)
            s7_paced(session, scale, case)
    session.record("S7", "during S7", "-", f"peak RSS, sum of {CLUSTER_SIZE}", peak.peak, "MB")


def s7_paced(session: Session, scale: Scale, case: ProduceCase) -> None:
    """kafka-producer-perf-test at :data:`S7_PACED_RATE` for ``s7_paced_seconds``: the
    rate it held and its ack latencies, those of the brokers' replication."""
    topic = f"{case.name}-paced"
    session.create_topic(topic, case.partitions, REPLICATED_TOPIC)
    result = perf_tools.producer_perf_test(
        session.bootstrap,
        topic,
        S7_PACED_RATE * scale.s7_paced_seconds,
        case.size,
        case.codec,
        case.acks,
        throughput=S7_PACED_RATE,
    )
    label = f"{case.label}, {S7_PACED_RATE:,} records/s"
    session.record("S7", label, "perf-test", "achieved rate", result.mb_per_s, "MB/s")
    record_acks(session, "S7", label, "perf-test", result)


def leader_moved(connect: str, topic: str, partition: int, away_from: int) -> ZnodeWatch:
    """When the partition's state in ZooKeeper first names a leader other than
    ``away_from``: the controller's election is written (both systems keep Kafka's
    layout)."""

    def moved(data: bytes | None) -> bool:
        return data is not None and json.loads(data)["leader"] not in (away_from, -1)

    return ZnodeWatch(connect, f"/brokers/topics/{topic}/partitions/{partition}/state", moved)


@dataclass(frozen=True)
class Failover:
    """One kill -9 of a leader, as ``time.perf_counter`` moments: the kill, the expiry of
    the killed broker's ZooKeeper session and the new leader written to ZooKeeper."""

    killed: int
    killed_at: float
    expired_at: float
    elected_at: float

    @property
    def cluster_figures(self) -> dict[str, float]:
        """Seconds until ZooKeeper expired the killed broker's session, and until the
        controller had written the new leader (the cluster's share of the failover: after
        the expiry on Kafka, which learns of the kill from it; before it on tidelog, whose
        controller is refused a connection by the dead broker at once)."""
        return {
            "until session expiry": self.expired_at - self.killed_at,
            "kill → new leader in ZooKeeper": self.elected_at - self.killed_at,
        }

    def client_figures(self, first_ack: float) -> dict[str, float]:
        """One client's failover, ``first_ack`` seconds from the kill to the first
        acknowledgement of a record sent after it, and its part after the election (the
        client's metadata refresh, reconnecting, the produce)."""
        return {
            "failover time": first_ack,
            "new leader → first ack": self.killed_at + first_ack - self.elected_at,
        }


def wait_for_phase(phase: float, period: float) -> None:
    """Sleep until ``time.perf_counter()`` is ``phase`` seconds past a multiple of
    ``period``."""
    time.sleep((phase - time.perf_counter()) % period)


def kill_leader(
    session: Session, topic: str, clients: dict[str, loadgen.Acknowledgements], delay: float
) -> tuple[Failover, dict[str, float]]:
    """kill -9 the leader of ``topic``-0, ``delay`` seconds after it is known, while
    ``clients`` write to it; the kill and each client's seconds to its first
    acknowledgement after it."""
    for client in clients.values():
        client.first_ack_after(time.perf_counter())  # acknowledgements are flowing

    def leader_after_delay() -> tuple[int, ZnodeWatch] | None:
        """The leader the metadata names and the watch for its move, if ZooKeeper still
        names it after the delay."""
        leader = session.partitions(topic)[0].leader
        time.sleep(delay)
        election = leader_moved(session.connect, topic, 0, leader)
        if election.seen_at is None:
            return leader, election
        election.close()
        return None

    leader, election = wait_until(leader_after_delay, f"{topic}-0: a leader ZooKeeper names")
    registration = registration_gone(session.connect, leader)
    killed_at = time.perf_counter()
    session.brokers[leader].kill()
    first_acks = {tool: client.first_ack_after(killed_at) for tool, client in clients.items()}
    expired_at = registration.wait(f"broker {leader}'s registration gone")
    elected_at = election.wait(f"{topic}-0 led by another broker than {leader}")
    return Failover(leader, killed_at, expired_at, elected_at), first_acks


def rejoin(session: Session, topic: str, broker_id: int) -> None:
    """Start a killed broker again once its registration is gone from ZooKeeper (a
    tidelog controller takes a killed broker out of Metadata before that); wait for a
    full ISR."""
    registration_gone(session.connect, broker_id).wait(
        f"broker {broker_id}'s ZooKeeper session expired"
    )
    session.brokers[broker_id].start()
    wait_until(lambda: session.fully_replicated(topic, 1), f"{topic}: full ISR again")


def s8_failover(session: Session, scale: Scale, rank: int) -> None:
    """Both clients (:data:`S8_CLIENTS`) write to the partition through the same kills.
    ``rank``: how many cluster sessions of this system came before; the kth session of
    each system creates its producers at the same phase of ZooKeeper's tick
    (:data:`ZOOKEEPER_TICK_MS`) and waits the same delays before its kills."""
    topic = "s8-failover"
    timeout = CLUSTER_SETTINGS["zookeeper.session.timeout.ms"]
    case = f"kill -9 leader, zk session {timeout} ms"
    session.create_topic(topic, 1, REPLICATED_TOPIC)
    figures = defaultdict(list)  # (tool, figure) → seconds, one per kill
    phases = random.Random(rank)
    wait_for_phase(phases.uniform(0, ZOOKEEPER_TICK_MS / 1000), ZOOKEEPER_TICK_MS / 1000)
    java_log = session.directory / "s8-java-producer.log"
    with (
        loadgen.PacedProducer(session.bootstrap, topic) as librdkafka,
        perf_tools.JavaPacedProducer(session.bootstrap, topic, java_log) as java,
    ):
        clients = dict(zip(S8_CLIENTS, (librdkafka, java), strict=True))
        for repeat in range(1, scale.s8_failovers + 1):
            delay = phases.uniform(0, S8_PING_CYCLE_S)
            failover, first_acks = kill_leader(session, topic, clients, delay)
            for figure, seconds in failover.cluster_figures.items():
                session.record("S8", case, "-", figure, seconds, "s")
            for tool, first_ack in first_acks.items():
                for figure, seconds in failover.client_figures(first_ack).items():
                    session.record("S8", case, tool, figure, seconds, "s")
                    figures[tool, figure].append(seconds)
            if repeat < scale.s8_failovers:
                rejoin(session, topic, failover.killed)
    medians = {
        "failover time": "failover median",
        "new leader → first ack": "new leader → first ack, median",
    }
    for tool in S8_CLIENTS:
        for figure, name in medians.items():
            session.record("S8", case, tool, name, statistics.median(figures[tool, figure]), "s")
