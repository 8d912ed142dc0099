"""A cluster of real ``tidelog-server`` processes on one ZooKeeper chroot, and what the
cluster tests ask of it: each broker's Metadata, the controller znodes, partition
states, topics created through the controller, and polling until something holds. A
cluster is PLAINTEXT or SASL_SSL only (:mod:`integration.secure_cluster`); its clients'
settings come from it, and its own requests go through them."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from kazoo.client import KazooClient
from kazoo.exceptions import NoNodeError

from integration.broker_process import BrokerProcess, free_port
from integration.secure_cluster import ClusterSecurity
from tidelog.admin.connection import BrokerConnection
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.client_security import ClientSecurity
from waiting import wait_until

__all__ = ["Cluster"]

# A broker whose leaderships cannot move while other brokers live (a test stopped their
# other replicas) retries its controlled shutdown: not Kafka's 3 x 5 s here.
TEST_DEFAULTS = {"controlled.shutdown.retry.backoff.ms": "100"}


class Cluster:
    """Brokers ``first_id .. first_id+size-1`` (1..size by default), started in order; a
    killed or stopped broker stays in ``brokers`` and can be started again with its id,
    config and log dirs. The operator's brokers are numbered from 0, as pod ordinals.
    ``security`` is a mode of :data:`~integration.secure_cluster.SECURITY_MODES`."""

    def __init__(
        self,
        directory: Path,
        zk_connect: str,
        size: int = 3,
        overrides: Mapping[str, str] | None = None,
        first_id: int = 1,
        security: str = "plaintext",
    ):
        self.zk_connect = zk_connect
        self.security = ClusterSecurity(security, directory / "security")
        self.brokers = {}
        for broker_id in range(first_id, first_id + size):
            port = free_port()
            self.brokers[broker_id] = BrokerProcess(
                directory / f"broker-{broker_id}",
                zk_connect,
                broker_id=broker_id,
                port=port,
                overrides={
                    **TEST_DEFAULTS,
                    "offsets.topic.replication.factor": str(min(3, size)),
                    **self.security.broker_properties(port),
                    **(overrides or {}),
                },
            )
        self.zk = KazooClient(hosts=zk_connect)

    def __enter__(self) -> Cluster:
        self.zk.start(timeout=10)
        self.security.register_users(self.zk_connect)
        for broker in self.brokers.values():
            broker.start()
        wait_until(self.all_known, "every broker knows every other")
        return self

    def all_known(self) -> bool:
        """Every running broker's Metadata lists every running broker (the controller
        learns of a new broker through a watch, a moment after it answers)."""
        running = sorted(self.running)
        return all(
            sorted(b.node_id for b in self.metadata(broker_id, []).brokers) == running
            for broker_id in running
        )

    def __exit__(self, *exc) -> None:
        try:
            failures = {}
            for broker_id, broker in self.brokers.items():
                if self.is_running(broker_id):
                    code = broker.stop()
                    if code != 0:
                        failures[broker_id] = f"exit {code}:\n{broker.log()[-3000:]}"
            assert not failures, f"brokers did not stop cleanly: {failures}"
        finally:
            self.zk.stop()
            self.zk.close()

    def is_running(self, broker_id: int) -> bool:
        process = self.brokers[broker_id].process
        return process is not None and process.poll() is None

    @property
    def running(self) -> list[int]:
        return [b for b in self.brokers if self.is_running(b)]

    @property
    def bootstrap(self) -> str:
        """Every broker's address, as a client is configured (some may be down)."""
        return ",".join(b.bootstrap for b in self.brokers.values())

    @property
    def running_bootstrap(self) -> str:
        return ",".join(self.brokers[b].bootstrap for b in self.running)

    # -- how clients connect ---------------------------------------------------------------

    def client_config(self, bootstrap: str | None = None) -> dict[str, str]:
        """confluent-kafka settings that reach the cluster through ``bootstrap`` (every
        broker by default) with its security."""
        return {"bootstrap.servers": bootstrap or self.bootstrap, **self.security.client_config()}

    def client_properties_file(self) -> Path:
        """Kafka's client properties for Java clients and tools (``--command-config``)."""
        return self.security.client_properties_file

    def admin_security(self) -> ClientSecurity:
        """How tidelog's own admin connections reach the cluster."""
        return self.security.admin

    # -- what the brokers say ------------------------------------------------------------

    def connect(self, broker_id: int) -> BrokerConnection:
        return BrokerConnection(
            "127.0.0.1", self.brokers[broker_id].port, timeout=10, security=self.admin_security()
        )

    def metadata(self, broker_id: int, topics: list[str] | None = None):
        with self.connect(broker_id) as connection:
            body = {
                "topics": None if topics is None else [{"name": t} for t in topics],
                "allow_auto_topic_creation": False,
            }
            return connection.request(ApiKey.METADATA, None, body)

    def leaders(self, broker_id: int, topic: str) -> dict[int, tuple[int, int, list[int]]]:
        """Partition → (leader, leader epoch, ISR) in that broker's Metadata."""
        (found,) = self.metadata(broker_id, [topic]).topics
        assert found.error_code == ErrorCode.NONE, ErrorCode(found.error_code).name
        return {
            p.partition_index: (p.leader_id, p.leader_epoch, sorted(p.isr_nodes))
            for p in found.partitions
        }

    def create_topic(
        self,
        name: str,
        *,
        partitions: int = -1,
        replication_factor: int = -1,
        assignment: Mapping[int, list[int]] | None = None,
        configs: Mapping[str, str] | None = None,
    ) -> None:
        """CreateTopics sent to the controller once it knows every running broker; then
        wait until every running broker's Metadata has each partition with a leader."""
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": replication_factor,
                    "assignments": [
                        {"partition_index": p, "broker_ids": r}
                        for p, r in sorted((assignment or {}).items())
                    ],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout_ms": 10000,
            "validate_only": False,
        }
        controller = self.wait_for_controller()
        wait_until(self.all_known, "every broker knows every running broker")
        with self.connect(controller) as connection:
            (result,) = connection.request(ApiKey.CREATE_TOPICS, None, body).topics
        assert result.error_code == ErrorCode.NONE, result.error_message
        count = len(assignment) if assignment else partitions

        def everywhere() -> bool:
            for broker_id in self.running:
                leaders = self.leaders(broker_id, name)
                if len(leaders) != count or any(leader < 0 for leader, _, _ in leaders.values()):
                    return False
            return True

        wait_until(everywhere, f"every broker knows the leaders of {name}")

    # -- what ZooKeeper says ---------------------------------------------------------------

    def controller_id(self) -> int | None:
        try:
            data, _ = self.zk.get("/controller")
        except NoNodeError:
            return None
        return json.loads(data)["brokerid"]

    def wait_for_controller(self) -> int:
        """The controller's id, once there is one (broker 0 counts too)."""
        found = wait_until(
            lambda: (c := self.controller_id()) is not None and (c,), "the cluster has a controller"
        )
        return found[0]

    def controller_epoch(self) -> int:
        data, _ = self.zk.get("/controller_epoch")
        return int(data)

    def assignment(self, topic: str) -> dict[int, list[int]]:
        data, _ = self.zk.get(f"/brokers/topics/{topic}")
        return {int(p): r for p, r in json.loads(data)["partitions"].items()}

    def partition_state(self, topic: str, partition: int) -> dict:
        data, _ = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        return json.loads(data)

    def registered(self) -> list[int]:
        try:
            return sorted(int(b) for b in self.zk.get_children("/brokers/ids"))
        except NoNodeError:
            return []
