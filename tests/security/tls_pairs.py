"""A TLS handshake between two ``ssl.SSLContext`` in memory (no sockets), for the tests
of contexts and principals: the bytes each side writes are handed to the other until
both have finished or one fails."""

from __future__ import annotations

import ssl
from dataclasses import dataclass


@dataclass
class Handshake:
    client: ssl.SSLObject
    server: ssl.SSLObject


def handshake(
    client_context: ssl.SSLContext,
    server_context: ssl.SSLContext,
    server_hostname: str | None = "localhost",
) -> Handshake:
    """Both ends after a completed handshake; the first side's SSLError otherwise."""
    to_server, to_client = ssl.MemoryBIO(), ssl.MemoryBIO()
    client_out, server_out = ssl.MemoryBIO(), ssl.MemoryBIO()
    client = client_context.wrap_bio(to_client, client_out, server_hostname=server_hostname)
    server = server_context.wrap_bio(to_server, server_out, server_side=True)
    done = {"client": False, "server": False}
    for _ in range(20):
        for name, side in (("client", client), ("server", server)):
            if not done[name]:
                try:
                    side.do_handshake()
                    done[name] = True
                except ssl.SSLWantReadError:
                    pass
            to_server.write(client_out.read())
            to_client.write(server_out.read())
        if all(done.values()):
            # TLS 1.3: the server learns of a refused client certificate only when it reads.
            client.write(b"x")
            to_server.write(client_out.read())
            server.read(1)
            return Handshake(client, server)
    raise AssertionError("the handshake did not finish")
