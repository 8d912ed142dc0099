"""High-level admin calls over :class:`BrokerConnection` (a growing subset of Kafka's
Admin API). Consumer groups: :mod:`tidelog.admin.groups`; their committed offsets:
:mod:`tidelog.admin.group_offsets`; log offsets: :mod:`tidelog.admin.log_offsets`."""

from __future__ import annotations

import time
from collections.abc import Mapping

from tidelog.admin.connection import BrokerConnection
from tidelog.admin.errors import AdminError
from tidelog.admin.group_offsets import GroupOffsetsMixin
from tidelog.admin.groups import ConsumerGroupsMixin
from tidelog.admin.log_offsets import LogOffsetsMixin
from tidelog.admin.moves import MovesMixin
from tidelog.admin.security import SecurityMixin
from tidelog.admin.topics import TopicsMixin
from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.client_security import ClientSecurity

__all__ = ["UNINFORMED_ATTEMPTS", "AdminClient", "AdminError"]

# How often each bootstrap address is asked for metadata while it knows no cluster yet,
# and the pause between the rounds.
UNINFORMED_ATTEMPTS = 3
UNINFORMED_BACKOFF_S = 0.2
# The pause before reaching again a broker the cluster named but that did not answer,
# doubled up to the maximum (Kafka's reconnect.backoff.ms and reconnect.backoff.max.ms).
RECONNECT_BACKOFF_S = 0.05
RECONNECT_BACKOFF_MAX_S = 1.0


def _split(address: str) -> tuple[str, int]:
    host, _, port = address.rpartition(":")
    return host.strip("[]"), int(port)


class AdminClient(
    ConsumerGroupsMixin, GroupOffsetsMixin, LogOffsetsMixin, TopicsMixin, MovesMixin, SecurityMixin
):
    """Admin calls over short-lived connections; ``timeout`` (seconds) bounds each
    socket operation and the retries of a call; ``security`` says how to connect (TLS,
    SASL; None: PLAINTEXT)."""

    def __init__(
        self, bootstrap: str, *, timeout: float = 30.0, security: ClientSecurity | None = None
    ):
        self.bootstrap = [_split(a) for a in bootstrap.split(",")]
        self.timeout = timeout
        self.security = security

    def _connect(self, address: tuple[str, int] | None = None) -> BrokerConnection:
        """A connection to ``address``, a broker the cluster's metadata named (the
        controller, a coordinator, a leader), or else to the first bootstrap address
        that answers. A named broker that does not answer is reached again, with
        Kafka's reconnect backoff, until ``timeout`` has passed, as Kafka's admin client
        retries a node until its API timeout: its name may not resolve yet (a pod's DNS
        record is seconds behind the pod) or it may be restarting. Bootstrap addresses
        are tried once each: none answering is the user's mistake, said at once.
        ConnectionError naming every address and its error when none answered."""
        if address is None:
            errors = []
            for host, port in self.bootstrap:
                try:
                    return self._connect_to(host, port)
                except OSError as error:
                    errors.append(f"{host}:{port}: {error}")
            raise ConnectionError("no broker answered: " + "; ".join(errors))
        host, port = address
        deadline = time.monotonic() + self.timeout
        backoff = RECONNECT_BACKOFF_S
        while True:
            try:
                return self._connect_to(host, port)
            except OSError as error:
                if time.monotonic() + backoff >= deadline:
                    raise ConnectionError(f"no broker answered: {host}:{port}: {error}") from None
            time.sleep(backoff)
            backoff = min(2 * backoff, RECONNECT_BACKOFF_MAX_S)

    def _connect_to(self, host: str, port: int) -> BrokerConnection:
        """A connection to one broker; OSError when it does not answer."""
        return BrokerConnection(host, port, timeout=self.timeout, security=self.security)

    def metadata(self, topics: list[str] | None = None):
        """A Metadata response from a broker that knows the cluster. A broker that has
        had no metadata from the controller yet (one just started: it lists no live
        broker, not even itself) answers as if the cluster were empty; it is passed
        over for the next address, each address asked up to ``UNINFORMED_ATTEMPTS``
        times (behind a Service, that reaches other brokers). When none knows the
        cluster, AdminError LEADER_NOT_AVAILABLE: a caller retries later."""
        body = {
            "topics": None if topics is None else [{"name": t} for t in topics],
            "allow_auto_topic_creation": False,
        }
        uninformed: set[str] = set()
        unreachable: list[str] = []
        for attempt in range(UNINFORMED_ATTEMPTS):
            if attempt:
                time.sleep(UNINFORMED_BACKOFF_S)
            for host, port in self.bootstrap:
                try:
                    connection = self._connect_to(host, port)
                except OSError as error:
                    unreachable.append(f"{host}:{port}: {error}")
                    continue
                with connection:
                    response = connection.request(ApiKey.METADATA, None, body)
                if response.brokers:
                    return response
                uninformed.add(f"{host}:{port}")
            if not uninformed:
                raise ConnectionError("no broker answered: " + "; ".join(unreachable))
        raise AdminError(
            ErrorCode.LEADER_NOT_AVAILABLE,
            f"the brokers at {', '.join(sorted(uninformed))} have no metadata from the "
            "controller yet (just started); try again shortly",
        )

    def _controller(self) -> tuple[str, int]:
        metadata = self.metadata([])
        broker = next((b for b in metadata.brokers if b.node_id == metadata.controller_id), None)
        if broker is None:
            raise AdminError(ErrorCode.NOT_CONTROLLER, "the cluster has no controller yet")
        return broker.host, broker.port

    def create_topic(
        self,
        name: str,
        partitions: int = -1,
        replication_factor: int = -1,
        configs: Mapping[str, str] | None = None,
        *,
        exist_ok: bool = False,
    ) -> None:
        body = {
            "topics": [
                {
                    "name": name,
                    "num_partitions": partitions,
                    "replication_factor": replication_factor,
                    "assignments": [],
                    "configs": [{"name": k, "value": v} for k, v in (configs or {}).items()],
                }
            ],
            "timeout_ms": int(self.timeout * 1000),
            "validate_only": False,
        }
        with self._connect(self._controller()) as connection:
            result = connection.request(ApiKey.CREATE_TOPICS, None, body).topics[0]
        if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and exist_ok:
            return
        if result.error_code != ErrorCode.NONE:
            raise AdminError(
                result.error_code, result.error_message or ErrorCode(result.error_code).name
            )
