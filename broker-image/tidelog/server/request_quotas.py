"""Client quotas on the request path, as Kafka's ``KafkaApis`` applies them (KIP-219).

After an API's handler (:class:`~tidelog.server.dispatch.RequestDispatcher`), the request
is recorded in the quotas that apply to its principal and client id
(:class:`~tidelog.security.quotas.ClientQuotas`): a Produce's request bytes in
``producer_byte_rate``, a consumer Fetch's response bytes in ``consumer_byte_rate``, the
time its handler ran in ``request_percentage``. The largest throttle time goes into the
response's ``throttle_time_ms``; the response leaves at once, and the connection reads no
further request until the throttle ends (``ConnectionContext.muted_until``). A consumer
Fetch asks, before its handler, for no more bytes than its quota allows in one response
(Kafka's cap); one that is throttled is answered without records (its bytes are taken
back from the quota, as Kafka's ``unrecordQuotaSensor``), so a client over its quota
gets nothing until it has waited.

CreateTopics, CreatePartitions and DeleteTopics are served under the controller mutation
quota (:mod:`.mutation_quotas`), whose throttle joins the others.

Exempt, as in Kafka: the inter-broker APIs and follower fetches (replication has its own
quotas), and the SASL exchange. Nothing is measured for a quota type no entity sets.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Coroutine
from typing import Any

from tidelog.protocol import ApiKey
from tidelog.security.quotas import CONTROLLER_MUTATION, FETCH, PRODUCE, REQUEST, ClientQuotas
from tidelog.server.mutation_quotas import MUTATION_APIS, handle_with_mutation_quota
from tidelog.server.network import ConnectionContext

__all__ = ["EXEMPT_APIS", "MeasuredHandler", "RequestQuotas", "Timed"]

EXEMPT_APIS = frozenset(
    {
        ApiKey.LEADER_AND_ISR,
        ApiKey.STOP_REPLICA,
        ApiKey.UPDATE_METADATA,
        ApiKey.CONTROLLED_SHUTDOWN,
        ApiKey.SASL_HANDSHAKE,
        ApiKey.SASL_AUTHENTICATE,
    }
)


class Timed:
    """Awaits a coroutine and adds up, in ``seconds``, the time its steps ran, not the
    time it waited between them (a handler's share of the event loop's thread, as
    Kafka's request handler thread time)."""

    __slots__ = ("_coro", "seconds")

    def __init__(self, coro: Coroutine):
        self._coro = coro
        self.seconds = 0.0

    def __await__(self):
        value: Any = None
        error: BaseException | None = None
        while True:
            started = time.perf_counter()
            try:
                yielded = self._coro.send(value) if error is None else self._coro.throw(error)
            except StopIteration as stop:
                return stop.value
            finally:
                self.seconds += time.perf_counter() - started
            value, error = None, None
            try:
                value = yield yielded
            except BaseException as thrown:  # a cancellation, handed to the coroutine
                error = thrown


class MeasuredHandler:
    """An API's handler as the quotas see it: its steps timed when ``timed``
    (``request_percentage``), and the mutation APIs served under the controller
    mutation quota when ``mutations`` holds one (:mod:`.mutation_quotas`)."""

    __slots__ = ("_handler", "_mutations", "_timed", "_timed_call", "mutation_throttle_ms")

    def __init__(
        self, handler: Callable[..., Coroutine], *, timed: bool, mutations: ClientQuotas | None
    ):
        self._handler = handler
        self._mutations = mutations
        self._timed = timed
        self._timed_call: Timed | None = None
        self.mutation_throttle_ms = 0

    def __call__(self, broker, header, request, context):
        if self._mutations is None:
            call = self._handler(broker, header, request, context)
        else:
            call = self._under_mutation_quota(broker, header, request, context)
        if self._timed:
            call = self._timed_call = Timed(call)
        return call

    async def _under_mutation_quota(self, broker, header, request, context):
        response, self.mutation_throttle_ms = await handle_with_mutation_quota(
            self._handler, self._mutations, broker, header, request, context
        )
        return response

    @property
    def seconds(self) -> float:
        """The time the handler's steps ran (0 when not timed)."""
        return 0.0 if self._timed_call is None else self._timed_call.seconds


def _from_follower(api_key: int, request) -> bool:
    """A follower's Fetch: replica_id up to v14, ReplicaState from v15."""
    if api_key != ApiKey.FETCH:
        return False
    state = request.replica_state
    return request.replica_id >= 0 or (state is not None and state.replica_id >= 0)


class RequestQuotas:
    """The quota steps of one broker's request path; ``clock`` is the event loop's
    time, the clock ``muted_until`` is read against."""

    def __init__(self, quotas: ClientQuotas, clock: Callable[[], float]):
        self.client_quotas = quotas
        self._clock = clock

    def applies(self, api_key: int, request) -> bool:
        """Whether a request is measured at all (cheap: checked for every request)."""
        quotas = self.client_quotas
        if not quotas.any_enabled() or api_key in EXEMPT_APIS or _from_follower(api_key, request):
            return False
        return (
            quotas.enabled(REQUEST)
            or (api_key == ApiKey.PRODUCE and quotas.enabled(PRODUCE))
            or (api_key == ApiKey.FETCH and quotas.enabled(FETCH))
            or (api_key in MUTATION_APIS and quotas.enabled(CONTROLLER_MUTATION))
        )

    def measured(self, handler, header, request, context: ConnectionContext) -> MeasuredHandler:
        """The handler to serve a request that :meth:`applies` with. A consumer Fetch
        asks for no more than its fetch quota allows in one response, so that a
        response always fits the quota (Kafka caps the request's max_bytes, and
        min_bytes with it, so)."""
        api_key = header.request_api_key
        quotas = self.client_quotas
        if api_key == ApiKey.FETCH:
            self._cap_fetch(header, request, context)
        mutations = api_key in MUTATION_APIS and quotas.enabled(CONTROLLER_MUTATION)
        return MeasuredHandler(
            handler, timed=quotas.enabled(REQUEST), mutations=quotas if mutations else None
        )

    def _cap_fetch(self, header, request, context: ConnectionContext) -> None:
        user, client = context.principal.name, header.client_id or ""
        cap = self.client_quotas.max_value_in_window(FETCH, user, client)
        if cap is not None and cap < request.max_bytes:
            request.max_bytes = max(int(cap), 1)
            request.min_bytes = min(request.min_bytes, request.max_bytes)

    def after_handler(
        self,
        header,
        request_bytes: int,
        handler: MeasuredHandler,
        context: ConnectionContext,
    ) -> int:
        """Record a handled request's size (Produce) and handler time; the throttle time
        in ms it earns, with the controller mutation quota's."""
        user, client = context.principal.name, header.client_id or ""
        api_key = header.request_api_key
        throttle = self.client_quotas.record(REQUEST, user, client, handler.seconds * 100)
        throttle = max(throttle, handler.mutation_throttle_ms)
        if api_key == ApiKey.PRODUCE:
            throttle = max(
                throttle, self.client_quotas.record(PRODUCE, user, client, request_bytes)
            )
        return throttle

    def fetch_throttle(
        self, header, response_bytes: int, throttle_ms: int, context: ConnectionContext
    ) -> int:
        """Record a consumer Fetch's response size; the throttle time, at least
        ``throttle_ms`` (the request quota's). When it is > 0 the response must go
        without records, and its bytes are taken back."""
        if not self.client_quotas.enabled(FETCH):
            return throttle_ms
        user, client = context.principal.name, header.client_id or ""
        throttle_ms = max(
            throttle_ms, self.client_quotas.record(FETCH, user, client, response_bytes)
        )
        if throttle_ms:
            self.client_quotas.unrecord(FETCH, user, client, response_bytes)
        return throttle_ms

    def mute(self, context: ConnectionContext, throttle_ms: int) -> None:
        """Hold the connection's next request until the throttle ends (KIP-219)."""
        if throttle_ms > 0:
            context.muted_until = max(context.muted_until, self._clock() + throttle_ms / 1000)
