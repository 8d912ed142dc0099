"""The controller's connections to the other brokers (tidelog.controller.channel)."""

import asyncio
import logging

from tidelog.controller.channel import ControllerChannel
from tidelog.controller.zk_data import BrokerRegistration


def test_a_connect_that_hangs_is_given_up_after_the_connect_timeout(hanging_address, caplog):
    """Not after the request timeout (a minute here): the sender tries again, and a
    restarted broker gets its metadata without waiting out the request timeout."""
    host, port = hanging_address

    async def first_failure() -> str:
        channel = ControllerChannel(0, None, request_timeout_ms=60000, connect_timeout_ms=200)
        channel.set_brokers({1: BrokerRegistration(1, (("PLAINTEXT", host, port),))})
        await channel.update_metadata(1, 1, [])
        try:
            async with asyncio.timeout(20):
                while not caplog.records:
                    await asyncio.sleep(0.05)
            return caplog.records[0].getMessage()
        finally:
            await channel.close()

    with caplog.at_level(logging.WARNING, logger="tidelog.controller.channel"):
        message = asyncio.run(first_failure())
    assert "UPDATE_METADATA failed (TimeoutError())" in message, message
