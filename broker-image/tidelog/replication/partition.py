"""One partition hosted by this broker: its log, its role, its ISR and high watermark.

As leader (seed 003 四.5, seed 004 副本同步) the partition tracks each follower: the log
end offset its last fetch reported and the last time it was caught up. A follower is
caught up when its fetch asked for the leader's log end offset, or for the log end
offset the leader had at that follower's previous fetch (so a follower that keeps pace
with a busy leader is never "behind" by the batch that arrived between two fetches).
The ISR loses a follower not caught up for ``replica.lag.time.max.ms`` and regains it
once its log end offset reaches the high watermark and the start of the current leader
epoch. The high watermark is the minimum log end offset over the ISR and never moves
back; a follower's is min(leader's high watermark, own log end offset).

ISR changes are proposed here and applied by :meth:`apply_isr` once ZooKeeper accepted
them (the replica manager writes them); until then the old ISR stands, except that the
high watermark already waits for a follower that is being added (Kafka's "maximal ISR",
KIP-497): ZooKeeper may list it in the ISR before this broker hears back, and a
controller that elects it from there must find every record acknowledged meanwhile.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tidelog.protocol.errors import ErrorCode
from tidelog.storage.log import Log

__all__ = ["FollowerState", "Partition"]

UNKNOWN_OFFSET = -1
NO_CURRENT_LEADER_EPOCH = -1
NO_LEADER = -1


@dataclass
class FollowerState:
    """What the leader knows of one follower, from its fetches."""

    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_leader_end_offset: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0


def _reset_follower(
    known: FollowerState | None, in_sync: bool, leader_end: int, now_ms: int
) -> FollowerState:
    """A follower's state as a leader's epoch starts: caught up now if in the ISR, else
    never; a follower ``known`` from the previous epoch keeps its log end offset and
    counts its last fetch as made now, at the leader's log end (so a next fetch from
    there or beyond finds it caught up, as Kafka's ``resetReplicaState``)."""
    caught_up = now_ms if in_sync else 0
    if known is None:
        return FollowerState(last_caught_up_ms=caught_up)
    return FollowerState(known.log_end_offset, caught_up, leader_end, caught_up)


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
    zk_version: int = 0  # of the partition state znode, for the leader's ISR writes
    controller_epoch: int = 0  # of the controller that last set the state
    high_watermark: int = 0
    followers: dict[int, FollowerState] = field(default_factory=dict)
    proposed_isr: list[int] | None = None  # being written to ZooKeeper; None: no change
    leader_epoch_start_offset: int = 0  # the log end offset when this broker became leader

    @property
    def is_leader(self) -> bool:
        return self.leader == self.broker_id

    def become(
        self,
        *,
        leader: int,
        leader_epoch: int,
        replicas: list[int],
        isr: list[int],
        zk_version: int,
        controller_epoch: int,
        now_ms: int,
    ) -> None:
        """Take the role the controller gave. A leader counts its ISR followers as caught
        up now. A new leader learns their log end offsets from their next fetches; a
        leader re-elected in the very next epoch (a reassignment's start and end bump it)
        keeps the log end offsets it knows, as Kafka's ``Replica.resetReplicaState``
        does for a leader that is not new, so that the high watermark, and every acks=all
        write, need not wait for each follower to fetch again in the new epoch. Only the
        next epoch: after a gap, another broker may have led in between, and a follower
        may since hold less than it reported here."""
        known = self.followers if self.is_leader and leader_epoch == self.leader_epoch + 1 else {}
        self.leader, self.leader_epoch = leader, leader_epoch
        self.replicas, self.isr, self.zk_version = list(replicas), list(isr), zk_version
        self.controller_epoch = controller_epoch
        self.proposed_isr = None
        self.followers = {}
        if self.is_leader:
            # A follower rejoins only once it holds everything of earlier epochs.
            self.leader_epoch_start_offset = self.log.log_end_offset
            for replica in replicas:
                if replica != self.broker_id:
                    self.followers[replica] = _reset_follower(
                        known.get(replica), replica in isr, self.log.log_end_offset, now_ms
                    )
        self.high_watermark = min(self.high_watermark, self.log.log_end_offset)

    def resign(self) -> None:
        """StopReplica without delete: neither leader nor follower any more."""
        self.leader = NO_LEADER
        self.followers = {}
        self.proposed_isr = None

    def check_leader_epoch(self, current_leader_epoch: int) -> ErrorCode:
        """Fence a client or follower whose metadata names another leader epoch than
        this broker's (-1: it names none)."""
        if current_leader_epoch == NO_CURRENT_LEADER_EPOCH:
            return ErrorCode.NONE
        if current_leader_epoch < self.leader_epoch:
            return ErrorCode.FENCED_LEADER_EPOCH
        if current_leader_epoch > self.leader_epoch:
            return ErrorCode.UNKNOWN_LEADER_EPOCH
        return ErrorCode.NONE

    # -- leader ------------------------------------------------------------------------------

    def record_follower_fetch(self, replica: int, fetch_offset: int, now_ms: int) -> None:
        follower = self.followers.get(replica)
        if follower is None:
            return  # not a replica of this partition (any more)
        leader_end = self.log.log_end_offset
        if fetch_offset >= leader_end:
            follower.last_caught_up_ms = now_ms
        elif fetch_offset >= follower.last_fetch_leader_end_offset >= 0:
            follower.last_caught_up_ms = max(follower.last_caught_up_ms, follower.last_fetch_ms)
        follower.log_end_offset = fetch_offset
        follower.last_fetch_leader_end_offset = leader_end
        follower.last_fetch_ms = now_ms

    def record_idle_follower_fetch(
        self, replica: int, fetch_offset: int, current_leader_epoch: int, now_ms: int
    ) -> bool:
        """The common fetch of a follower in a session: an ISR follower whose last fetch
        already reported the log end offset asks from there again, at this leader's
        epoch. Records it as caught up now and returns True; nothing else can change (its
        log end offset, so the high watermark and the ISR, stay). False, recording
        nothing, for any other fetch: :meth:`record_follower_fetch` and the checks around
        it take those."""
        follower = self.followers.get(replica)  # none unless this broker leads
        if (
            follower is None
            or follower.log_end_offset != fetch_offset
            or fetch_offset != self.log.log_end_offset
            or current_leader_epoch not in (NO_CURRENT_LEADER_EPOCH, self.leader_epoch)
            or replica not in self.isr
        ):
            return False
        follower.last_caught_up_ms = follower.last_fetch_ms = now_ms
        follower.last_fetch_leader_end_offset = fetch_offset
        return True

    def expanded_isr(self, replica: int) -> list[int] | None:
        """The ISR with ``replica`` back in, if it qualifies now; else None."""
        follower = self.followers.get(replica)
        if follower is None or replica in self.isr or self.isr_change_in_flight:
            return None
        if follower.log_end_offset >= max(self.high_watermark, self.leader_epoch_start_offset):
            return [*self.isr, replica]
        return None

    def shrunk_isr(self, now_ms: int, max_lag_ms: int) -> list[int] | None:
        """The ISR without the followers not caught up for ``max_lag_ms``; else None."""
        if not self.is_leader or self.isr_change_in_flight:
            return None
        lagging = {
            replica
            for replica in self.isr
            if replica != self.broker_id and now_ms - self._last_caught_up_ms(replica) > max_lag_ms
        }
        return [r for r in self.isr if r not in lagging] if lagging else None

    def _last_caught_up_ms(self, replica: int) -> int:
        follower = self.followers.get(replica)
        return follower.last_caught_up_ms if follower else 0

    @property
    def isr_change_in_flight(self) -> bool:
        return self.proposed_isr is not None

    def propose_isr(self, isr: list[int]) -> None:
        """An ISR change goes to ZooKeeper: no other is proposed until it is applied or
        dropped, and a follower it adds counts for the high watermark from now on."""
        self.proposed_isr = list(isr)

    def apply_isr(self, isr: list[int], zk_version: int) -> None:
        self.isr, self.zk_version = list(isr), zk_version
        self.proposed_isr = None

    def drop_isr_proposal(self) -> None:
        """ZooKeeper refused the proposed ISR (the state changed meanwhile)."""
        self.proposed_isr = None

    @property
    def maximal_isr(self) -> list[int]:
        """The ISR with any follower that a change in flight adds: the replicas the
        high watermark waits for. A follower that a change removes stays until the
        change is applied, so it is the ISR's superset either way."""
        if self.proposed_isr is None:  # the common case, on every append and fetch
            return self.isr
        return [*self.isr, *(r for r in self.proposed_isr if r not in self.isr)]

    def maybe_advance_high_watermark(self) -> bool:
        """HW = min log end offset over the maximal ISR; True when it moved."""
        new = self.log.log_end_offset
        for replica in self.maximal_isr:
            if replica != self.broker_id:
                follower = self.followers.get(replica)
                if follower is None or follower.log_end_offset < 0:
                    return False  # not heard from yet: the HW waits for it
                new = min(new, follower.log_end_offset)
        if new > self.high_watermark:
            self.high_watermark = new
            return True
        return False

    # -- follower ----------------------------------------------------------------------------

    def follow_high_watermark(self, leader_high_watermark: int) -> bool:
        """A follower's HW = min(leader's HW, own log end offset); True when it moved."""
        new = min(leader_high_watermark, self.log.log_end_offset)
        if new != self.high_watermark:
            self.high_watermark = new
            return True
        return False
