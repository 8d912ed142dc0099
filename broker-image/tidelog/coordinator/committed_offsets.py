"""Committed offsets of a group: OffsetCommit, OffsetFetch, OffsetDelete and expiry
(seed 003, 三.8 and 三.10).

A commit is accepted from a member of the current generation, or with generation -1
into an Empty (or unknown) group: consumers that assign partitions themselves, and admin
tools. Offsets of an Empty group expire ``offsets.retention.minutes`` after it became
Empty. Part of :class:`~tidelog.coordinator.group_coordinator.GroupCoordinator`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import NamedTuple

from tidelog.coordinator.group import Group, GroupState
from tidelog.coordinator.offsets_records import (
    OffsetValue,
    encode_offset_key,
    encode_offset_value,
)
from tidelog.protocol.errors import ErrorCode

__all__ = ["CommitRequest", "OffsetCommit", "OffsetsMixin"]

logger = logging.getLogger(__name__)

State = GroupState
TopicPartition = tuple[str, int]


class OffsetCommit(NamedTuple):
    """One partition's offset in a commit (a tuple: made for every partition of every
    commit)."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""


class CommitRequest(NamedTuple):
    """One OffsetCommit request as the coordinator takes it."""

    group_id: str
    generation: int
    member_id: str
    instance_id: str | None
    offsets: dict[TopicPartition, OffsetCommit]
    retention_ms: int = -1


class _Staged(NamedTuple):
    """A checked commit whose records wait to be appended with the others of its burst."""

    index: int  # of the commit in its burst
    group: Group
    values: dict[TopicPartition, OffsetValue]
    records: list[tuple[bytes, bytes]]


