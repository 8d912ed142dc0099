"""From a request frame to response parts: decode, route to the API's handler, encode.

Protocol faults are answered the way Kafka answers them: an ApiVersions request of an
unknown version gets the v0 body with UNSUPPORTED_VERSION and our ranges; any other
undecodable request (unknown API, unsupported version, malformed body) closes that
connection with a log line naming the client, because no response the client could
read exists for it.

On a SASL listener a connection authenticates first: its authenticator (made at its first
request by ``broker.authenticator_factory``) admits only what its state allows (see
:mod:`tidelog.security.authenticator`), and takes the raw tokens that follow a v0
SaslHandshake; anything else closes the connection with one log line.

Client quotas (:mod:`.request_quotas`), once some entity sets one: the handler of a
request they measure is wrapped (its time, the controller mutation quota), and its
answer recorded, given its ``throttle_time_ms`` and the connection muted (KIP-219).

Requests of an API in ``BURST_HANDLERS`` that a client pipelined, read together from its
connection, are handled together (:meth:`RequestDispatcher.handle_burst`): a burst of
OffsetCommits costs one append to ``__consumer_offsets``.
"""

from __future__ import annotations

import logging

from tidelog.protocol import (
    ApiKey,
    decode_request,
    encode_response_body,
    encode_response_chunks,
    frame_response_body,
)
from tidelog.protocol.errors import RemoteProtocolError, UnsupportedVersionError
from tidelog.security.sasl_listeners import SASL_PROTOCOLS
from tidelog.server.authorization import burst_allowed, handle_authorized
from tidelog.server.handlers.acls import (
    handle_create_acls,
    handle_delete_acls,
    handle_describe_acls,
)
from tidelog.server.handlers.api_versions import (
    handle_api_versions,
    unsupported_version_response,
    version_ranges,
)
from tidelog.server.handlers.client_quotas import (
    handle_alter_client_quotas,
    handle_describe_client_quotas,
)
from tidelog.server.handlers.configs import (
    handle_alter_configs,
    handle_describe_configs,
    handle_incremental_alter_configs,
)
from tidelog.server.handlers.controlled_shutdown import handle_controlled_shutdown
from tidelog.server.handlers.create_partitions import handle_create_partitions
from tidelog.server.handlers.create_topics import handle_create_topics
from tidelog.server.handlers.delegation_tokens import (
    handle_create_delegation_token,
    handle_describe_delegation_token,
    handle_expire_delegation_token,
    handle_renew_delegation_token,
)
from tidelog.server.handlers.delete_records import handle_delete_records
from tidelog.server.handlers.delete_topics import handle_delete_topics
from tidelog.server.handlers.describe_cluster import handle_describe_cluster
from tidelog.server.handlers.elect_leaders import handle_elect_leaders
from tidelog.server.handlers.fetch import handle_fetch
from tidelog.server.handlers.find_coordinator import handle_find_coordinator
from tidelog.server.handlers.group_admin import (
    handle_delete_groups,
    handle_describe_groups,
    handle_list_groups,
)
from tidelog.server.handlers.group_membership import (
    handle_heartbeat,
    handle_join_group,
    handle_leave_group,
    handle_sync_group,
)
from tidelog.server.handlers.group_offsets import (
    handle_offset_commit,
    handle_offset_commits,
    handle_offset_delete,
    handle_offset_fetch,
)
from tidelog.server.handlers.init_producer_id import handle_init_producer_id
from tidelog.server.handlers.leader_and_isr import handle_leader_and_isr
from tidelog.server.handlers.list_offsets import handle_list_offsets
from tidelog.server.handlers.log_dirs import (
    handle_alter_replica_log_dirs,
    handle_describe_log_dirs,
)
from tidelog.server.handlers.metadata import handle_metadata
from tidelog.server.handlers.offsets_for_leader_epoch import handle_offsets_for_leader_epoch
from tidelog.server.handlers.partition_reassignments import (
    handle_alter_partition_reassignments,
    handle_list_partition_reassignments,
)
from tidelog.server.handlers.produce import handle_produce
from tidelog.server.handlers.sasl import handle_sasl_authenticate, handle_sasl_handshake
from tidelog.server.handlers.scram_credentials import (
    handle_alter_user_scram_credentials,
    handle_describe_user_scram_credentials,
)
from tidelog.server.handlers.stop_replica import handle_stop_replica
from tidelog.server.handlers.update_metadata import handle_update_metadata
from tidelog.server.network import CloseConnection, ConnectionContext

__all__ = ["BURST_HANDLERS", "HANDLERS", "RequestDispatcher"]

logger = logging.getLogger(__name__)

