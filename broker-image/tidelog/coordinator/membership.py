"""Membership and rebalances of a consumer group (seed 003, 三.9 and 四.3): JoinGroup,
SyncGroup, Heartbeat and LeaveGroup, and the timers that end sessions and rebalances.

A rebalance: the group goes PreparingRebalance and every member must send JoinGroup
again (existing members learn it from their heartbeats' REBALANCE_IN_PROGRESS). Once
all have (or the longest rebalance timeout passed, and the missing are out), the next
generation starts: each JoinGroup is answered, the leader's with every member's
metadata. The leader's SyncGroup carries the assignment it computed; stored with the
group, it is sent to every member in their SyncGroup answers, and the group is Stable.

JoinGroup and SyncGroup answers are futures kept on the member until the rebalance
gets there. Part of :class:`~tidelog.coordinator.group_coordinator.GroupCoordinator`.
"""

from __future__ import annotations

import asyncio
import logging
import uuid

from tidelog.coordinator.group import Group, GroupState, JoinResult, Member, SyncResult
from tidelog.protocol.errors import ErrorCode

__all__ = ["MembershipMixin"]

logger = logging.getLogger(__name__)

State = GroupState


class MembershipMixin:
    # -- JoinGroup ------------------------------------------------------------------------------

    async def join(
        self,
        group_id: str,
        member_id: str,
        instance_id: str | None,
        *,
        client_id: str,
        client_host: str,
        session_timeout_ms: int,
        rebalance_timeout_ms: int,
        protocol_type: str,
        protocols: list[tuple[str, bytes]],
        require_known_member_id: bool,
    ) -> JoinResult:
        error = self.check(group_id)
        if error:
            return JoinResult(error, member_id)
        config = self.config
        if not config.min_session_timeout_ms <= session_timeout_ms <= config.max_session_timeout_ms:
            return JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id)
        group = self.groups.get(group_id)
        if group is None:
            if member_id:
                return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
            group = self.groups[group_id] = Group(
                group_id, self.partition_for(group_id), self._clock_ms()
            )
        if group.is_in(State.DEAD):
            # Removed meanwhile (deleted, or moved away): the client finds its coordinator.
            return JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id)
        if not group.supports(protocol_type, protocols):
            return JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id)
        member = Member(
            member_id=member_id,
            group_instance_id=instance_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            protocols=protocols,
        )
        if not member_id:
            return await self._join_unknown_member(group, member, require_known_member_id)
        return await self._join_known_member(group, member)

    async def _join_unknown_member(
        self, group: Group, joining: Member, require_known_member_id: bool
    ) -> JoinResult:
        joining.member_id = f"{joining.client_id}-{uuid.uuid4()}"
        instance_id = joining.group_instance_id
        if instance_id is not None and instance_id in group.static_members:
            return await self._rejoin_static_member(group, joining)
        if len(group.members) + len(group.pending_members) >= self.config.max_group_size:
            return JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, "")
        if require_known_member_id and instance_id is None:
            # The member id round trip (KIP-394): a client that never comes back with it
            # holds no place in the group, only a reservation that ends with its session.
            group.pending_members.add(joining.member_id)
            self._call_later(
                (group.group_id, joining.member_id),
                joining.session_timeout_ms,
                self._pending_member_expired,
                group,
                joining.member_id,
            )
            return JoinResult(ErrorCode.MEMBER_ID_REQUIRED, joining.member_id)
        return await self._add_member_and_rebalance(group, joining)

    async def _join_known_member(self, group: Group, joining: Member) -> JoinResult:
        member_id = joining.member_id
        if member_id in group.pending_members:
            return await self._add_member_and_rebalance(group, joining)
        if group.fenced(member_id, joining.group_instance_id):
            return JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id)
        member = group.members.get(member_id)
        if member is None or group.is_in(State.EMPTY):
            return JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id)
        if group.is_in(State.PREPARING_REBALANCE):
            return await self._update_member_and_rebalance(group, member, joining)
        if group.is_in(State.COMPLETING_REBALANCE):
            if member.same_protocols(joining.protocols):
                # The JoinGroup answer got lost: send it again.
                return group.join_result(member)
            return await self._update_member_and_rebalance(group, member, joining)
        # Stable: only the leader, or a member whose subscription changed, rebalances.
        if member_id == group.leader or not member.same_protocols(joining.protocols):
            return await self._update_member_and_rebalance(group, member, joining)
        self._schedule_session(group, member)
        return group.join_result(member)

    async def _rejoin_static_member(self, group: Group, joining: Member) -> JoinResult:
        """A static member restarted: it takes its old place under a new member id. In a
        Stable group with unchanged protocols, without a rebalance (KIP-345)."""
        instance_id = joining.group_instance_id
        old_id = group.static_members[instance_id]
        old = group.members[old_id]
        self._answer(old, ErrorCode.FENCED_INSTANCE_ID)
        self._cancel((group.group_id, old_id))
        member = group.replace_static_member(instance_id, joining.member_id)
        unchanged = member.metadata(group.protocol or "") == joining.metadata(group.protocol or "")
        if group.is_in(State.STABLE) and unchanged:
            generation = group.generation
            error = await self._store_group(group)
            if error:
                if group.static_members.get(instance_id) == joining.member_id:
                    group.replace_static_member(instance_id, old_id)
                return JoinResult(error, "")
            if group.generation != generation or joining.member_id not in group.members:
                return JoinResult(ErrorCode.REBALANCE_IN_PROGRESS, joining.member_id)
            self._schedule_session(group, member)
            logger.info(
                "group %s: static member %s is back as %s, generation %d unchanged",
                group.group_id,
                instance_id,
                member.member_id,
                group.generation,
            )
            result = group.join_result(member)
            # The leader's assignment stands: it need not compute one (KIP-814).
            result.skip_assignment = member.member_id == group.leader
            return result
        return await self._update_member_and_rebalance(group, member, joining)

    async def _add_member_and_rebalance(self, group: Group, member: Member) -> JoinResult:
        self._cancel((group.group_id, member.member_id))  # the pending reservation
        # Kept here: completing the rebalance (maybe right away) clears it on the member.
        answer = member.awaiting_join = asyncio.get_running_loop().create_future()
        if group.is_in(State.PREPARING_REBALANCE):
            group.new_member_added = True
        group.add(member)
        self._schedule_session(group, member)
        self._maybe_prepare_rebalance(group, f"{member.member_id} joined")
        return await answer

    async def _update_member_and_rebalance(
        self, group: Group, member: Member, joining: Member
    ) -> JoinResult:
        member.protocols = joining.protocols
        member.rebalance_timeout_ms = joining.rebalance_timeout_ms
        member.session_timeout_ms = joining.session_timeout_ms
        member.client_id, member.client_host = joining.client_id, joining.client_host
        if member.awaiting_join is not None and not member.awaiting_join.done():
            member.awaiting_join.set_result(JoinResult(ErrorCode.REBALANCE_IN_PROGRESS))
        answer = member.awaiting_join = asyncio.get_running_loop().create_future()
        self._maybe_prepare_rebalance(group, f"{member.member_id} rejoined")
        return await answer

    # -- rebalancing --------------------------------------------------------------------------

    def _maybe_prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(State.PREPARING_REBALANCE):
            self._try_complete_join(group)
        elif group.is_in(State.STABLE, State.COMPLETING_REBALANCE, State.EMPTY):
            self._prepare_rebalance(group, reason)

    def _prepare_rebalance(self, group: Group, reason: str) -> None:
        if group.is_in(State.COMPLETING_REBALANCE):
            for member in group.members.values():
                member.assignment = b""
                self._answer_sync(member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        initial = group.is_in(State.EMPTY)
        group.transition_to(State.PREPARING_REBALANCE, self._clock_ms())
        logger.info(
            "group %s: rebalancing generation %d (%s)", group.group_id, group.generation, reason
        )
        if initial:
            # Wait a little for the others of a group that is starting (Kafka's
            # group.initial.rebalance.delay.ms), longer while members keep coming.
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.max_rebalance_timeout_ms() - delay, 0)
            group.new_member_added = False
            group.in_initial_delay = True
            self._call_later(group.group_id, delay, self._initial_delay_over, group, remaining)
        else:
            timeout = group.max_rebalance_timeout_ms()
            self._call_later(group.group_id, timeout, self._complete_join, group)
            self._try_complete_join(group)

    def _initial_delay_over(self, group: Group, remaining_ms: int) -> None:
        if group.new_member_added and remaining_ms > 0:
            delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
            group.new_member_added = False
            self._call_later(
                group.group_id, delay, self._initial_delay_over, group, remaining_ms - delay
            )
        else:
            self._complete_join(group)

    def _try_complete_join(self, group: Group) -> None:
        if (
            group.is_in(State.PREPARING_REBALANCE)
            and not group.in_initial_delay
            and group.all_members_joined()
        ):
            self._complete_join(group)

    def _complete_join(self, group: Group) -> None:
        """Everyone who will join has: dynamic members that did not are out, the next
        generation starts, the leader gets everyone's metadata to compute an assignment."""
        if not group.is_in(State.PREPARING_REBALANCE):
            return
        self._cancel(group.group_id)
        group.in_initial_delay = False
        for member in group.dynamic_not_yet_rejoined():
            self._remove_member(group, member)
        group.elect_joined_leader()
        group.init_next_generation(self._clock_ms())
        if group.is_in(State.EMPTY):
            logger.info("group %s: empty at generation %d", group.group_id, group.generation)
            self._in_background(self._store_group(group))
            return
        logger.info(
            "group %s: generation %d with %d members, protocol %s, leader %s",
            group.group_id,
            group.generation,
            len(group.members),
            group.protocol,
            group.leader,
        )
        for member in group.members.values():
            future, member.awaiting_join = member.awaiting_join, None
            if future is not None and not future.done():
                future.set_result(group.join_result(member))
            self._schedule_session(group, member)
        generation = group.generation
        self._call_later(
            group.group_id,
            group.max_rebalance_timeout_ms(),
            self._sync_timed_out,
            group,
            generation,
        )

    def _sync_timed_out(self, group: Group, generation: int) -> None:
        """Members that sent no SyncGroup within the rebalance timeout are out."""
        if group.generation != generation or not group.is_in(State.COMPLETING_REBALANCE):
            return
        late = [m for m in group.members.values() if m.awaiting_sync is None]
        for member in late:
            self._remove_member(group, member)
        if late:
            self._prepare_rebalance(group, f"{len(late)} members sent no SyncGroup in time")

    # -- SyncGroup -------------------------------------------------------------------------------

    async def sync(
        self,
        group_id: str,
        generation: int,
        member_id: str,
        instance_id: str | None,
        protocol_type: str | None,
        protocol_name: str | None,
        assignments: dict[str, bytes],
    ) -> SyncResult:
        error = self.check(group_id)
        if error:
            return SyncResult(error)
        group = self.groups.get(group_id)
        if group is None:
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if group.is_in(State.DEAD):
            return SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if group.fenced(member_id, instance_id):
            return SyncResult(ErrorCode.FENCED_INSTANCE_ID)
        member = group.members.get(member_id)
        if member is None or group.is_in(State.EMPTY):
            return SyncResult(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation != group.generation:
            return SyncResult(ErrorCode.ILLEGAL_GENERATION)
        if (protocol_type and protocol_type != group.protocol_type) or (
            protocol_name and protocol_name != group.protocol
        ):
            return SyncResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL)
        if group.is_in(State.PREPARING_REBALANCE):
            return SyncResult(ErrorCode.REBALANCE_IN_PROGRESS)
        self._schedule_session(group, member)
        if group.is_in(State.STABLE):
            return self._sync_result(group, member)
        answer = member.awaiting_sync = asyncio.get_running_loop().create_future()
        if member_id == group.leader:
            self._in_background(self._install_assignment(group, generation, assignments))
        return await answer

    async def _install_assignment(
        self, group: Group, generation: int, assignments: dict[str, bytes]
    ) -> None:
        """The leader's assignment: stored with the group, then sent to every member."""
        assignment = {m: assignments.get(m, b"") for m in group.members}
        error = await self._store_group(group, assignment)
        if group.generation != generation or not group.is_in(State.COMPLETING_REBALANCE):
            return
        if error:
            for member in group.members.values():
                self._answer_sync(member, SyncResult(error))
            self._prepare_rebalance(group, f"storing the assignment failed: {error.name}")
            return
        self._cancel(group.group_id)
        for member_id, member in group.members.items():
            member.assignment = assignment.get(member_id, b"")
            self._answer_sync(member, self._sync_result(group, member))
        group.transition_to(State.STABLE, self._clock_ms())
        logger.info("group %s: generation %d stable", group.group_id, group.generation)

    @staticmethod
    def _sync_result(group: Group, member: Member) -> SyncResult:
        return SyncResult(ErrorCode.NONE, group.protocol_type, group.protocol, member.assignment)

    @staticmethod
    def _answer_sync(member: Member, result: SyncResult) -> None:
        future, member.awaiting_sync = member.awaiting_sync, None
        if future is not None and not future.done():
            future.set_result(result)

    # -- Heartbeat, LeaveGroup -------------------------------------------------------------------

    def heartbeat(
        self, group_id: str, generation: int, member_id: str, instance_id: str | None
    ) -> ErrorCode:
        error = self.check(group_id)
        if error:
            return error
        group = self.groups.get(group_id)
        if group is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if group.is_in(State.DEAD):
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if group.fenced(member_id, instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        member = group.members.get(member_id)
        if member is None or group.is_in(State.EMPTY):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation != group.generation:
            return ErrorCode.ILLEGAL_GENERATION
        self._schedule_session(group, member)
        if group.is_in(State.PREPARING_REBALANCE):
            # How every member learns that a rebalance started (seed 003, 四.3).
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[ErrorCode, list[ErrorCode]]:
        """LeaveGroup for (member id, group instance id) pairs: the request's error and
        each member's."""
        error = self.check(group_id)
        if error:
            return error, []
        group = self.groups.get(group_id)
        if group is None or group.is_in(State.DEAD):
            return ErrorCode.NONE, [ErrorCode.UNKNOWN_MEMBER_ID for _ in leaving]
        errors = []
        for member_id, instance_id in leaving:
            if instance_id is not None:
                known = group.static_members.get(instance_id)
                if known is None:
                    errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                    continue
                if member_id and member_id != known:
                    errors.append(ErrorCode.FENCED_INSTANCE_ID)
                    continue
                member_id = known
            if member_id in group.pending_members:
                group.pending_members.discard(member_id)
                self._cancel((group_id, member_id))
                self._try_complete_join(group)
            elif member_id in group.members:
                self._remove_member(group, group.members[member_id])
                self._member_left(group, f"{member_id} left")
            else:
                errors.append(ErrorCode.UNKNOWN_MEMBER_ID)
                continue
            errors.append(ErrorCode.NONE)
        return ErrorCode.NONE, errors

    def _member_left(self, group: Group, reason: str) -> None:
        if group.is_in(State.STABLE, State.COMPLETING_REBALANCE):
            self._prepare_rebalance(group, reason)
        elif group.is_in(State.PREPARING_REBALANCE):
            self._try_complete_join(group)

    def _remove_member(self, group: Group, member: Member) -> None:
        self._cancel((group.group_id, member.member_id))
        self._answer(member, ErrorCode.UNKNOWN_MEMBER_ID)
        group.remove(member.member_id)

    def _session_expired(self, group: Group, member_id: str) -> None:
        member = group.members.get(member_id)
        if member is None or self.groups.get(group.group_id) is not group:
            return
        if member.awaiting_join is not None or member.awaiting_sync is not None:
            # A member whose JoinGroup or SyncGroup is held here is alive.
            self._schedule_session(group, member)
            return
        logger.info(
            "group %s: member %s sent no heartbeat within %d ms; removing it",
            group.group_id,
            member_id,
            member.session_timeout_ms,
        )
        self._remove_member(group, member)
        self._member_left(group, f"session of {member_id} expired")

    def _pending_member_expired(self, group: Group, member_id: str) -> None:
        if member_id in group.pending_members:
            group.pending_members.discard(member_id)
            self._try_complete_join(group)

    def _schedule_session(self, group: Group, member: Member) -> None:
        """The member's session lasts ``session.timeout.ms`` from now. News from a member
        (a heartbeat, a commit) only moves its deadline: the timer already armed is kept
        when it fires no later than that, and looks again then (:meth:`_session_due`),
        so that a request arms no timer of its own."""
        loop = asyncio.get_running_loop()
        member.session_deadline = loop.time() + member.session_timeout_ms / 1000
        key = (group.group_id, member.member_id)
        armed = self._timers.get(key)
        ours = armed is not None and armed is member.session_timer
        if ours and armed.when() <= member.session_deadline:
            return
        self._arm_session(group, member, member.session_timeout_ms)

    def _arm_session(self, group: Group, member: Member, delay_ms: float) -> None:
        key = (group.group_id, member.member_id)
        self._call_later(key, delay_ms, self._session_due, group, member.member_id)
        member.session_timer = self._timers[key]

    def _session_due(self, group: Group, member_id: str) -> None:
        """A session timer fired: the session ends, unless news moved its deadline."""
        member = group.members.get(member_id)
        if member is not None:
            left = member.session_deadline - asyncio.get_running_loop().time()
            if left > 0:
                self._arm_session(group, member, left * 1000)
                return
        self._session_expired(group, member_id)
