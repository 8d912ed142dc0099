"""The current leader, told with the error that sends a client away (KIP-951).

A Produce (v10+) answered NOT_LEADER_OR_FOLLOWER, or a Fetch (v16+) answered
NOT_LEADER_OR_FOLLOWER or FENCED_LEADER_EPOCH, names in the partition's ``CurrentLeader``
the leader and leader epoch this broker knows, and the response's ``NodeEndpoints`` give
those leaders' addresses. Seed 000 (元数据请求) has a client that gets a "not leader"
error refresh its metadata before it sends again; one that reads these fields
(librdkafka 2.4+, Kafka's Java client 3.7+) goes to the new leader without that round
trip. As Kafka, a leader that is not alive is named without an endpoint, and a partition
unknown here is named with leader -1 and epoch -1.
"""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.server.metadata_cache import MetadataCache

__all__ = ["LeaderHints"]

# Per API: the first version with the fields, the errors that name the leader, and the
# response's message class (which defines LeaderIdAndEpoch and NodeEndpoint).
HINTED = {
    ApiKey.PRODUCE: (
        10,
        frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER}),
        response_class(ApiKey.PRODUCE),
    ),
    ApiKey.FETCH: (
        16,
        frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH}),
        response_class(ApiKey.FETCH),
    ),
}


class LeaderHints:
    """The leaders named in one Produce or Fetch response of ``version``, and their
    endpoints on the request's listener; a version without the fields names none."""

    def __init__(self, metadata: MetadataCache, listener: str, api: ApiKey, version: int):
        first_version, errors, self._response = HINTED[api]
        self._errors = errors if version >= first_version else frozenset()
        self._metadata = metadata
        self._listener = listener
        self._nodes: dict[int, object] = {}

    def name_leader(self, answer, topic: str, partition: int) -> None:
        """Set the partition ``answer``'s ``current_leader`` when its error sends the
        client away."""
        if answer.error_code in self._errors:
            answer.current_leader = self.current_leader(topic, partition)

    def current_leader(self, topic: str, partition: int):
        """The partition's ``LeaderIdAndEpoch`` as this broker knows it; the leader's
        endpoint, when it is alive, goes into :meth:`node_endpoints`."""
        state = self._metadata.partition(topic, partition)
        if state is None:
            return self._response.LeaderIdAndEpoch(leader_id=-1, leader_epoch=-1)
        node = self._metadata.node(state.leader, self._listener)
        if node is not None:
            node_id, host, port, rack = node
            self._nodes[node_id] = self._response.NodeEndpoint(
                node_id=node_id, host=host, port=port, rack=rack
            )
        return self._response.LeaderIdAndEpoch(
            leader_id=state.leader, leader_epoch=state.leader_epoch
        )

    def node_endpoints(self) -> list:
        """Every leader named so far that is alive, by id."""
        return [self._nodes[node_id] for node_id in sorted(self._nodes)]
