"""Log-offset calls of :class:`~tidelog.admin.AdminClient`: a topic's partitions
(Metadata) and the offsets of partitions' logs (ListOffsets).

ListOffsets goes to each partition's leader; on a leadership error it reads metadata
again and asks the new leader, until the client's timeout."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tidelog.admin.errors import AdminError
from tidelog.admin.groups import Node, TopicPartition, _Deadline, _topics
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode

__all__ = ["EARLIEST", "LATEST", "ListedOffset", "LogOffsetsMixin"]

# ListOffsets' special timestamps.
LATEST = -1
EARLIEST = -2
_SPECS = {"latest": LATEST, "earliest": EARLIEST}
# Per-partition ListOffsets errors that mean "ask the (new) leader again".
_LEADERSHIP = frozenset(
    {
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        ErrorCode.LEADER_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.OFFSET_NOT_AVAILABLE,
        ErrorCode.UNKNOWN_LEADER_EPOCH,
        ErrorCode.FENCED_LEADER_EPOCH,
        ErrorCode.REPLICA_NOT_AVAILABLE,
    }
)


@dataclass(frozen=True)
class ListedOffset:
    """One ListOffsets answer; ``offset`` is -1 when no record has a timestamp at or after
    the one asked for."""

    offset: int
    timestamp: int = -1
    leader_epoch: int | None = None


class LogOffsetsMixin:
    """Log-offset calls; mixed into :class:`~tidelog.admin.AdminClient`, which provides
    ``_send``, ``metadata`` and ``timeout``."""

    timeout: float
    _send: Callable[..., tuple[Any, int]]
    metadata: Callable[..., Any]

    def topic_partitions(self, topics: Iterable[str]) -> dict[str, list[int]]:
        """The partitions of each topic (Metadata); an unknown topic raises
        :class:`AdminError` (UNKNOWN_TOPIC_OR_PARTITION)."""
        topics = list(dict.fromkeys(topics))
        if not topics:
            return {}
        out = {}
        for topic in self.metadata(topics).topics:
            error = ErrorCode(topic.error_code)
            if error != ErrorCode.NONE:
                raise AdminError(error, f"topic {topic.name!r}: {error.message}")
            out[topic.name] = sorted(p.partition_index for p in topic.partitions)
        return {t: out[t] for t in topics}

    def list_offsets(
        self,
        partitions: Iterable[tuple[str, int]],
        spec: str | int | Mapping[tuple[str, int], str | int] = "latest",
        *,
        isolation_level: int = 0,
    ) -> dict[TopicPartition, ListedOffset]:
        """ListOffsets at each partition's leader. ``spec`` is ``"earliest"``,
        ``"latest"`` or a timestamp in ms (the first offset whose record timestamp is at
        or after it; -1 when there is none), or such a value per partition.
        ``isolation_level`` 1 (read committed) gives the last stable offset as latest."""
        wanted = list(dict.fromkeys(TopicPartition(*tp) for tp in partitions))

        def timestamp(tp: TopicPartition) -> int:
            value = spec.get(tp) if isinstance(spec, Mapping) else spec
            if isinstance(value, str):
                if value not in _SPECS:
                    raise ValueError(f"offset spec {value!r}: earliest, latest or a timestamp")
                return _SPECS[value]
            if value is None or (value < 0 and value not in (EARLIEST, LATEST)):
                raise ValueError(f"offset spec {value!r} for {tp}: earliest, latest or >= 0")
            return value

        timestamps = {tp: timestamp(tp) for tp in wanted}
        out: dict[TopicPartition, ListedOffset] = {}
        deadline = _Deadline(self.timeout)
        while True:
            pending = [tp for tp in wanted if tp not in out]
            if not pending:
                return {tp: out[tp] for tp in wanted}
            retry: ErrorCode | None = None
            for leader, tps in self._leaders(pending).items():
                if leader is None:
                    retry = ErrorCode.LEADER_NOT_AVAILABLE
                    continue
                try:
                    answers = self._list_offsets_at(leader, tps, timestamps, isolation_level)
                except OSError:
                    retry = ErrorCode.NETWORK_EXCEPTION
                    continue
                for tp, (error, listed) in answers.items():
                    if error == ErrorCode.NONE:
                        out[tp] = listed
                    elif error in _LEADERSHIP:
                        retry = error
                    else:
                        raise AdminError(error, f"ListOffsets {tp}: {error.message}")
            if retry is not None and not deadline.wait():
                missing = ", ".join(str(tp) for tp in wanted if tp not in out)
                raise AdminError(retry, f"ListOffsets {missing}: {retry.message}")

    def _leaders(self, partitions: list[TopicPartition]) -> dict[Node | None, list[TopicPartition]]:
        metadata = self.metadata(sorted({tp.topic for tp in partitions}))
        nodes = {b.node_id: Node(b.node_id, b.host, b.port) for b in metadata.brokers}
        leaders: dict[TopicPartition, int] = {}
        for topic in metadata.topics:
            error = ErrorCode(topic.error_code)
            if error not in (ErrorCode.NONE, ErrorCode.LEADER_NOT_AVAILABLE):
                raise AdminError(error, f"topic {topic.name!r}: {error.message}")
            for p in topic.partitions:
                leaders[TopicPartition(topic.name, p.partition_index)] = p.leader_id
        out: dict[Node | None, list[TopicPartition]] = {}
        for tp in partitions:
            if tp not in leaders:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                raise AdminError(error, f"{tp}: {error.message}")
            out.setdefault(nodes.get(leaders[tp]), []).append(tp)
        return out

    def _list_offsets_at(
        self,
        leader: Node,
        partitions: list[TopicPartition],
        timestamps: Mapping[TopicPartition, int],
        isolation_level: int,
    ) -> dict[TopicPartition, tuple[ErrorCode, ListedOffset]]:
        def body(version: int) -> dict:
            out: dict[str, Any] = {
                "replica_id": -1,
                "topics": _topics(
                    partitions,
                    lambda tp: {"partition_index": tp.partition, "timestamp": timestamps[tp]},
                ),
            }
            if version >= 2:
                out["isolation_level"] = isolation_level
            return out

        response, _ = self._send(leader.address, ApiKey.LIST_OFFSETS, body, min_version=1)
        return {
            TopicPartition(t.name, p.partition_index): (
                ErrorCode(p.error_code),
                ListedOffset(p.offset, p.timestamp, None if p.leader_epoch < 0 else p.leader_epoch),
            )
            for t in response.topics
            for p in t.partitions
        }