HANDLERS = {
    ApiKey.API_VERSIONS: handle_api_versions,
    ApiKey.SASL_HANDSHAKE: handle_sasl_handshake,
    ApiKey.SASL_AUTHENTICATE: handle_sasl_authenticate,
    ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS: handle_describe_user_scram_credentials,
    ApiKey.ALTER_USER_SCRAM_CREDENTIALS: handle_alter_user_scram_credentials,
    ApiKey.CREATE_DELEGATION_TOKEN: handle_create_delegation_token,
    ApiKey.RENEW_DELEGATION_TOKEN: handle_renew_delegation_token,
    ApiKey.EXPIRE_DELEGATION_TOKEN: handle_expire_delegation_token,
    ApiKey.DESCRIBE_DELEGATION_TOKEN: handle_describe_delegation_token,
    ApiKey.METADATA: handle_metadata,
    ApiKey.PRODUCE: handle_produce,
    ApiKey.FETCH: handle_fetch,
    ApiKey.LIST_OFFSETS: handle_list_offsets,
    ApiKey.OFFSET_FOR_LEADER_EPOCH: handle_offsets_for_leader_epoch,
    ApiKey.CREATE_TOPICS: handle_create_topics,
    ApiKey.INIT_PRODUCER_ID: handle_init_producer_id,
    ApiKey.DELETE_TOPICS: handle_delete_topics,
    ApiKey.CREATE_PARTITIONS: handle_create_partitions,
    ApiKey.DELETE_RECORDS: handle_delete_records,
    ApiKey.DESCRIBE_CONFIGS: handle_describe_configs,
    ApiKey.ALTER_CONFIGS: handle_alter_configs,
    ApiKey.INCREMENTAL_ALTER_CONFIGS: handle_incremental_alter_configs,
    ApiKey.DESCRIBE_LOG_DIRS: handle_describe_log_dirs,
    ApiKey.ALTER_REPLICA_LOG_DIRS: handle_alter_replica_log_dirs,
    ApiKey.DESCRIBE_CLUSTER: handle_describe_cluster,
    ApiKey.FIND_COORDINATOR: handle_find_coordinator,
    ApiKey.JOIN_GROUP: handle_join_group,
    ApiKey.SYNC_GROUP: handle_sync_group,
    ApiKey.HEARTBEAT: handle_heartbeat,
    ApiKey.LEAVE_GROUP: handle_leave_group,
    ApiKey.OFFSET_COMMIT: handle_offset_commit,
    ApiKey.OFFSET_FETCH: handle_offset_fetch,
    ApiKey.OFFSET_DELETE: handle_offset_delete,
    ApiKey.LIST_GROUPS: handle_list_groups,
    ApiKey.DESCRIBE_GROUPS: handle_describe_groups,
    ApiKey.DELETE_GROUPS: handle_delete_groups,
    ApiKey.LEADER_AND_ISR: handle_leader_and_isr,
    ApiKey.STOP_REPLICA: handle_stop_replica,
    ApiKey.UPDATE_METADATA: handle_update_metadata,
    ApiKey.CONTROLLED_SHUTDOWN: handle_controlled_shutdown,
    ApiKey.ELECT_LEADERS: handle_elect_leaders,
    ApiKey.ALTER_PARTITION_REASSIGNMENTS: handle_alter_partition_reassignments,
    ApiKey.LIST_PARTITION_REASSIGNMENTS: handle_list_partition_reassignments,
    ApiKey.DESCRIBE_ACLS: handle_describe_acls,
    ApiKey.CREATE_ACLS: handle_create_acls,
    ApiKey.DELETE_ACLS: handle_delete_acls,
    ApiKey.DESCRIBE_CLIENT_QUOTAS: handle_describe_client_quotas,
    ApiKey.ALTER_CLIENT_QUOTAS: handle_alter_client_quotas,
}

# APIs whose pipelined requests are handled together: (broker, [(header, body)], context)
# -> a response for each, in order. Their handlers, alone and in bursts, give equal
# answers one shared response object, never changed after, whose encoded body is kept
# (SHARED_BODIES_KEPT of them) for the requests to come.
BURST_HANDLERS = {ApiKey.OFFSET_COMMIT: handle_offset_commits}
SHARED_BODIES_KEPT = 256


