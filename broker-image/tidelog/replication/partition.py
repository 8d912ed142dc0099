"""One partition hosted by this broker: its log, its role, its high watermark.

As leader the partition accepts appends and serves reads below the high watermark. With
the ISR holding only this broker, the high watermark is the log end offset; with
followers (replication, issue 5) it becomes the minimum log end offset over the ISR.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tidelog.storage.log import Log

__all__ = ["Partition"]


@dataclass
class Partition:
    topic: str
    index: int
    log: Log
    leader: int
    leader_epoch: int
    replicas: list[int]
    isr: list[int]
    broker_id: int
    high_watermark: int = 0
    follower_end_offsets: dict[int, int] = field(default_factory=dict)

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    def maybe_advance_high_watermark(self) -> bool:
        """HW = min log end offset over the ISR; True when it moved."""
        ends = [
            self.log.log_end_offset if b == self.broker_id else self.follower_end_offsets.get(b, 0)
            for b in self.isr
        ]
        new = min(ends) if ends else self.log.log_end_offset
        if new > self.high_watermark:
            self.high_watermark = new
            return True
        return False
