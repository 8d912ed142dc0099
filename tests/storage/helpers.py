"""Helpers for storage tests: a controllable clock and batch factories."""

from __future__ import annotations

from tidelog.records import CompressionType, build_batch


class FakeClock:
    """Seconds since the epoch, moved by hand; passed wherever a clock is injected."""

    def __init__(self, start: float = 1_700_000_000.0):
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance_ms(self, milliseconds: int) -> None:
        self.now += milliseconds / 1000


def batch(
    count: int = 1,
    *,
    start: int = 0,
    timestamp: int = 1_000,
    size: int = 10,
    key_prefix: str = "key",
    compression=CompressionType.NONE,
) -> bytes:
    """``count`` records with keys ``<prefix><start..>`` and ``size``-byte values."""
    return build_batch(
        [
            (f"{key_prefix}{start + i}", (f"value-{start + i}-" * size)[:size], (), timestamp + i)
            for i in range(count)
        ],
        compression=compression,
    )
