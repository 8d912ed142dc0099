"""Kafka's ZooKeeper layout: the paths and JSON documents a Kafka cluster keeps there.

Every znode is written in the format Apache Kafka (ZooKeeper mode) writes, so tools that
read ZooKeeper and operators who look at it find what they expect:

* ``/cluster/id`` - ``{"version":"1","id":"<base64 uuid>"}``
* ``/brokers/ids/<id>`` (ephemeral) - endpoints, host, port, rack, timestamp
* ``/brokers/seqid`` - sequence for generated broker ids
* ``/brokers/topics/<topic>`` - ``{"version":3,"topic_id":..,"partitions":{"0":[1,2]},
  "adding_replicas":{},"removing_replicas":{}}``
* ``/brokers/topics/<topic>/partitions/<p>/state`` - leader, leader_epoch, isr,
  controller_epoch
* ``/controller`` (ephemeral), ``/controller_epoch``
* ``/config/topics/<topic>``, ``/config/brokers/<id>``, ``/config/brokers/<default>`` -
  ``{"version":1,"config":{...}}``; ``/config/changes/config_change_<seq>`` notifications
* ``/admin/delete_topics/<topic>``, ``/latest_producer_id_block``
* ``/admin/reassign_partitions`` - ``{"version":1,"partitions":[{"topic":..,"partition":..,
  "replicas":[..]}]}``, reassignments asked for through ZooKeeper (the tools before
  AlterPartitionReassignments); the controller removes each partition once it is done

During a reassignment a topic's ``partitions`` hold the full replica set (the target
replicas, then the original ones not among them), and ``adding_replicas`` /
``removing_replicas`` the replicas it adds and removes, so a new controller resumes it.
"""

from __future__ import annotations

import base64
import json
import time
import uuid
from dataclasses import dataclass, field

__all__ = [
    "BROKER_IDS",
    "CLUSTER_ID",
    "CONFIG_CHANGES",
    "CONTROLLER",
    "CONTROLLER_EPOCH",
    "DEFAULT_ENTITY",
    "DELETE_TOPICS",
    "PRODUCER_ID_BLOCK",
    "REASSIGN_PARTITIONS",
    "TOPICS",
    "BrokerRegistration",
    "PartitionState",
    "TopicAssignment",
    "broker_path",
    "config_path",
    "decode_json",
    "decode_reassignments",
    "encode_json",
    "encode_reassignments",
    "new_uuid",
    "partition_state_path",
    "topic_path",
    "uuid_from_base64",
    "uuid_to_base64",
]

CLUSTER_ID = "/cluster/id"
BROKER_IDS = "/brokers/ids"
BROKER_SEQID = "/brokers/seqid"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_CHANGES = "/config/changes"
DELETE_TOPICS = "/admin/delete_topics"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = "isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = "log_dir_event_"
LOG_DIR_FAILURE_EVENT = 1  # Kafka's LogDirEventNotificationHandler.LogDirFailureEvent
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
REASSIGN_PARTITIONS = "/admin/reassign_partitions"
DEFAULT_ENTITY = "<default>"

PERSISTENT_PATHS = (
    "/brokers/ids",
    "/brokers/topics",
    "/brokers/seqid",
    "/config/changes",
    "/config/topics",
    "/config/brokers",
    "/admin/delete_topics",
    ISR_CHANGE_NOTIFICATION,
    LOG_DIR_EVENT_NOTIFICATION,
    "/cluster",
)


def encode_json(document: object) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode("utf-8")


def decode_json(data: bytes | None) -> object:
    return None if not data else json.loads(data.decode("utf-8"))


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{TOPICS}/{topic}/partitions/{partition}/state"


def config_path(entity_type: str, name: str) -> str:
    """``entity_type`` is ``topics`` or ``brokers``."""
    return f"/config/{entity_type}/{name}"


def new_uuid() -> uuid.UUID:
    return uuid.uuid4()


def uuid_to_base64(value: uuid.UUID) -> str:
    """Kafka prints ids (cluster id, topic id) as URL-safe base64 without padding."""
    return base64.urlsafe_b64encode(value.bytes).decode("ascii").rstrip("=")


def uuid_from_base64(text: str) -> uuid.UUID:
    return uuid.UUID(bytes=base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))


_SECURITY_PROTOCOL_NAMES = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")


