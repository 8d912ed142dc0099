"""The controller's events that move a leader that is still alive (seed 000 首选首领,
seed 003 四.4): controlled shutdown and preferred leader election, automatic or asked
for with ElectLeaders. Mixed into :class:`~tidelog.controller.controller.Controller`,
whose state and senders they use; like every controller decision they run as events in
its queue.

Controlled shutdown: each partition the broker leads (with another replica) goes to the
first live replica of the assignment in the ISR other than a broker shutting down, and
the broker leaves every ISR; leader epoch +1, written conditionally. The broker gets
StopReplica (without delete) for all of them, so that it neither serves nor fetches on
its way out and no leader takes it back into the ISR; once it has them, the remaining
replicas get LeaderAndIsr and every broker UpdateMetadata. The answer lists the partitions it still
leads, which its broker asks about again.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Sequence

from tidelog.controller.election import (
    controlled_shutdown_leadership,
    next_leadership,
    preferred_leadership,
)
from tidelog.controller.rebalance import partitions_to_rebalance
from tidelog.controller.requests import ReplicaToStop
from tidelog.controller.zk_data import PartitionState
from tidelog.protocol.errors import ErrorCode

__all__ = ["LeaderMoves", "Leadership", "Proposal"]

logger = logging.getLogger(__name__)

TopicPartition = tuple[str, int]
Leadership = tuple[int, list[int]]
# Given the partition's current state: the (leader, ISR) to move to, or None to leave it.
Proposal = Callable[[PartitionState], Leadership | None]
UNKNOWN_BROKER_EPOCH = -1


class LeaderMoves:
    """Uses the controller's ``epoch``, ``is_active``, ``brokers``, ``states``,
    ``channel``, ``zk``, ``enqueue``, ``_zk``, ``_replicas``, ``_leaderships``,
    ``_move_leader``, ``_send_leader_and_isr``, ``_send_update_metadata``, and
    ``_shutting_down`` (broker id → the registration epoch it asked for controlled
    shutdown at)."""

    _shutting_down: dict[int, int]

    # -- controlled shutdown ---------------------------------------------------------------

    async def controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[TopicPartition]]:
        """ControlledShutdown, as an event in the queue: (error, partitions the broker
        still leads)."""
        result: list = [ErrorCode.NOT_CONTROLLER, []]

        async def event() -> None:
            result[:] = await self._controlled_shutdown(broker_id, broker_epoch)

        event.__name__ = f"controlled_shutdown({broker_id})"
        await self.enqueue(event)
        return result[0], result[1]

    def shutting_down_brokers(self) -> set[int]:
        """Brokers shutting down under their current registration (one that registered
        anew since it asked has restarted)."""
        return {
            b
            for b, epoch in self._shutting_down.items()
            if b in self.brokers and self.brokers[b].epoch == epoch
        }

    async def _controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[TopicPartition]]:
        if not self.is_active:
            return ErrorCode.NOT_CONTROLLER, []
        registration = self.brokers.get(broker_id)
        if registration is None:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        if broker_epoch != UNKNOWN_BROKER_EPOCH and broker_epoch < registration.epoch:
            return ErrorCode.STALE_BROKER_EPOCH, []
        logger.info("broker %d asked for controlled shutdown", broker_id)
        self._shutting_down[broker_id] = registration.epoch
        leaving = self.shutting_down_brokers()
        live = set(self.brokers) - leaving
        # A single replica has nowhere to go: it goes down with its broker.
        hosted = [
            key
            for key in self.states
            if broker_id in self._replicas(key) and len(self._replicas(key)) > 1
        ]
        changed = await self._move_leaders(
            hosted,
            lambda key: lambda state: controlled_shutdown_leadership(
                self._replicas(key), state.leader, state.isr, live, leaving
            ),
        )
        released = [key for key in hosted if self.states[key].leader != broker_id]
        if released:
            await self.channel.stop_replica(
                broker_id, self.epoch, [ReplicaToStop(*key, False) for key in released]
            )
            # Stopped before the leaders learn the new ISR, so that no fetch of it makes
            # them take it back in.
            await self.channel.flush(self.channel.request_timeout_s, [broker_id])
        await self._send_leader_and_isr(changed, to=live)
        await self._send_update_metadata(self._leaderships(changed))
        remaining = sorted(key for key in hosted if self.states[key].leader == broker_id)
        if remaining:
            logger.warning(
                "controlled shutdown of broker %d: no other in-sync replica to lead %s",
                broker_id,
                remaining[:10],
            )
        return ErrorCode.NONE, remaining

    # -- preferred leader election ---------------------------------------------------------

    def start_leader_rebalance(self, interval_s: float, percentage: int) -> asyncio.Task:
        """auto.leader.rebalance.enable: every ``interval_s`` the active controller checks
        the leader imbalance (an event in its queue). The caller cancels the task."""

        async def every_interval() -> None:
            while True:
                await asyncio.sleep(interval_s)
                if self.is_active:
                    # A failed check is logged by the event queue; the next one comes.
                    with contextlib.suppress(Exception):
                        await self.enqueue(lambda: self._rebalance_leaders(percentage))

        return asyncio.create_task(every_interval(), name="leader-rebalance")

    async def _rebalance_leaders(self, percentage: int) -> None:
        if not self.is_active:
            return
        moving = self.ongoing_reassignments()  # their leader follows the move
        states = {key: state for key, state in self.states.items() if key not in moving}
        replicas = {key: self._replicas(key) for key in states}
        live = set(self.brokers) - self.shutting_down_brokers()
        keys = partitions_to_rebalance(replicas, states, live, percentage)
        if keys:
            logger.info("leader imbalance: moving %s back to their preferred replica", keys)
            await self._elect_preferred(keys)

    async def elect_preferred_leaders(
        self, keys: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, ErrorCode]:
        """ElectLeaders (preferred), as an event in the queue: each partition's result;
        ``None`` asks for every partition."""
        results: dict[TopicPartition, ErrorCode] = {}

        async def event() -> None:
            results.update(await self._elect_preferred_asked(keys))

        await self.enqueue(event)
        return results

    async def _elect_preferred_asked(
        self, keys: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, ErrorCode]:
        asked = sorted(self.states) if keys is None else list(keys)
        if not self.is_active:
            return dict.fromkeys(asked, ErrorCode.NOT_CONTROLLER)
        live = set(self.brokers) - self.shutting_down_brokers()
        results, eligible = {}, []
        for key in asked:
            state = self.states.get(key)
            if state is None:
                results[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            elif state.leader == self._replicas(key)[0]:
                results[key] = ErrorCode.ELECTION_NOT_NEEDED
            elif preferred_leadership(self._replicas(key), state.isr, live) is None:
                results[key] = ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
            else:
                eligible.append(key)
        changed = set(await self._elect_preferred(eligible))
        for key in eligible:
            moved = key in changed
            results[key] = ErrorCode.NONE if moved else ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
        return results

    async def elect_unclean_leaders(
        self, keys: Sequence[TopicPartition] | None
    ) -> dict[TopicPartition, ErrorCode]:
        """ElectLeaders (unclean), as an event in the queue: a partition without a live
        leader gets the first live replica of its assignment, in sync or not (records
        only the lost leader had are gone: the operator asked for availability). A
        partition with a live leader answers ELECTION_NOT_NEEDED; ``None`` asks for every
        partition."""
        results: dict[TopicPartition, ErrorCode] = {}

        async def event() -> None:
            asked = sorted(self.states) if keys is None else list(keys)
            if not self.is_active:
                results.update(dict.fromkeys(asked, ErrorCode.NOT_CONTROLLER))
                return
            live = set(self.brokers) - self.shutting_down_brokers()
            changed = []
            for key in asked:
                state = self.states.get(key)
                if state is None:
                    results[key] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif state.leader in live:
                    results[key] = ErrorCode.ELECTION_NOT_NEEDED
                elif not live.intersection(self._replicas(key)):
                    results[key] = ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
                else:
                    replicas = self._replicas(key)
                    moved = await self._move_leader(
                        key,
                        lambda s, replicas=replicas: next_leadership(
                            replicas, s.leader, s.isr, live, unclean_allowed=True
                        ),
                    )
                    results[key] = (
                        ErrorCode.NONE if moved else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
                    )
                    if moved:
                        logger.warning("%s-%d: unclean leader election asked for", *key)
                        changed.append(key)
            self._record_states(changed)
            await self._send_leader_and_isr(changed)
            await self._send_update_metadata(self._leaderships(changed))

        await self.enqueue(event)
        return results

    async def _elect_preferred(self, keys: Iterable[TopicPartition]) -> list[TopicPartition]:
        live = set(self.brokers) - self.shutting_down_brokers()

        def preferred(key: TopicPartition) -> Proposal:
            def propose(state: PartitionState) -> Leadership | None:
                leader = preferred_leadership(self._replicas(key), state.isr, live)
                return None if leader is None else (leader, state.isr)

            return propose

        changed = await self._move_leaders(keys, preferred)
        self._record_states(changed)
        await self._send_leader_and_isr(changed)
        await self._send_update_metadata(self._leaderships(changed))
        return changed

    # -- writing a new leadership --------------------------------------------------------------

    async def _move_leaders(
        self, keys: Iterable[TopicPartition], proposal_for: Callable[[TopicPartition], Proposal]
    ) -> list[TopicPartition]:
        """The partitions whose leadership changed as proposed."""
        return [key for key in keys if await self._move_leader(key, proposal_for(key))]
