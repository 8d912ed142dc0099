"""Checkpoint files in Kafka's text formats, written atomically.

Offset checkpoints (``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint``,
``replication-offset-checkpoint``, ``cleaner-offset-checkpoint``)::

    0                       version
    2                       number of entries
    my-topic 0 1234         topic, partition, offset
    my-topic 1 99

The same framing (version line, count line, one entry a line, fields separated by
whitespace) carries each partition's ``leader-epoch-checkpoint`` (see ``leader_epoch``).
An empty file reads as no entries, as in Kafka, which creates the file empty before its
first write; anything else must be complete.

``meta.properties`` is a Java properties file identifying the broker a directory
belongs to. Every write goes to ``<file>.tmp``, is fsynced, renamed over the file and
the directory is fsynced, so a crash leaves either the old or the new content.
"""

from __future__ import annotations

import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = [
    "CLEANER_OFFSET_CHECKPOINT",
    "LOG_START_OFFSET_CHECKPOINT",
    "META_PROPERTIES",
    "RECOVERY_POINT_CHECKPOINT",
    "REPLICATION_OFFSET_CHECKPOINT",
    "CheckpointError",
    "fsync_directory",
    "fsync_file_and_directory",
    "read_checkpoint_entries",
    "read_offset_checkpoint",
    "read_properties",
    "write_atomically",
    "write_checkpoint_entries",
    "write_offset_checkpoint",
    "write_properties",
]

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
LOG_START_OFFSET_CHECKPOINT = "log-start-offset-checkpoint"
REPLICATION_OFFSET_CHECKPOINT = "replication-offset-checkpoint"
CLEANER_OFFSET_CHECKPOINT = "cleaner-offset-checkpoint"
META_PROPERTIES = "meta.properties"

TopicPartition = tuple[str, int]


class CheckpointError(ValueError):
    """A checkpoint file that cannot be parsed; names the file and the line."""


def write_atomically(path: Path, text: str, *, sync: bool = True) -> None:
    """``text`` into ``<path>.tmp``, renamed over ``path``; with ``sync`` the file and
    then its directory are fsynced (without, the caller makes it durable later, with
    :func:`fsync_file_and_directory`)."""
    path = Path(path)
    temporary = path.with_name(path.name + ".tmp")
    with open(temporary, "w", encoding="utf-8") as handle:
        handle.write(text)
        if sync:
            handle.flush()
            os.fsync(handle.fileno())
    os.replace(temporary, path)
    if sync:
        fsync_directory(path.parent)


def fsync_file_and_directory(path: Path) -> None:
    """Make a file written with ``sync=False`` durable, with its name."""
    handle = os.open(path, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)
    fsync_directory(Path(path).parent)


def fsync_directory(directory: Path) -> None:
    """Make renames and new files in ``directory`` durable."""
    handle = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(handle)
    finally:
        os.close(handle)


CHECKPOINT_VERSION = 0


def write_checkpoint_entries(path: Path, entries: Sequence[str]) -> None:
    """Version line, count line, then ``entries`` (each already formatted), atomically."""
    lines = [str(CHECKPOINT_VERSION), str(len(entries)), *entries]
    write_atomically(path, "\n".join(lines) + "\n")


def read_checkpoint_entries(path: Path, width: int) -> list[list[str]]:
    """The whitespace-separated fields of each entry line, every line holding ``width``
    fields. An absent or empty file has no entries; a malformed one raises."""
    path = Path(path)
    if not path.exists():
        return []
    lines = path.read_text(encoding="utf-8").splitlines()
    if not lines:
        return []
    if len(lines) < 2 or lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CheckpointError(f"{path}: unrecognised checkpoint version line {lines[:1]}")
    try:
        expected = int(lines[1])
    except ValueError:
        raise CheckpointError(f"{path}: line 2 is not an entry count: {lines[1]!r}") from None
    entries = []
    for number, line in enumerate(lines[2:], start=3):
        fields = line.split()
        if len(fields) != width:
            raise CheckpointError(f"{path}: line {number} does not have {width} fields: {line!r}")
        entries.append(fields)
    if len(entries) != expected:
        raise CheckpointError(f"{path}: expected {expected} entries, found {len(entries)}")
    return entries


def write_offset_checkpoint(path: Path, offsets: Mapping[TopicPartition, int]) -> None:
    write_checkpoint_entries(
        path,
        [f"{topic} {partition} {offset}" for (topic, partition), offset in sorted(offsets.items())],
    )


def read_offset_checkpoint(path: Path) -> dict[TopicPartition, int]:
    """The checkpoint's entries; an absent file is empty, a malformed one raises."""
    offsets = {}
    for number, (topic, partition, offset) in enumerate(read_checkpoint_entries(path, 3), 3):
        if not partition.isdigit():
            raise CheckpointError(f"{path}: line {number} has a bad partition {partition!r}")
        try:
            offsets[(topic, int(partition))] = int(offset)
        except ValueError:
            raise CheckpointError(f"{path}: line {number} has a bad offset {offset!r}") from None
    return offsets


def write_properties(path: Path, properties: Mapping[str, str]) -> None:
    header = f"#\n#{time.strftime('%a %b %d %H:%M:%S %Z %Y')}\n"
    body = "".join(f"{key}={value}\n" for key, value in sorted(properties.items()))
    write_atomically(path, header + body)


def read_properties(path: Path) -> dict[str, str]:
    properties = {}
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith(("#", "!")):
            continue
        key, _, value = stripped.partition("=")
        properties[key.strip()] = value.strip()
    return properties
