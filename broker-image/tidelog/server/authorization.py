"""Authorization: for each API, what Kafka's KafkaApis checks before it serves a request,
and the error code of a refusal. One table beside the dispatch table (DESIGN §8). Seed
000 lists it among a produce request's checks: whether the sending user may write to the
topic (发送数据的用户是否有主题写入权限).

The dispatcher makes one call, :func:`handle_authorized`, when the broker has an
authorizer (``authorizer.class.name``); without one nothing here runs. Each entry of
:data:`AUTHORIZATION` is one of:

* :class:`OnCluster`: the whole request needs an operation on the cluster resource;
  refused, the answer is the API's error response with CLUSTER_AUTHORIZATION_FAILED
  (built by :mod:`.authorization_refusals`).
* a per-resource rule (:mod:`.authorization_filters`, :mod:`.authorization_groups`):
  the request's topics, groups or config resources are split into those the principal
  may act on, which go to the handler, and the others, answered with the API's
  authorization error beside the handler's answers. A topic is refused before its
  existence is looked at, so a principal learns nothing of topics it may not see.

APIs in :data:`OPEN` are served to everyone (a client must be able to negotiate
versions and authenticate before anything else). Handlers that answer per resource
from their own state (Metadata's every-topic listing) call :func:`describable_topics`.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass

from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.acls import CLUSTER_NAME, AclOperation, ResourceType
from tidelog.server import authorization_filters as filters
from tidelog.server import authorization_groups as groups
from tidelog.server.authorization_refusals import refusal

__all__ = [
    "AUTHORIZATION",
    "OPEN",
    "Access",
    "OnCluster",
    "authorized_operations",
    "burst_allowed",
    "describable_cluster",
    "describable_topics",
    "handle_authorized",
    "kafka_host",
]

OP = AclOperation

# The operations Kafka supports on each resource type (AclEntry.supportedOperations),
# reported as bit fields (bit = the operation's code) where a client asks for them.
SUPPORTED_OPERATIONS = {
    ResourceType.TOPIC: (
        OP.READ,
        OP.WRITE,
        OP.CREATE,
        OP.DESCRIBE,
        OP.DELETE,
        OP.ALTER,
        OP.DESCRIBE_CONFIGS,
        OP.ALTER_CONFIGS,
    ),
    ResourceType.GROUP: (OP.READ, OP.DESCRIBE, OP.DELETE),
    ResourceType.CLUSTER: (
        OP.CREATE,
        OP.CLUSTER_ACTION,
        OP.DESCRIBE_CONFIGS,
        OP.ALTER_CONFIGS,
        OP.IDEMPOTENT_WRITE,
        OP.ALTER,
        OP.DESCRIBE,
    ),
}


def kafka_host(peer_host: str) -> str:
    """A client's address as Kafka's authorizer matches ACL hosts against it (Java's
    ``InetAddress.getHostAddress``): IPv4 as it is, IPv6 in eight groups without leading
    zeros and without ``::`` (``::1`` is ``0:0:0:0:0:0:0:1``)."""
    if ":" not in peer_host:
        return peer_host
    address, _, scope = peer_host.partition("%")
    try:
        groups = ipaddress.IPv6Address(address).exploded.split(":")
    except ValueError:
        return peer_host
    text = ":".join(f"{int(group, 16):x}" for group in groups)
    return f"{text}%{scope}" if scope else text


class Access:
    """One request's principal and host, asked about resources."""

    def __init__(self, broker, context):
        self.authorizer = broker.authorizer
        self.principal = str(context.principal)
        self.host = kafka_host(context.peer_host)

    def allows(self, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        return self.authorizer.authorize(self.principal, self.host, operation, resource_type, name)

    def on_cluster(self, operation: AclOperation) -> bool:
        return self.allows(operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def operations(self, resource_type: ResourceType, name: str) -> int:
        """Kafka's bit field of the supported operations allowed on the resource."""
        return sum(
            1 << op
            for op in SUPPORTED_OPERATIONS[resource_type]
            if self.allows(op, resource_type, name)
        )

    def on_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        return self.authorizer.authorize_by_resource_type(
            self.principal, self.host, operation, resource_type
        )


@dataclass(frozen=True)
class OnCluster:
    """The request needs ``operation`` on the cluster."""

    operation: AclOperation

    async def __call__(self, access: Access, handler, broker, header, request, context):
        if access.on_cluster(self.operation):
            return await handler(broker, header, request, context)
        return refusal(header, request, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)


OPEN = frozenset(
    {
        ApiKey.API_VERSIONS,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
        # the delegation-token APIs check the token's owner themselves, as Kafka's do
        ApiKey.CREATE_DELEGATION_TOKEN,
        ApiKey.RENEW_DELEGATION_TOKEN,
        ApiKey.EXPIRE_DELEGATION_TOKEN,
        ApiKey.DESCRIBE_DELEGATION_TOKEN,
    }
)

AUTHORIZATION = {
    ApiKey.METADATA: filters.metadata,
    ApiKey.PRODUCE: filters.produce,
    ApiKey.FETCH: filters.fetch,
    ApiKey.LIST_OFFSETS: filters.list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: filters.offsets_for_leader_epoch,
    ApiKey.CREATE_TOPICS: filters.create_topics,
    ApiKey.DELETE_TOPICS: filters.delete_topics,
    ApiKey.CREATE_PARTITIONS: filters.create_partitions,
    ApiKey.DELETE_RECORDS: filters.delete_records,
    ApiKey.INIT_PRODUCER_ID: filters.init_producer_id,
    ApiKey.DESCRIBE_CONFIGS: filters.describe_configs,
    ApiKey.ALTER_CONFIGS: filters.alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: filters.alter_configs,
    ApiKey.FIND_COORDINATOR: groups.find_coordinator,
    ApiKey.JOIN_GROUP: groups.on_group(OP.READ),
    ApiKey.SYNC_GROUP: groups.on_group(OP.READ),
    ApiKey.HEARTBEAT: groups.on_group(OP.READ),
    ApiKey.LEAVE_GROUP: groups.on_group(OP.READ),
    ApiKey.OFFSET_COMMIT: groups.offset_commit,
    ApiKey.OFFSET_FETCH: groups.offset_fetch,
    ApiKey.OFFSET_DELETE: groups.offset_delete,
    ApiKey.LIST_GROUPS: groups.list_groups,
    ApiKey.DESCRIBE_GROUPS: groups.describe_groups,
    ApiKey.DELETE_GROUPS: groups.delete_groups,
    ApiKey.DESCRIBE_LOG_DIRS: OnCluster(OP.DESCRIBE),
    ApiKey.ALTER_REPLICA_LOG_DIRS: OnCluster(OP.ALTER),
    ApiKey.DESCRIBE_CLUSTER: filters.describe_cluster,
    ApiKey.ELECT_LEADERS: OnCluster(OP.ALTER),
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: OnCluster(OP.ALTER),
    ApiKey.LIST_PARTITION_REASSIGNMENTS: OnCluster(OP.DESCRIBE),
    ApiKey.LEADER_AND_ISR: OnCluster(OP.CLUSTER_ACTION),
    ApiKey.UPDATE_METADATA: OnCluster(OP.CLUSTER_ACTION),
    ApiKey.STOP_REPLICA: OnCluster(OP.CLUSTER_ACTION),
    ApiKey.CONTROLLED_SHUTDOWN: OnCluster(OP.CLUSTER_ACTION),
    ApiKey.DESCRIBE_ACLS: OnCluster(OP.DESCRIBE),
    ApiKey.CREATE_ACLS: OnCluster(OP.ALTER),
    ApiKey.DELETE_ACLS: OnCluster(OP.ALTER),
    ApiKey.DESCRIBE_CLIENT_QUOTAS: OnCluster(OP.DESCRIBE_CONFIGS),
    ApiKey.ALTER_CLIENT_QUOTAS: OnCluster(OP.ALTER_CONFIGS),
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: OnCluster(OP.DESCRIBE),
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: OnCluster(OP.ALTER),
}


async def handle_authorized(handler, broker, header, request, context):
    """The response to a request, served by ``handler`` as far as the principal of
    ``context`` may have it (the broker has an authorizer). An API neither open nor in
    the table is refused like a cluster-wide one: nothing is served unchecked."""
    api_key = header.request_api_key
    if api_key in OPEN:
        return await handler(broker, header, request, context)
    rule = AUTHORIZATION.get(api_key, OnCluster(OP.CLUSTER_ACTION))
    return await rule(Access(broker, context), handler, broker, header, request, context)


def describable_cluster(broker, context) -> bool:
    """Whether the request's principal may Describe the cluster (yes without an
    authorizer)."""
    return broker.authorizer is None or Access(broker, context).on_cluster(OP.DESCRIBE)


def describable_topics(broker, context, names):
    """Those of ``names`` the request's principal may Describe (all of them without an
    authorizer): what a listing of every topic shows."""
    if broker.authorizer is None:
        return list(names)
    access = Access(broker, context)
    return [name for name in names if access.allows(OP.DESCRIBE, ResourceType.TOPIC, name)]


def burst_allowed(broker, context, requests) -> bool:
    """Whether a burst of pipelined OffsetCommits is wholly allowed (then it is served
    as one; else each request goes through :func:`handle_authorized`)."""
    return groups.offset_commits_allowed(Access(broker, context), requests)


def authorized_operations(broker, context, resource_type: ResourceType, name: str) -> int:
    """Kafka's bit field of the operations the request's principal may do on the
    resource: every supported one without an authorizer."""
    if broker.authorizer is not None:
        return Access(broker, context).operations(resource_type, name)
    return sum(1 << op for op in SUPPORTED_OPERATIONS[resource_type])
