"""The controller's three requests (LeaderAndIsr, UpdateMetadata, StopReplica) between
their wire bodies and what the controller and the brokers work with, and its one question
to the brokers: where a replica's log stands, asked when it recovers a partition whose
ISR emptied (OffsetForLeaderEpoch from the debugging replica id, which a follower answers
too on tidelog; see ``handlers.offsets_for_leader_epoch``).

The controller sends the versions Kafka 3.9's ZooKeeper-mode controller sends
(LeaderAndIsr v7, UpdateMetadata v8, StopReplica v4); a broker reads every version the
codec knows. A topic being deleted appears in UpdateMetadata with leader -2 on each of
its partitions, as in Kafka.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from tidelog.controller.zk_data import BrokerRegistration
from tidelog.protocol import ApiKey, request_class
from tidelog.protocol.errors import ErrorCode

__all__ = [
    "DEBUGGING_REPLICA_ID",
    "LEADER_AND_ISR_VERSION",
    "LEADER_DURING_DELETE",
    "LOG_END_VERSION",
    "STOP_REPLICA_VERSION",
    "UPDATE_METADATA_VERSION",
    "PartitionLeadership",
    "ReplicaToStop",
    "failed_partitions",
    "inter_broker_endpoint",
    "leader_and_isr_request",
    "leader_and_isr_states",
    "log_end_answer",
    "log_end_request",
    "stop_replica_partitions",
    "stop_replica_request",
    "update_metadata_brokers",
    "update_metadata_request",
    "update_metadata_states",
]

LEADER_AND_ISR_VERSION = 7
UPDATE_METADATA_VERSION = 8
STOP_REPLICA_VERSION = 4
LOG_END_VERSION = 4  # OffsetForLeaderEpoch; replica_id is in v3 and later
DEBUGGING_REPLICA_ID = -2

LEADER_DURING_DELETE = -2
NO_EPOCH = -1
INCREMENTAL = 1  # the request's Type: not every partition of the cluster is in it
ZERO_UUID = uuid.UUID(int=0)
# Kafka's SecurityProtocol ids.
SECURITY_PROTOCOLS = {0: "PLAINTEXT", 1: "SSL", 2: "SASL_PLAINTEXT", 3: "SASL_SSL"}
SECURITY_PROTOCOL_IDS = {name: number for number, name in SECURITY_PROTOCOLS.items()}

LeaderAndIsrRequest = request_class(ApiKey.LEADER_AND_ISR)
UpdateMetadataRequest = request_class(ApiKey.UPDATE_METADATA)
StopReplicaRequest = request_class(ApiKey.STOP_REPLICA)


@dataclass(frozen=True)
class PartitionLeadership:
    """What LeaderAndIsr and UpdateMetadata carry for one partition."""

    topic: str
    topic_id: uuid.UUID
    partition: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    isr: tuple[int, ...]
    controller_epoch: int = 0
    zk_version: int = 0
    offline_replicas: tuple[int, ...] = ()

    @property
    def deleted(self) -> bool:
        return self.leader == LEADER_DURING_DELETE


@dataclass(frozen=True)
class ReplicaToStop:
    topic: str
    partition: int
    delete: bool


def inter_broker_endpoint(
    registration: BrokerRegistration, listener: str | None
) -> tuple[str, int] | None:
    """(host, port) of the broker's endpoint on ``listener``, or its first endpoint when
    no listener is named."""
    for name, host, port in registration.endpoints:
        if listener is None or name == listener:
            return host, port
    return None


def _by_topic(states: Iterable) -> dict[str, list]:
    grouped: dict[str, list] = {}
    for state in states:
        grouped.setdefault(state.topic, []).append(state)
    return grouped


# -- the controller's side: bodies to send ---------------------------------------------------


def _partition_fields(state: PartitionLeadership) -> dict:
    """The partition state fields LeaderAndIsr and UpdateMetadata share."""
    return {
        "partition_index": state.partition,
        "controller_epoch": state.controller_epoch,
        "leader": state.leader,
        "leader_epoch": state.leader_epoch,
        "isr": list(state.isr),
        "replicas": list(state.replicas),
    }


def _topic_states(topic_class, partition_state, states: Sequence[PartitionLeadership]) -> list:
    return [
        topic_class(
            topic_name=topic,
            topic_id=partitions[0].topic_id,
            partition_states=[partition_state(s) for s in partitions],
        )
        for topic, partitions in _by_topic(states).items()
    ]


def leader_and_isr_request(
    controller_id: int,
    controller_epoch: int,
    states: Sequence[PartitionLeadership],
    brokers: Mapping[int, BrokerRegistration],
    listener: str | None,
) -> object:
    live_leaders = []
    for leader in sorted({s.leader for s in states if s.leader in brokers}):
        endpoint = inter_broker_endpoint(brokers[leader], listener)
        if endpoint is not None:
            live_leaders.append(
                LeaderAndIsrRequest.LeaderAndIsrLiveLeader(
                    broker_id=leader, host_name=endpoint[0], port=endpoint[1]
                )
            )
    return LeaderAndIsrRequest(
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=-1,
        type=INCREMENTAL,
        topic_states=_topic_states(
            LeaderAndIsrRequest.LeaderAndIsrTopicState,
            lambda s: LeaderAndIsrRequest.LeaderAndIsrPartitionState(
                **_partition_fields(s), partition_epoch=s.zk_version
            ),
            states,
        ),
        live_leaders=live_leaders,
    )


def update_metadata_request(
    controller_id: int,
    controller_epoch: int,
    states: Sequence[PartitionLeadership],
    brokers: Mapping[int, BrokerRegistration],
) -> object:
    return UpdateMetadataRequest(
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=-1,
        topic_states=_topic_states(
            UpdateMetadataRequest.UpdateMetadataTopicState,
            lambda s: UpdateMetadataRequest.UpdateMetadataPartitionState(
                **_partition_fields(s),
                zk_version=s.zk_version,
                offline_replicas=list(s.offline_replicas),
            ),
            states,
        ),
        live_brokers=[
            UpdateMetadataRequest.UpdateMetadataBroker(
                id=broker_id,
                endpoints=[
                    UpdateMetadataRequest.UpdateMetadataEndpoint(
                        port=port,
                        host=host,
                        listener=name,
                        security_protocol=SECURITY_PROTOCOL_IDS[registration.protocol_of(name)],
                    )
                    for name, host, port in registration.endpoints
                ],
                rack=registration.rack,
            )
            for broker_id, registration in sorted(brokers.items())
        ],
    )


def stop_replica_request(
    controller_id: int, controller_epoch: int, replicas: Sequence[ReplicaToStop]
) -> object:
    return StopReplicaRequest(
        controller_id=controller_id,
        controller_epoch=controller_epoch,
        broker_epoch=-1,
        topic_states=[
            StopReplicaRequest.StopReplicaTopicState(
                topic_name=topic,
                partition_states=[
                    StopReplicaRequest.StopReplicaPartitionState(
                        partition_index=r.partition,
                        leader_epoch=LEADER_DURING_DELETE if r.delete else NO_EPOCH,
                        delete_partition=r.delete,
                    )
                    for r in stopped
                ],
            )
            for topic, stopped in _by_topic(replicas).items()
        ],
    )


def log_end_request(topic: str, partition: int, leader_epoch: int) -> dict:
    """The body asking a broker where its replica of the partition stands."""
    wanted = {
        "partition": partition,
        "current_leader_epoch": NO_EPOCH,
        "leader_epoch": leader_epoch,
    }
    return {
        "replica_id": DEBUGGING_REPLICA_ID,
        "topics": [{"topic": topic, "partitions": [wanted]}],
    }


def log_end_answer(response: object) -> tuple[ErrorCode, int, int]:
    """(error, latest leader epoch, log end offset) from the answer to
    :func:`log_end_request`."""
    (answer,) = response.topics[0].partitions
    return ErrorCode(answer.error_code), answer.leader_epoch, answer.end_offset


def failed_partitions(response: object) -> list[tuple[object, int, int]]:
    """(topic name or id, partition, error code) of each partition a LeaderAndIsr or
    StopReplica response reports failed."""
    found = []
    for error in getattr(response, "partition_errors", None) or ():
        if error.error_code:
            found.append((error.topic_name, error.partition_index, error.error_code))
    for topic in getattr(response, "topics", None) or ():
        for error in topic.partition_errors:
            if error.error_code:
                found.append((topic.topic_id, error.partition_index, error.error_code))
    return found


def storage_errors(request: object, response: object) -> list[tuple[str, int]]:
    """The partitions a LeaderAndIsr response refuses with KAFKA_STORAGE_ERROR (their
    replica is on a failed log directory of that broker), named as the request did."""
    names = {t.topic_id: t.topic_name for t in request.topic_states}
    return [
        (names.get(topic, topic), partition)
        for topic, partition, code in failed_partitions(response)
        if code == ErrorCode.KAFKA_STORAGE_ERROR
    ]


# -- the broker's side: bodies received, of any version --------------------------------------


def _partition_states(request, version: int, grouped_from: int) -> list[tuple]:
    """(topic, topic id, partition state) from a request that lists its partition states
    flat before version ``grouped_from`` and per topic from it on."""
    if version < grouped_from:
        return [(p.topic_name, ZERO_UUID, p) for p in request.ungrouped_partition_states]
    return [
        (t.topic_name, t.topic_id or ZERO_UUID, p)
        for t in request.topic_states
        for p in t.partition_states
    ]


def leader_and_isr_states(request, version: int) -> list[PartitionLeadership]:
    grouped = _partition_states(request, version, grouped_from=2)
    return [
        PartitionLeadership(
            topic,
            topic_id,
            p.partition_index,
            p.leader,
            p.leader_epoch,
            tuple(p.replicas),
            tuple(p.isr),
            p.controller_epoch,
            p.partition_epoch,
        )
        for topic, topic_id, p in grouped
    ]


def update_metadata_states(request, version: int) -> list[PartitionLeadership]:
    grouped = _partition_states(request, version, grouped_from=5)
    return [
        PartitionLeadership(
            topic,
            topic_id,
            p.partition_index,
            p.leader,
            p.leader_epoch,
            tuple(p.replicas),
            tuple(p.isr),
            p.controller_epoch,
            p.zk_version,
            tuple(p.offline_replicas or ()),
        )
        for topic, topic_id, p in grouped
    ]


def update_metadata_brokers(request, version: int) -> dict[int, BrokerRegistration]:
    brokers = {}
    for broker in request.live_brokers:
        if version == 0:
            endpoints = [("PLAINTEXT", broker.v0_host, broker.v0_port)]
        else:
            endpoints = [
                (
                    e.listener if version >= 3 else SECURITY_PROTOCOLS.get(e.security_protocol),
                    e.host,
                    e.port,
                )
                for e in broker.endpoints
            ]
        protocols = tuple(
            (name, SECURITY_PROTOCOLS.get(e.security_protocol, "PLAINTEXT"))
            for (name, _, _), e in zip(endpoints, broker.endpoints or (), strict=False)
        )
        rack = broker.rack if version >= 2 else None
        brokers[broker.id] = BrokerRegistration(broker.id, tuple(endpoints), rack, -1, protocols)
    return brokers


def stop_replica_partitions(request, version: int) -> list[ReplicaToStop]:
    if version == 0:
        return [
            ReplicaToStop(p.topic_name, p.partition_index, request.delete_partitions)
            for p in request.ungrouped_partitions
        ]
    if version <= 2:
        return [
            ReplicaToStop(t.name, index, request.delete_partitions)
            for t in request.topics
            for index in t.partition_indexes
        ]
    return [
        ReplicaToStop(t.topic_name, p.partition_index, p.delete_partition)
        for t in request.topic_states
        for p in t.partition_states
    ]
