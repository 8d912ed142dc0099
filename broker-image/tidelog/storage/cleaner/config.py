"""Broker-level settings of the log cleaner, named as Kafka's ``log.cleaner.*`` keys."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CleanerConfig"]


@dataclass(frozen=True)
class CleanerConfig:
    """Kafka's cleaner settings, with dots turned to underscores (as ``LogConfig``).

    ``log.cleaner.dedupe.buffer.size`` is the memory of all offset maps together: each
    of the ``log.cleaner.threads`` threads gets an equal share.
    """

    log_cleaner_enable: bool = True
    log_cleaner_threads: int = 1
    log_cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024
    log_cleaner_io_buffer_load_factor: float = 0.9
    log_cleaner_io_buffer_size: int = 512 * 1024
    log_cleaner_backoff_ms: int = 15_000

    def __post_init__(self) -> None:
        if self.log_cleaner_threads < 1:
            raise ValueError("log.cleaner.threads must be at least 1")
        if not 0.0 < self.log_cleaner_io_buffer_load_factor <= 1.0:
            raise ValueError("log.cleaner.io.buffer.load.factor must be in (0, 1]")
        if self.dedupe_buffer_per_thread < 2 * 24:
            raise ValueError(
                "log.cleaner.dedupe.buffer.size must leave each cleaner thread room for "
                "an offset map"
            )
        if self.log_cleaner_io_buffer_size < 1024:
            raise ValueError("log.cleaner.io.buffer.size must be at least 1 KiB")
        if self.log_cleaner_backoff_ms < 0:
            raise ValueError("log.cleaner.backoff.ms must not be negative")

    @property
    def dedupe_buffer_per_thread(self) -> int:
        """Bytes of one cleaner thread's offset map."""
        return self.log_cleaner_dedupe_buffer_size // self.log_cleaner_threads

    @classmethod
    def from_properties(cls, properties: Mapping[str, str]) -> CleanerConfig:
        """Build from Kafka-named keys (``log.cleaner.threads``...); other keys are ignored,
        so a whole ``server.properties`` can be passed."""
        fields = {field.name: field for field in dataclasses.fields(cls)}
        values = {}
        for key, raw in properties.items():
            name = key.replace(".", "_")
            if name not in fields:
                continue
            text = str(raw).strip()
            kind = fields[name].type
            if kind == "bool":
                if text.lower() not in ("true", "false"):
                    raise ValueError(f"{key}: {raw!r} is not true or false")
                values[name] = text.lower() == "true"
            elif kind == "float":
                values[name] = float(text)
            else:
                values[name] = int(text)
        return cls(**values)