@dataclass(frozen=True)
class BrokerRegistration:
    broker_id: int
    endpoints: tuple[tuple[str, str, int], ...]  # (listener name, host, port)
    rack: str | None = None
    # Kafka's broker epoch: the czxid of the registration znode. A broker restarted with
    # the same id registers anew, so a changed epoch tells the controller it bounced.
    epoch: int = -1
    # Each listener's security protocol (Kafka's listener_security_protocol_map).
    protocols: tuple[tuple[str, str], ...] = ()

    def protocol_of(self, listener: str) -> str:
        """The listener's security protocol; one the registration does not map is taken
        to be named after its protocol (Kafka's default map), else PLAINTEXT."""
        mapped = dict(self.protocols).get(listener)
        if mapped is not None:
            return mapped
        return listener if listener in _SECURITY_PROTOCOL_NAMES else "PLAINTEXT"

    def encode(self) -> bytes:
        first = self.endpoints[0]
        return encode_json(
            {
                "listener_security_protocol_map": {
                    name: self.protocol_of(name) for name, _, _ in self.endpoints
                },
                "endpoints": [f"{name}://{host}:{port}" for name, host, port in self.endpoints],
                "rack": self.rack,
                "jmx_port": -1,
                "port": first[2],
                "host": first[1],
                "version": 5,
                "timestamp": str(int(time.time() * 1000)),
                "features": {},
            }
        )

    @classmethod
    def decode(cls, broker_id: int, data: bytes, epoch: int = -1) -> BrokerRegistration:
        document = decode_json(data)
        endpoints = []
        for item in document.get("endpoints", []):
            name, _, address = item.partition("://")
            host, _, port = address.rpartition(":")
            endpoints.append((name, host.strip("[]"), int(port)))
        protocols = tuple(sorted(document.get("listener_security_protocol_map", {}).items()))
        return cls(broker_id, tuple(endpoints), document.get("rack"), epoch, protocols)


@dataclass(frozen=True)
class TopicAssignment:
    """A topic's replica lists; during a reassignment ``partitions`` hold the full
    replica set and ``adding`` / ``removing`` the partitions' moving replicas."""

    topic: str
    topic_id: uuid.UUID
    partitions: dict[int, list[int]]
    adding: dict[int, list[int]] = field(default_factory=dict)
    removing: dict[int, list[int]] = field(default_factory=dict)

    def encode(self) -> bytes:
        return encode_json(
            {
                "version": 3,
                "topic_id": uuid_to_base64(self.topic_id),
                "partitions": {str(p): r for p, r in sorted(self.partitions.items())},
                "adding_replicas": {str(p): r for p, r in sorted(self.adding.items()) if r},
                "removing_replicas": {str(p): r for p, r in sorted(self.removing.items()) if r},
            }
        )

    @classmethod
    def decode(cls, topic: str, data: bytes) -> TopicAssignment:
        document = decode_json(data)
        topic_id = document.get("topic_id")

        def by_partition(name: str) -> dict[int, list[int]]:
            return {int(p): list(r) for p, r in (document.get(name) or {}).items() if r}

        return cls(
            topic,
            uuid_from_base64(topic_id) if topic_id else uuid.UUID(int=0),
            by_partition("partitions"),
            by_partition("adding_replicas"),
            by_partition("removing_replicas"),
        )


def encode_reassignments(reassignments: dict[tuple[str, int], list[int]]) -> bytes:
    """The ``/admin/reassign_partitions`` document."""
    return encode_json(
        {
            "version": 1,
            "partitions": [
                {"topic": topic, "partition": partition, "replicas": replicas}
                for (topic, partition), replicas in sorted(reassignments.items())
            ],
        }
    )


def decode_reassignments(data: bytes | None) -> dict[tuple[str, int], list[int]]:
    """Partition → target replicas from ``/admin/reassign_partitions``; ValueError when
    the document is not Kafka's."""
    document = decode_json(data)
    if document is None:
        return {}
    try:
        return {
            (str(item["topic"]), int(item["partition"])): [int(b) for b in item["replicas"]]
            for item in document["partitions"]
        }
    except (KeyError, TypeError) as error:
        raise ValueError(f"not a reassignment document: {error!r}") from None


@dataclass(frozen=True)
class PartitionState:
    leader: int
    leader_epoch: int
    isr: list[int]
    controller_epoch: int
    zk_version: int = -1  # the znode version it was read at (for conditional updates)

    def encode(self) -> bytes:
        return encode_json(
            {
                "controller_epoch": self.controller_epoch,
                "leader": self.leader,
                "version": 1,
                "leader_epoch": self.leader_epoch,
                "isr": self.isr,
            }
        )

    @classmethod
    def decode(cls, data: bytes, zk_version: int = -1) -> PartitionState:
        document = decode_json(data)
        return cls(
            document["leader"],
            document["leader_epoch"],
            list(document["isr"]),
            document["controller_epoch"],
            zk_version,
        )
