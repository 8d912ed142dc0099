"""The pipeline's place in its consumer group: where a run starts, and committing what
each micro-batch has processed (seed 003: 位移提交, 消费者组消费进度监控).

Spark's Kafka source keeps its offsets in the query's checkpoint, not in a group. So that
every Kafka tool sees the job's lag, :class:`OffsetCommitter` commits each finished
batch's end offsets to the job's group, with the commit metadata :func:`commit_mark` (the
query's id, which the checkpoint keeps across restarts). The group has no members (the
source's own consumers use generated groups), so the commit is the admin's: OffsetCommit
with generation -1, accepted while the group is empty.

:func:`plan_start` reads that mark back. Offsets the job itself committed mean its
checkpoint is current, and the run resumes from the checkpoint. Offsets that someone else
wrote (a reset by ``tidelog-consumer-groups`` or ``kafka-consumer-groups.sh``, whose
commits carry no such mark) mean a reset was applied: the run starts from the group's
offsets with a new checkpoint. Without a checkpoint, the run starts from the group's
offsets, or from the earliest where it has none.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pyspark.sql.streaming import StreamingQueryListener

from tidelog.admin import AdminClient, AdminError
from tidelog.admin.group_offsets import OffsetAndMetadata
from tidelog.admin.groups import TopicPartition
from tidelog.protocol.errors import ProtocolError

log = logging.getLogger(__name__)

EARLIEST = -2  # Spark's startingOffsets value for "the partition's earliest offset"


def commit_mark(query_id: str) -> str:
    """The metadata of the job's own commits."""
    return f"tidelog-spark query {query_id}"


def checkpoint_query_id(checkpoint: Path) -> str | None:
    """The query id a checkpoint directory belongs to, None when it holds no query."""
    try:
        return json.loads((checkpoint / "metadata").read_text())["id"]
    except FileNotFoundError:
        return None


@dataclass(frozen=True)
class Start:
    """Where a run starts: from its checkpoint (``resume``), or from
    ``starting_offsets`` (Spark's JSON form) with a new checkpoint; ``reset`` says that
    an existing checkpoint is set aside because the group's offsets were reset."""

    resume: bool
    starting_offsets: str
    reset: bool = False


def plan_start(
    topic: str,
    partitions: list[int],
    committed: Mapping[TopicPartition, OffsetAndMetadata],
    checkpoint_id: str | None,
) -> Start:
    """The start of a run reading ``topic`` (its ``partitions``), given the group's
    ``committed`` offsets and the id of the query in the checkpoint (None: none)."""
    ours = [tp for tp in committed if tp.topic == topic]
    foreign = [tp for tp in ours if committed[tp].metadata != commit_mark(checkpoint_id or "")]
    if checkpoint_id is not None and not foreign:
        return Start(resume=True, starting_offsets="earliest")
    offsets = {
        str(p): committed[TopicPartition(topic, p)].offset
        if TopicPartition(topic, p) in committed
        else EARLIEST
        for p in partitions
    }
    starting = json.dumps({topic: offsets}) if ours else "earliest"
    return Start(resume=False, starting_offsets=starting, reset=checkpoint_id is not None)


def batch_end_offsets(end_offset_json: str) -> dict[tuple[str, int], int]:
    """A Kafka source's ``endOffset`` of a progress report, per (topic, partition)."""
    return {
        (topic, int(partition)): offset
        for topic, partitions in json.loads(end_offset_json).items()
        for partition, offset in partitions.items()
    }


class OffsetCommitter(StreamingQueryListener):
    """Commits the end offsets of every finished micro-batch of the query named
    ``query_name`` to ``group`` (only when they moved), marked with the query's id. A
    failed commit is logged and retried with the next batch's offsets: the checkpoint,
    not the group, is what the job resumes from."""

    def __init__(self, bootstrap: str, group: str, query_name: str):
        self._admin = AdminClient(bootstrap)
        self._group = group
        self._query_name = query_name
        self._committed: dict[tuple[str, int], int] = {}

    def onQueryStarted(self, event) -> None:
        pass

    def onQueryProgress(self, event) -> None:
        progress = event.progress
        if progress.name != self._query_name:
            return
        ends: dict[tuple[str, int], int] = {}
        for source in progress.sources:
            if source.endOffset:
                ends.update(batch_end_offsets(source.endOffset))
        if not ends or ends == self._committed:
            return
        mark = commit_mark(str(progress.id))
        try:
            self._admin.alter_group_offsets(
                self._group, {tp: OffsetAndMetadata(o, metadata=mark) for tp, o in ends.items()}
            )
        except (AdminError, OSError, ProtocolError) as error:
            log.warning("committing offsets to group %s failed: %s", self._group, error)
            return
        self._committed = ends

    def onQueryTerminated(self, event) -> None:
        pass
