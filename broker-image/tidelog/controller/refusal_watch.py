"""Telling that a broker's process is gone before ZooKeeper does.

A broker killed with ``kill -9`` (or crashed, or killed for lack of memory) closes no
ZooKeeper session: its registration, and ``/controller`` if it was the controller,
stay until the session expires, ``zookeeper.session.timeout.ms`` later (18 s by
default), and Kafka's cluster waits for that. The kernel, though, closes the process's
sockets at once. A :class:`RefusalWatch` holds an idle connection to a broker's
endpoint; when the broker closes it, the watch connects again at once, and a
connection *refused* there means that no process listens any more (a broker closes its
listeners only as it exits): the watch reports the broker's registration and ends.

Only a refusal counts. A connect that times out or finds no route (a host, or a pod's
address, gone) proves nothing: the watch tries again a second later, and the session
expiry decides, as in Kafka. Nor is a host name that resolves to several addresses,
all refusing, recognised (asyncio reports those as one plain OSError).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from tidelog.admin.async_connection import CONNECTION_ERRORS, AsyncBrokerConnection
from tidelog.controller.zk_data import BrokerRegistration
from tidelog.security.client_security import PLAINTEXT, ClientSecurity

__all__ = ["RefusalWatch"]

# A broker that keeps closing the watch's connection within this long is connected to
# again after pauses doubling from FIRST_PAUSE_S up to it, not at once every time.
FIRST_PAUSE_S = 0.05
MAX_PAUSE_S = 1.0


class RefusalWatch:
    """Watches one broker's endpoint until it refuses a connection; then calls
    ``report`` (on the event loop) with the broker's registration, once."""

    def __init__(
        self,
        registration: BrokerRegistration,
        address: tuple[str, int],
        *,
        client_id: str,
        connect_timeout_s: float,
        report: Callable[[BrokerRegistration], None],
        security: ClientSecurity = PLAINTEXT,
    ):
        self.registration = registration
        self._address = address
        self._security = security
        self._client_id = client_id
        self._connect_timeout = connect_timeout_s
        self._report = report
        self._task = asyncio.create_task(
            self._run(), name=f"refusal-watch-{registration.broker_id}"
        )

    def close(self) -> asyncio.Task:
        self._task.cancel()
        return self._task

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        pause = 0.0
        while True:
            try:
                connection = await AsyncBrokerConnection.open(
                    *self._address,
                    client_id=self._client_id,
                    connect_timeout_s=self._connect_timeout,
                    security=self._security,
                )
            except ConnectionRefusedError:
                self._report(self.registration)
                return
            except CONNECTION_ERRORS:
                await asyncio.sleep(MAX_PAUSE_S)
                continue
            opened = loop.time()
            try:
                await connection.until_closed_by_peer()
            finally:
                connection.close()
            if loop.time() - opened > MAX_PAUSE_S:
                pause = 0.0
            else:
                pause = min(max(2 * pause, FIRST_PAUSE_S), MAX_PAUSE_S)
            await asyncio.sleep(pause)
