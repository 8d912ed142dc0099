"""JoinGroup, SyncGroup, Heartbeat and LeaveGroup: a group's members and its rebalances,
answered by the group coordinator (``tidelog.coordinator``)."""

from __future__ import annotations

from tidelog.protocol import ApiKey, response_class

__all__ = ["handle_heartbeat", "handle_join_group", "handle_leave_group", "handle_sync_group"]

JoinGroupResponse = response_class(ApiKey.JOIN_GROUP)
SyncGroupResponse = response_class(ApiKey.SYNC_GROUP)
HeartbeatResponse = response_class(ApiKey.HEARTBEAT)
LeaveGroupResponse = response_class(ApiKey.LEAVE_GROUP)


def client_host(context) -> str:
    """As Kafka shows a member's host: the peer address with a leading slash."""
    return f"/{context.peer_host}"


async def handle_join_group(broker, header, request, context):
    version = header.request_api_version
    result = await broker.group_coordinator.join(
        request.group_id,
        request.member_id,
        request.group_instance_id,
        client_id=header.client_id or "",
        client_host=client_host(context),
        session_timeout_ms=request.session_timeout_ms,
        # v0 has no rebalance timeout: the session timeout served for both.
        rebalance_timeout_ms=(
            request.rebalance_timeout_ms if version >= 1 else request.session_timeout_ms
        ),
        protocol_type=request.protocol_type,
        protocols=[(p.name, bytes(p.metadata)) for p in request.protocols],
        # From v4 a new member first gets its id and must come back with it (KIP-394).
        require_known_member_id=version >= 4,
    )
    return JoinGroupResponse(
        throttle_time_ms=0,
        error_code=result.error,
        generation_id=result.generation,
        protocol_type=result.protocol_type,
        # Nullable from v7; before, Kafka answers "no protocol" with an empty name.
        protocol_name=result.protocol_name if version >= 7 else result.protocol_name or "",
        leader=result.leader,
        skip_assignment=result.skip_assignment and version >= 9,
        member_id=result.member_id,
        members=[
            JoinGroupResponse.JoinGroupResponseMember(
                member_id=member_id, group_instance_id=instance_id, metadata=metadata
            )
            for member_id, instance_id, metadata in result.members
        ],
    )


async def handle_sync_group(broker, header, request, context):
    result = await broker.group_coordinator.sync(
        request.group_id,
        request.generation_id,
        request.member_id,
        request.group_instance_id,
        request.protocol_type,
        request.protocol_name,
        {a.member_id: bytes(a.assignment) for a in request.assignments},
    )
    return SyncGroupResponse(
        throttle_time_ms=0,
        error_code=result.error,
        protocol_type=result.protocol_type,
        protocol_name=result.protocol_name,
        assignment=result.assignment,
    )


async def handle_heartbeat(broker, header, request, context):
    error = broker.group_coordinator.heartbeat(
        request.group_id, request.generation_id, request.member_id, request.group_instance_id
    )
    return HeartbeatResponse(throttle_time_ms=0, error_code=error)


async def handle_leave_group(broker, header, request, context):
    if header.request_api_version < 3:
        leaving = [(request.member_id, None)]
    else:
        leaving = [(m.member_id, m.group_instance_id) for m in request.members]
    error, errors = broker.group_coordinator.leave(request.group_id, leaving)
    if header.request_api_version < 3 and not error:
        error = errors[0]  # one member, and no per-member field to carry its error
    return LeaveGroupResponse(
        throttle_time_ms=0,
        error_code=error,
        members=[
            LeaveGroupResponse.MemberResponse(
                member_id=member_id, group_instance_id=instance_id, error_code=code
            )
            for (member_id, instance_id), code in zip(leaving, errors, strict=True)
        ],
    )
