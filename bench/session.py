"""One session of ``make bench``: one system's brokers (Apache Kafka's or tidelog's) on a
ZooKeeper chroot of their own, started and stopped as a context manager, the figures
they were measured at (:meth:`Session.record`, one row each, with the repeats behind a
median in :meth:`Session.record_median`), and the admin calls the scenarios share
(topics created with a replica on every broker, their partitions' metadata).
"""

from __future__ import annotations

import json
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from bench_waiting import wait_until
from confluent_kafka.admin import AdminClient, NewTopic
from kafka_broker import KafkaBroker
from measure import cpu_seconds, user_system_seconds
from settings import BROKER_SETTINGS, CLUSTER_SETTINGS

from tidelog.server.process import BrokerProcess

__all__ = ["Session", "warn"]


class Session:
    """One broker (S1-S6) or a cluster of ``size`` brokers, ids 1..size (S7, S8); topics
    are created with as many replicas as there are brokers."""

    def __init__(self, system: str, number: int, work: Path, zookeeper: str, size: int = 1):
        name = f"{system}-{number}"
        connect = f"{zookeeper}/{name}"
        cls = KafkaBroker if system == "kafka" else BrokerProcess
        settings = BROKER_SETTINGS | (CLUSTER_SETTINGS if size > 1 else {})
        self.system, self.number = system, number
        self.connect = connect
        self.directory = work / name
        self.brokers = {i: self.make_broker(cls, i, dict(settings)) for i in range(1, size + 1)}
        self.broker = self.brokers[1]
        self.work = work
        self.admin: AdminClient | None = None
        self.rows: list[dict] = []
        self.latencies: list[float] = []

    def make_broker(
        self, cls: type[BrokerProcess], broker_id: int, settings: dict[str, str]
    ) -> BrokerProcess:
        """Broker ``broker_id`` of the session with ``settings`` (a subclass adds its
        own, such as S15's listeners)."""
        return cls(
            self.directory / f"broker-{broker_id}",
            self.connect,
            broker_id=broker_id,
            overrides=settings,
        )

    @property
    def pid(self) -> int:
        return self.broker.process.pid

    @property
    def pids(self) -> list[int]:
        return [b.process.pid for b in self.brokers.values()]

    @property
    def bootstrap(self) -> str:
        return ",".join(b.bootstrap for b in self.brokers.values())

    def _live_pids(self) -> list[int]:
        return [b.process.pid for b in self.brokers.values() if b.process.poll() is None]

    def cpu_seconds(self) -> float:
        """CPU time of the brokers so far, summed (a killed broker counts no more)."""
        return sum(cpu_seconds(pid) for pid in self._live_pids())

    def user_system_seconds(self) -> tuple[float, float]:
        """User and system CPU time of the live brokers so far, each summed."""
        times = [user_system_seconds(pid) for pid in self._live_pids()]
        return sum(t[0] for t in times), sum(t[1] for t in times)

    def record(
        self, scenario: str, case: str, tool: str, metric: str, value, unit: str, **raw
    ) -> None:
        """One figure; ``raw`` (such as every repeat behind a median) goes only to the
        raw JSON."""
        self.rows.append(
            dict(
                system=self.system,
                session=self.number,
                scenario=scenario,
                case=case,
                tool=tool,
                metric=metric,
                value=value,
                unit=unit,
                **raw,
            )
        )
        print(f"  {self.system}#{self.number} {scenario} {case} {tool} {metric}: {value}")

    def record_median(
        self, scenario: str, case: str, tool: str, metric: str, repeats: list, unit: str
    ) -> None:
        """One figure that is the median of ``repeats`` taken within this session; the
        repeats go to the raw JSON beside it, and the report judges the figure by them
        (:func:`report.summarise`)."""
        value = statistics.median(repeats)
        self.record(scenario, case, tool, metric, value, unit, repeats=repeats)

    def create_topic(self, name: str, partitions: int = 1, configs: dict | None = None):
        """Create with a replica on every broker; return once every partition has a
        leader and a full ISR."""
        topic = NewTopic(name, partitions, len(self.brokers), config=configs or {})
        self.admin.create_topics([topic], operation_timeout=60)[name].result(120)
        wait_until(
            lambda: self.fully_replicated(name, partitions), f"{name}: leaders and full ISRs"
        )

    def partitions(self, topic: str) -> dict:
        """Partition id → librdkafka's PartitionMetadata (leader, replicas, isrs)."""
        metadata = self.admin.list_topics(topic, timeout=10).topics.get(topic)
        return metadata.partitions if metadata and metadata.error is None else {}

    def fully_replicated(self, topic: str, partitions: int) -> bool:
        found = self.partitions(topic).values()
        return len(found) == partitions and all(
            p.leader >= 0 and len(p.isrs) == len(self.brokers) for p in found
        )

    def all_brokers_known(self) -> bool:
        return len(self.admin.list_topics(timeout=10).brokers) == len(self.brokers)

    def start(self) -> None:
        with ThreadPoolExecutor(len(self.brokers)) as pool:  # JVMs start slowly
            list(pool.map(BrokerProcess.start, self.brokers.values()))
        self.admin = AdminClient({"bootstrap.servers": self.bootstrap})
        wait_until(self.all_brokers_known, "every broker in the metadata")

    def stop(self) -> None:
        """SIGTERM each broker in turn. One that does not exit in time has been killed by
        then: say so with its log's tail and go on, the figures are already taken."""
        self.admin = None  # librdkafka would keep reconnecting to the stopped brokers
        for broker_id, broker in self.brokers.items():
            try:
                broker.stop()
            except subprocess.TimeoutExpired as error:
                tail = "\n".join(broker.log().splitlines()[-20:])
                print(
                    f"WARNING {self.system}#{self.number} broker {broker_id}: {error}, "
                    f"killed; its log ends with:\n{tail}",
                    file=sys.stderr,
                    flush=True,
                )

    def __enter__(self) -> Session:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(self, *_) -> None:
        self.stop()


def warn(session: Session, what: str, raw: dict) -> None:
    """A figure was taken, but the clients saw something wrong: say what."""
    print(
        f"WARNING {session.system}#{session.number} {what}: {json.dumps(raw)}",
        file=sys.stderr,
        flush=True,
    )
