"""ListGroups, DescribeGroups and DeleteGroups, for the groups this broker coordinates
(admin clients ask every broker, or each group's coordinator)."""

from __future__ import annotations

from tidelog.coordinator.group import GroupState
from tidelog.protocol import OPERATIONS_NOT_REQUESTED, ApiKey, response_class
from tidelog.protocol.errors import ErrorCode
from tidelog.security.acls import ResourceType
from tidelog.server.authorization import authorized_operations

__all__ = ["handle_delete_groups", "handle_describe_groups", "handle_list_groups"]

ListGroupsResponse = response_class(ApiKey.LIST_GROUPS)
DescribeGroupsResponse = response_class(ApiKey.DESCRIBE_GROUPS)
DeleteGroupsResponse = response_class(ApiKey.DELETE_GROUPS)

CLASSIC = "classic"


async def handle_list_groups(broker, header, request, context):
    error, groups = broker.group_coordinator.list_groups()
    states = {s.lower() for s in request.states_filter or []}
    types = {t.lower() for t in request.types_filter or []}
    return ListGroupsResponse(
        throttle_time_ms=0,
        error_code=error,
        groups=[
            ListGroupsResponse.ListedGroup(
                group_id=group.group_id,
                protocol_type=group.protocol_type or "",
                group_state=group.state.value,
                group_type=CLASSIC,
            )
            for group in groups
            if (not states or group.state.value.lower() in states)
            and (not types or CLASSIC in types)
        ],
    )


def _described(group_id: str, error: ErrorCode, group) -> object:
    if group is None:
        # Kafka describes a group it does not know as Dead, without an error.
        state, protocol_type, protocol, members = GroupState.DEAD.value, "", "", []
    else:
        state, protocol_type = group.state.value, group.protocol_type or ""
        stable = group.is_in(GroupState.STABLE)
        # Metadata and assignments only mean something once the group is Stable.
        protocol = (group.protocol or "") if stable else ""
        members = [
            DescribeGroupsResponse.DescribedGroupMember(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                member_metadata=m.metadata(group.protocol) if stable else b"",
                member_assignment=m.assignment if stable else b"",
            )
            for m in group.members.values()
        ]
    return DescribeGroupsResponse.DescribedGroup(
        error_code=error,
        group_id=group_id,
        group_state=state if not error else "",
        protocol_type=protocol_type,
        protocol_data=protocol,
        members=members,
        authorized_operations=OPERATIONS_NOT_REQUESTED,
    )


async def handle_describe_groups(broker, header, request, context):
    """Asked for (v3+), each group's authorized operations are the principal's."""
    described = []
    for group_id in request.groups:
        error, group = broker.group_coordinator.describe(group_id)
        described.append(_described(group_id, error, group))
        if request.include_authorized_operations:
            described[-1].authorized_operations = authorized_operations(
                broker, context, ResourceType.GROUP, group_id
            )
    return DescribeGroupsResponse(throttle_time_ms=0, groups=described)


async def handle_delete_groups(broker, header, request, context):
    results = await broker.group_coordinator.delete_groups(list(request.groups_names))
    return DeleteGroupsResponse(
        throttle_time_ms=0,
        results=[
            DeleteGroupsResponse.DeletableGroupResult(group_id=group_id, error_code=code)
            for group_id, code in results.items()
        ],
    )
