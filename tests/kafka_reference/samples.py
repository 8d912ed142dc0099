"""Deterministic sample data for the compatibility tests, and readers for index files.

:func:`mixed_batches` covers what segment files must carry byte for byte: every codec,
null and empty keys and values, headers (with null values), non-ASCII text, a newline in
a value, records whose timestamps go backwards inside a batch and batches whose maximum
timestamp is below an earlier one (so the time index must skip them), and a few large,
compressible values so that some batches alone exceed the index interval.
"""

from __future__ import annotations

import random
import struct
from pathlib import Path

from . import BatchSpec, RecordSpec

__all__ = [
    "BASE_TIMESTAMP",
    "CODECS",
    "mixed_batches",
    "read_offset_index",
    "read_time_index",
]

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
BASE_TIMESTAMP = 1_700_000_000_000

_WORDS = ("alpha", "beta", "gamma", "delta", "épsilon", "日本語", "tide", "log", "kafka")


def _value(rng: random.Random, batch: int, i: int) -> bytes | None:
    roll = rng.random()
    if roll < 0.1:
        return None  # a tombstone
    if roll < 0.15:
        return b""
    if roll < 0.2:
        return ("big " + "x" * rng.randrange(400, 900) + f" {batch}/{i}").encode()
    if roll < 0.23:
        return f"two\nlines {batch}/{i}".encode()
    words = " ".join(rng.choice(_WORDS) for _ in range(rng.randrange(1, 6)))
    return f"v{batch}.{i} {words}".encode()


def _key(rng: random.Random, batch: int, i: int) -> bytes | None:
    roll = rng.random()
    if roll < 0.15:
        return None
    if roll < 0.2:
        return b""
    return f"key-{rng.randrange(50)}".encode()


def _headers(rng: random.Random) -> tuple[tuple[str, bytes | None], ...]:
    count = rng.choice((0, 0, 0, 1, 2))
    return tuple(
        (f"h{j}", None if rng.random() < 0.2 else f"hv{rng.randrange(100)}".encode())
        for j in range(count)
    )


def mixed_batches(count: int = 60, *, seed: int = 2024) -> list[BatchSpec]:
    """``count`` batches of 1-6 records, cycling through :data:`CODECS`."""
    rng = random.Random(seed)
    batches = []
    for b in range(count):
        batch_ts = BASE_TIMESTAMP + b * 1000
        if b % 11 == 7:
            batch_ts -= 5000  # max timestamp below earlier batches': no time index entry
        records = []
        for i in range(rng.randrange(1, 7)):
            ts = batch_ts + i * 10
            if i == 2:
                ts -= 25  # timestamps need not grow inside a batch
            records.append(
                RecordSpec(
                    key=_key(rng, b, i),
                    value=_value(rng, b, i),
                    timestamp=ts,
                    headers=_headers(rng),
                )
            )
        batches.append(BatchSpec(records=records, compression=CODECS[b % len(CODECS)]))
    return batches


def read_offset_index(path: Path | str, base_offset: int | None = None) -> list[tuple[int, int]]:
    """(absolute offset, position) entries of a ``.index`` file; stops at a zero entry."""
    path = Path(path)
    base = int(path.stem) if base_offset is None else base_offset
    data = path.read_bytes()
    entries = []
    for i, (relative, position) in enumerate(struct.iter_unpack(">ii", data[: len(data) // 8 * 8])):
        if i > 0 and relative == 0:
            break  # preallocated, unused space
        entries.append((base + relative, position))
    return entries


def read_time_index(path: Path | str, base_offset: int | None = None) -> list[tuple[int, int]]:
    """(timestamp, absolute offset) entries of a ``.timeindex`` file; stops at a zero entry."""
    path = Path(path)
    base = int(path.stem) if base_offset is None else base_offset
    data = path.read_bytes()
    entries = []
    for i, (timestamp, relative) in enumerate(
        struct.iter_unpack(">qi", data[: len(data) // 12 * 12])
    ):
        if i > 0 and timestamp == 0 and relative == 0:
            break
        entries.append((timestamp, base + relative))
    return entries