class OffsetsMixin:
    # -- offsets ------------------------------------------------------------------------------

    async def commit_offsets(
        self, requests: Sequence[CommitRequest]
    ) -> list[dict[TopicPartition, ErrorCode]]:
        """Commit requests: one, or a burst (a client's pipelined commits, read together);
        each is checked in order as if it came alone, then the records of all that pass
        go to each offsets partition in one batch, one append and one wait for the ISR
        instead of one per request (the batch keeps their order, so the last commit of a
        partition is the one replayed). Results per request, in its partitions' order."""
        refused: list[dict[TopicPartition, ErrorCode]] = [{} for _ in requests]
        outcomes = [ErrorCode.NONE] * len(requests)  # the request's, or its append's
        staged: dict[int, list[_Staged]] = {}
        now = self._clock_ms()
        for index, request in enumerate(requests):
            group, error = self._committing_group(request)
            if error:
                outcomes[index] = error
                continue
            values, records = self._offset_records(group, request, now, refused[index])
            if records:
                staged.setdefault(group.partition, []).append(
                    _Staged(index, group, values, records)
                )
        for partition, commits in staged.items():
            error = await self._append(partition, [r for c in commits for r in c.records])
            for commit in commits:
                group = commit.group
                if not error and self.groups.get(group.group_id) is group:
                    group.offsets.update(commit.values)
                outcomes[commit.index] = error
        return [
            {key: found.get(key, error) for key in request.offsets}
            if found
            else dict.fromkeys(request.offsets, error)
            for request, found, error in zip(requests, refused, outcomes, strict=True)
        ]

    def _committing_group(self, request: CommitRequest) -> tuple[Group | None, ErrorCode]:
        """The group a commit goes to, or the error that refuses it: a member of the
        current generation commits; generation -1 commits into an Empty or new group."""
        error = self.check(request.group_id, allow_empty=True)
        if error:
            return None, error
        group = self.groups.get(request.group_id)
        if group is None:
            if request.generation >= 0:
                return None, ErrorCode.ILLEGAL_GENERATION
            # A group that only stores offsets here (manual assignment, admin tools).
            group = self.groups[request.group_id] = Group(
                request.group_id, self.partition_for(request.group_id), self._clock_ms()
            )
        if group.is_in(State.DEAD):
            return None, ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.fenced(request.member_id, request.instance_id):
            return None, ErrorCode.FENCED_INSTANCE_ID
        if not (request.generation < 0 and group.is_in(State.EMPTY)):
            if group.is_in(State.COMPLETING_REBALANCE):
                return None, ErrorCode.REBALANCE_IN_PROGRESS
            member = group.members.get(request.member_id)
            if member is None:
                return None, ErrorCode.UNKNOWN_MEMBER_ID
            if request.generation != group.generation:
                return None, ErrorCode.ILLEGAL_GENERATION
            self._schedule_session(group, member)
        return group, ErrorCode.NONE

    def _offset_records(
        self,
        group: Group,
        request: CommitRequest,
        now: int,
        refused: dict[TopicPartition, ErrorCode],
    ) -> tuple[dict[TopicPartition, OffsetValue], list[tuple[bytes, bytes]]]:
        """The values and ``__consumer_offsets`` records of a commit's partitions; those
        whose metadata is too long go into ``refused`` instead."""
        retention_ms = request.retention_ms
        expire_timestamp = now + retention_ms if retention_ms >= 0 else -1
        max_metadata_bytes = self.config.max_metadata_bytes
        group_id = group.group_id
        values: dict[TopicPartition, OffsetValue] = {}
        records: list[tuple[bytes, bytes]] = []
        for key, (offset, leader_epoch, metadata) in request.offsets.items():
            if metadata and len(metadata.encode()) > max_metadata_bytes:
                refused[key] = ErrorCode.OFFSET_METADATA_TOO_LARGE
                continue
            value = values[key] = OffsetValue(
                offset, leader_epoch, metadata or "", now, expire_timestamp
            )
            records.append((encode_offset_key(group_id, *key), encode_offset_value(value)))
        return values, records

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartition] | None
    ) -> tuple[ErrorCode, dict[TopicPartition, OffsetValue | None]]:
        """Committed offsets of ``partitions`` (None: all the group has)."""
        error = self.check(group_id, allow_empty=True)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        stored = group.offsets if group is not None else {}
        if partitions is None:
            return ErrorCode.NONE, dict(stored)
        return ErrorCode.NONE, {key: stored.get(key) for key in partitions}

    async def delete_offsets(
        self, group_id: str, partitions: list[TopicPartition]
    ) -> tuple[ErrorCode, dict[TopicPartition, ErrorCode]]:
        """OffsetDelete: refused for topics the group's members subscribe to."""
        error = self.check(group_id)
        if error:
            return error, {}
        group = self.groups.get(group_id)
        if group is None or group.is_in(State.DEAD):
            return ErrorCode.GROUP_ID_NOT_FOUND, {}
        subscribed: set[str] = set()
        if not group.is_in(State.EMPTY):
            topics = group.subscribed_topics()
            if topics is None:
                return ErrorCode.NON_EMPTY_GROUP, {}
            subscribed = topics
        results = {
            key: ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC if key[0] in subscribed else ErrorCode.NONE
            for key in partitions
        }
        removable = [k for k, code in results.items() if not code and k in group.offsets]
        if removable:
            error = await self._remove_offsets(group, removable)
            if error:
                return error, {}
        return ErrorCode.NONE, results

    async def _remove_offsets(self, group: Group, partitions: list[TopicPartition]) -> ErrorCode:
        records = [(encode_offset_key(group.group_id, t, p), None) for t, p in partitions]
        error = await self._append(group.partition, records)
        if not error:
            for key in partitions:
                group.offsets.pop(key, None)
        return error

    def expire_offsets(self) -> None:
        """Drop offsets past ``offsets.retention.minutes``: an Empty group's counted from
        when it became Empty (KIP-211), a Stable consumer group's only for topics it no
        longer subscribes to, counted from their commits (KIP-496); an explicit expiry
        time as given. An Empty group with nothing left is deleted."""
        now = self._clock_ms()
        retention = self.config.retention_ms
        for group in list(self.groups.values()):
            if group.partition not in self._loaded:
                continue
            if group.is_in(State.EMPTY):
                # Groups stored by Kafka before 2.1 have no time they became Empty.
                known = group.protocol_type is not None and group.state_timestamp >= 0
                base = group.state_timestamp if known else None
                candidates = group.offsets
            elif group.is_in(State.STABLE) and (topics := group.subscribed_topics()) is not None:
                base = None
                candidates = {k: v for k, v in group.offsets.items() if k[0] not in topics}
            else:
                continue
            expired = [
                key
                for key, value in candidates.items()
                if (
                    now >= value.expire_timestamp
                    if value.expire_timestamp >= 0
                    else now - (base if base is not None else value.commit_timestamp) >= retention
                )
            ]
            if expired or (group.is_in(State.EMPTY) and not group.offsets):
                self._in_background(self._drop_offsets(group, expired, "expired"))

    def partitions_deleted(self, partitions: set[TopicPartition]) -> None:
        """The partitions of deleted topics leave every group loaded here: their offsets
        get tombstones, as Kafka's coordinator does on the UpdateMetadata that deletes
        them (``onPartitionsDeleted``). A topic made again under the same name is then
        read from the consumers' reset policy, not from offsets into a log that is
        gone; an Empty group left with no offsets is deleted."""
        for group in list(self.groups.values()):
            if group.partition not in self._loaded:
                continue
            gone = [key for key in group.offsets if key in partitions]
            if gone:
                self._in_background(self._drop_offsets(group, gone, "of deleted topics removed"))

    async def _drop_offsets(self, group: Group, keys: list[TopicPartition], why: str) -> None:
        if keys and await self._remove_offsets(group, keys):
            return
        logger.info("group %s: %d offsets %s", group.group_id, len(keys), why)
        if group.is_in(State.EMPTY) and not group.offsets:
            await self._delete_group(group)
