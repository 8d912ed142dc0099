"""Committed-offset calls of :class:`~tidelog.admin.AdminClient`: a group's offsets
read (OffsetFetch), written (OffsetCommit, as Kafka's admin resets them) and deleted
(OffsetDelete), each sent to the group's coordinator with the retries of
:mod:`tidelog.admin.groups`."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from tidelog.admin.errors import AdminError
from tidelog.admin.groups import Node, TopicPartition, _topics
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode

__all__ = ["GroupOffsetsMixin", "OffsetAndMetadata"]


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int | None = None
    metadata: str = ""


def _partition_errors(topics: Iterable[Any]) -> list[int]:
    """The error codes of a response's partitions, topic by topic."""
    return [p.error_code for t in topics for p in t.partitions]


class GroupOffsetsMixin:
    """Committed-offset calls; mixed into :class:`~tidelog.admin.AdminClient`, which
    provides ``_coordinator_request``."""

    _coordinator_request: Callable[..., tuple[Any, int, Node]]

    def list_group_offsets(
        self,
        group: str,
        partitions: Iterable[tuple[str, int]] | None = None,
        *,
        require_stable: bool = False,
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (OffsetFetch), of every partition it has one for
        when ``partitions`` is None; partitions without a committed offset are left out."""
        wanted = None if partitions is None else [TopicPartition(*tp) for tp in partitions]
        topics = (
            None
            if wanted is None
            else _topics(wanted, lambda tp: tp.partition, "partition_indexes")
        )

        def body(version: int) -> dict:
            if version >= 8:
                return {
                    "groups": [{"group_id": group, "topics": topics}],
                    "require_stable": require_stable,
                }
            out: dict[str, Any] = {"group_id": group, "topics": topics}
            if version >= 7:
                out["require_stable"] = require_stable
            return out

        def errors(response, version: int) -> list[int]:
            if version >= 8:
                g = response.groups[0]
                return [g.error_code, *_partition_errors(g.topics)]
            codes = _partition_errors(response.topics)
            return [response.error_code, *codes] if version >= 2 else codes

        response, version, _ = self._coordinator_request(
            group,
            ApiKey.OFFSET_FETCH,
            body,
            errors,
            min_version=2 if wanted is None else 1,
        )
        if version >= 8:
            answer = response.groups[0]
            top, topics_out = ErrorCode(answer.error_code), answer.topics
        else:
            top = ErrorCode(response.error_code) if version >= 2 else ErrorCode.NONE
            topics_out = response.topics
        if top != ErrorCode.NONE:
            raise AdminError(top, f"OffsetFetch {group!r}: {top.name}")
        out = {}
        for topic in topics_out:
            for p in topic.partitions:
                error = ErrorCode(p.error_code)
                if error != ErrorCode.NONE:
                    raise AdminError(
                        error,
                        f"OffsetFetch {group!r} {topic.name}-{p.partition_index}: " f"{error.name}",
                    )
                if p.committed_offset < 0:
                    continue
                epoch = p.committed_leader_epoch
                out[TopicPartition(topic.name, p.partition_index)] = OffsetAndMetadata(
                    p.committed_offset, None if epoch < 0 else epoch, p.metadata or ""
                )
        return dict(sorted(out.items()))

    def alter_group_offsets(
        self, group: str, offsets: Mapping[tuple[str, int], int | OffsetAndMetadata]
    ) -> None:
        """Commit ``offsets`` for the group as Kafka's admin does: OffsetCommit with
        generation -1 and an empty member id, which the coordinator accepts only while the
        group has no members (UNKNOWN_MEMBER_ID otherwise). Raises :class:`AdminError`
        with the first partition error."""
        wanted = {
            TopicPartition(*tp): o if isinstance(o, OffsetAndMetadata) else OffsetAndMetadata(o)
            for tp, o in offsets.items()
        }
        if not wanted:
            return

        def body(version: int) -> dict:
            def partition(tp: TopicPartition) -> dict:
                o = wanted[tp]
                out = {
                    "partition_index": tp.partition,
                    "committed_offset": o.offset,
                    "committed_metadata": o.metadata,
                }
                if version >= 6 and o.leader_epoch is not None:
                    out["committed_leader_epoch"] = o.leader_epoch
                return out

            return {
                "group_id": group,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": _topics(sorted(wanted), partition),
            }

        response, _, _ = self._coordinator_request(
            group,
            ApiKey.OFFSET_COMMIT,
            body,
            lambda r, v: _partition_errors(r.topics),
        )
        failed = [
            (ErrorCode(p.error_code), TopicPartition(t.name, p.partition_index))
            for t in response.topics
            for p in t.partitions
            if p.error_code != ErrorCode.NONE
        ]
        if failed:
            error, tp = failed[0]
            raise AdminError(
                error,
                f"OffsetCommit {group!r}: {error.name} for "
                + ", ".join(str(tp) for e, tp in failed if e == error),
            )

    def delete_group_offsets(
        self, group: str, partitions: Iterable[tuple[str, int]]
    ) -> dict[TopicPartition, ErrorCode]:
        """OffsetDelete: the error code of each partition (GROUP_SUBSCRIBED_TO_TOPIC while
        a member is subscribed to its topic). A group-level error (GROUP_ID_NOT_FOUND,
        NON_EMPTY_GROUP, ...) raises :class:`AdminError`."""
        wanted = sorted({TopicPartition(*tp) for tp in partitions})
        response, _, _ = self._coordinator_request(
            group,
            ApiKey.OFFSET_DELETE,
            lambda v: {
                "group_id": group,
                "topics": _topics(wanted, lambda tp: {"partition_index": tp.partition}),
            },
            lambda r, v: [r.error_code, *_partition_errors(r.topics)],
        )
        error = ErrorCode(response.error_code)
        if error != ErrorCode.NONE:
            raise AdminError(error, f"OffsetDelete {group!r}: {error.name}")
        return {
            TopicPartition(t.name, p.partition_index): ErrorCode(p.error_code)
            for t in response.topics
            for p in t.partitions
        }

    # -- topics and log offsets -------------------------------------------------------------
