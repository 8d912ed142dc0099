"""The controller's channel watching a real broker process between requests: a broker
that closes an idle connection is connected to again and not reported; one killed -9
refuses the next connection, and the channel reports its registration at once, without
a request to send (tidelog.controller.channel)."""

import asyncio

from integration.broker_process import BrokerProcess
from tidelog.controller.channel import ControllerChannel
from tidelog.controller.zk_data import BrokerRegistration
from waiting import wait_until_async

IDLE_CLOSE = "idle for more than"


def test_a_killed_broker_is_reported_refusing_and_an_idle_close_is_not(tmp_path, zk_chroot):
    broker = BrokerProcess(
        tmp_path, zk_chroot, broker_id=1, overrides={"connections.max.idle.ms": "300"}
    ).start()
    registration = BrokerRegistration(1, (("PLAINTEXT", "127.0.0.1", broker.port),), epoch=7)

    async def watch() -> list[BrokerRegistration]:
        refusing: list[BrokerRegistration] = []
        channel = ControllerChannel(0, None, request_timeout_ms=10000)
        channel.on_broker_refusing(refusing.append)
        channel.set_brokers({1: registration})
        try:
            await channel.update_metadata(1, 1, [])
            await channel.flush(10)
            await wait_until_async(
                lambda: broker.log().count(IDLE_CLOSE) >= 2,
                "the broker closed the idle connection",
                20,
                interval=0.05,
            )
            assert refusing == [], "a broker that is still listening was reported"
            broker.kill()
            await wait_until_async(lambda: refusing, "the killed broker reported", 10)
            return refusing
        finally:
            await channel.close()

    assert asyncio.run(watch())[0] == registration