class RequestDispatcher:
    def __init__(self, broker, handlers=None):
        self.broker = broker
        self.handlers = dict(handlers or HANDLERS)
        self.burst_handlers = {
            key: handler
            for key, handler in BURST_HANDLERS.items()
            if self.handlers.get(key) is HANDLERS[key]
        }
        # Client quotas (request_quotas.RequestQuotas), set by the broker; None: none.
        self.quotas = None
        # (id(response), version) -> (response, encoded body): see _shared_answer
        self._shared_bodies: dict[tuple[int, int], tuple[object, list]] = {}
        broker.advertised_versions = version_ranges(self.handlers)

    def joins_burst(self, frame: bytes | bytearray | memoryview) -> bool:
        """Whether the request in ``frame`` may be handled in a burst (its API key, the
        frame's first two bytes, has a burst handler)."""
        return len(frame) >= 2 and int.from_bytes(frame[:2], "big") in self.burst_handlers

    async def handle_burst(self, frames: list, context: ConnectionContext) -> list | None:
        """The responses to requests that :meth:`joins_burst` accepted, all of one API,
        handled together; None when one of them does not decode, and then each must be
        handled alone (so that it closes the connection after the answers before it)."""
        await self.broker.ready.wait()
        if context.security_protocol in SASL_PROTOCOLS and not (
            context.authenticator is not None and context.authenticator.admits_all()
        ):
            return None  # authentication first, request by request
        requests = []
        for frame in frames:
            try:
                requests.append(decode_request(frame))
            except RemoteProtocolError:
                return None
        api_key = requests[0][0].request_api_key
        if any(header.request_api_key != api_key for header, _ in requests):
            return None
        if self.broker.authorizer is not None and not burst_allowed(self.broker, context, requests):
            return None  # each alone, through the authorizer's checks
        if self.quotas is not None and self.quotas.applies(api_key, requests[0][1]):
            return None  # each alone, measured by the client quotas
        responses = await self.burst_handlers[api_key](self.broker, requests, context)
        return [
            self._shared_answer(header, response)
            for (header, _), response in zip(requests, responses, strict=True)
        ]

    def _shared_answer(self, header, response) -> list:
        """The framed answer to a request of a burst handler's API. Burst handlers give
        equal answers one shared response object, never changed after: its body is
        encoded once, for a burst and the requests after it."""
        api_key, version = header.request_api_key, header.request_api_version
        bodies = self._shared_bodies
        # the response is held with its body, so that its id is not reused meanwhile
        response_and_body = bodies.get((id(response), version))
        if response_and_body is None:
            if len(bodies) >= SHARED_BODIES_KEPT:
                bodies.clear()
            body = encode_response_body(api_key, version, response, strict=False)
            bodies[id(response), version] = response, body
        else:
            body = response_and_body[1]
        return frame_response_body(header, api_key, version, body)

    async def __call__(self, frame: bytes, context: ConnectionContext):
        await self.broker.ready.wait()
        # Authentication (tidelog.security.authenticator): on a SASL listener, only the
        # requests the connection's state admits, or its raw SASL tokens, pass.
        authenticator = context.authenticator
        if authenticator is None and context.security_protocol in SASL_PROTOCOLS:
            authenticator = self.broker.authenticator_factory.for_connection(context)
            context.authenticator = authenticator
        if authenticator is not None:
            if authenticator.expects_raw_token:
                return await authenticator.raw_token(frame)
            authenticator.admit(len(frame), int.from_bytes(frame[:2], "big") if frame else -1)
        try:
            header, body = decode_request(frame)
        except UnsupportedVersionError as error:
            if error.api_key == ApiKey.API_VERSIONS:
                return encode_response_chunks(
                    error.correlation_id,
                    ApiKey.API_VERSIONS,
                    0,
                    unsupported_version_response(self.broker),
                )
            raise CloseConnection(f"{error} (client at {context.peer_host})") from None
        except RemoteProtocolError as error:
            raise CloseConnection(f"{error} (client at {context.peer_host})") from None
        handler = self.handlers.get(header.request_api_key)
        if handler is None:
            raise CloseConnection(
                f"{ApiKey(header.request_api_key).name} is not served by this broker "
                f"(client {header.client_id!r} at {context.peer_host})"
            )
        quotas = self.quotas
        measured = quotas is not None and quotas.applies(header.request_api_key, body)
        if measured:
            handler = quotas.measured(handler, header, body, context)
        if self.broker.authorizer is None:
            response = await handler(self.broker, header, body, context)
        else:
            response = await handle_authorized(handler, self.broker, header, body, context)
        if measured:
            return self._throttled(quotas, header, response, len(frame), handler, context)
        if response is None:
            return None
        if header.request_api_key in self.burst_handlers:
            return self._shared_answer(header, response)
        # Handlers fill responses for the newest version; older versions leave out the
        # fields they lack.
        return encode_response_chunks(
            header, header.request_api_key, header.request_api_version, response, strict=False
        )

    def _throttled(self, quotas, header, response, request_bytes, handler, context):
        """The answer to a request the client quotas measure (:mod:`.request_quotas`):
        recorded, its throttle time in ``throttle_time_ms``, a throttled consumer fetch
        answered without records, the connection muted until the throttle ends. Shared
        answers of burst APIs are not changed: their throttle only mutes."""
        throttle = quotas.after_handler(header, request_bytes, handler, context)
        api_key, version = header.request_api_key, header.request_api_version
        if response is None or api_key in self.burst_handlers:
            quotas.mute(context, throttle)
            return None if response is None else self._shared_answer(header, response)
        if throttle and hasattr(response, "throttle_time_ms"):
            response.throttle_time_ms = throttle
        parts = encode_response_chunks(header, api_key, version, response, strict=False)
        if api_key == ApiKey.FETCH:
            size = sum(len(part) for part in parts)
            fetch_throttle = quotas.fetch_throttle(header, size, throttle, context)
            if fetch_throttle:
                throttle = response.throttle_time_ms = fetch_throttle
                response.responses = []
                parts = encode_response_chunks(header, api_key, version, response, strict=False)
        quotas.mute(context, throttle)
        return parts
