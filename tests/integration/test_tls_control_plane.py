"""``control.plane.listener.name``: the controller's connections to a broker go to that
broker's control-plane endpoint (not its inter-broker one), over TLS with the
controller's own certificate."""

from __future__ import annotations

import asyncio

from integration.broker_process import free_port
from tidelog.controller.channel import ControllerChannel
from tidelog.controller.zk_data import BrokerRegistration
from tidelog.security.certificates import CertificateAuthority
from tidelog.security.client_security import ClientSecurity
from tidelog.security.tls import server_context

CA = CertificateAuthority()
BROKER = CA.issue("CN=broker", hosts=["127.0.0.1"])
STORES = {
    "ssl.keystore.type": "PEM",
    "ssl.keystore.certificate.chain": BROKER.chain_pem.decode(),
    "ssl.keystore.key": BROKER.key_pem().decode(),
    "ssl.truststore.type": "PEM",
    "ssl.truststore.certificates": CA.certificate_pem.decode(),
}


def test_the_controller_connects_to_the_control_plane_listener_over_tls() -> None:
    internal_port = free_port()  # nobody listens: a connection there is refused

    async def main() -> tuple[bool, list[str]]:
        accepted: list[str] = []

        async def accept(reader, writer) -> None:
            subject = writer.get_extra_info("peercert")["subject"]
            accepted.append(dict(x[0] for x in subject)["commonName"])
            writer.close()

        server = await asyncio.start_server(
            accept, "127.0.0.1", 0, ssl=server_context(STORES | {"ssl.client.auth": "required"})
        )
        control_port = server.sockets[0].getsockname()[1]
        registration = BrokerRegistration(
            2,
            (("INTERNAL", "127.0.0.1", internal_port), ("CONTROL", "127.0.0.1", control_port)),
        )
        security = ClientSecurity.from_properties({"security.protocol": "SSL", **STORES})
        channel = ControllerChannel(
            1, None, "INTERNAL", control_listener="CONTROL", security=security
        )
        try:
            refuses = await channel.refuses_connections(registration)
        finally:
            server.close()
            await server.wait_closed()
        return refuses, accepted

    refuses, accepted = asyncio.run(main())
    assert (refuses, accepted) == (False, ["broker"])
