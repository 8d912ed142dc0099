"""The controller's connections to the other brokers (tidelog.controller.channel)."""

import asyncio
import logging
import socket

from tidelog.controller.channel import ControllerChannel
from tidelog.controller.zk_data import BrokerRegistration


def unanswered_listener() -> tuple[socket.socket, list[socket.socket]]:
    """A listening socket whose accept queue is full: a connect to it hangs (the kernel
    drops the SYN), as one to a restarted pod's old address does."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    queued = []
    for _ in range(2):
        client = socket.socket()
        client.setblocking(False)
        client.connect_ex(listener.getsockname())
        queued.append(client)
    return listener, queued


def test_a_connect_that_hangs_is_given_up_after_the_connect_timeout(caplog):
    """Not after the request timeout (a minute here): the sender tries again, and a
    restarted broker gets its metadata without waiting out the request timeout."""
    listener, queued = unanswered_listener()

    async def first_failure() -> str:
        channel = ControllerChannel(0, None, request_timeout_ms=60000, connect_timeout_ms=200)
        _, port = listener.getsockname()
        channel.set_brokers({1: BrokerRegistration(1, (("PLAINTEXT", "127.0.0.1", port),))})
        await channel.update_metadata(1, 1, [])
        try:
            async with asyncio.timeout(20):
                while not caplog.records:
                    await asyncio.sleep(0.05)
            return caplog.records[0].getMessage()
        finally:
            await channel.close()

    with caplog.at_level(logging.WARNING, logger="tidelog.controller.channel"):
        try:
            message = asyncio.run(first_failure())
        finally:
            for sock in (listener, *queued):
                sock.close()
    assert "UPDATE_METADATA failed (TimeoutError())" in message, message
