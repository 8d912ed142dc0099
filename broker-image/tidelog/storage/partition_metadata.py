"""``partition.metadata``: the id of the topic a partition directory belongs to.

Kafka's text format, two lines::

    version: 0
    topic_id: <the topic id, URL-safe base64 without padding>

A topic deleted while one of its replicas' brokers was down, then created again under
the same name, would otherwise meet that broker's old directory under the same
``<topic>-<partition>`` name: the id tells the old data from the new topic's.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from tidelog.storage.checkpoints import write_atomically
from tidelog.storage.errors import StorageError

__all__ = ["PARTITION_METADATA", "read_topic_id", "write_topic_id"]

PARTITION_METADATA = "partition.metadata"
VERSION = 0


def write_topic_id(directory: Path, topic_id: uuid.UUID, *, sync: bool = True) -> None:
    """Record ``topic_id``. Without ``sync`` the file is renamed into place unflushed (as
    Kafka, which flushes it later off the path that creates a log): a crash before the
    caller's flush leaves no file or an empty one, and such a log is adopted by the
    next LeaderAndIsr as one written before topic ids existed."""
    encoded = base64.urlsafe_b64encode(topic_id.bytes).decode("ascii").rstrip("=")
    write_atomically(
        directory / PARTITION_METADATA, f"version: {VERSION}\ntopic_id: {encoded}\n", sync=sync
    )


def read_topic_id(directory: Path) -> uuid.UUID | None:
    """The recorded topic id, or None when the directory has no file yet."""
    path = directory / PARTITION_METADATA
    try:
        lines = path.read_text().splitlines()
    except FileNotFoundError:
        return None
    fields = dict(line.split(": ", 1) for line in lines if ": " in line)
    try:
        if int(fields["version"]) != VERSION:
            raise ValueError(f"version {fields['version']}")
        encoded = fields["topic_id"]
        return uuid.UUID(bytes=base64.urlsafe_b64decode(encoded + "=" * (-len(encoded) % 4)))
    except (KeyError, ValueError) as error:
        raise StorageError(f"{path} is malformed: {error}") from None
