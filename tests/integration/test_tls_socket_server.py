"""The network layer's TLS listeners, over real sockets: the connection's security
protocol and certificate principal reach the handler, large file slices (sendfile's
fallback) arrive whole, and a listener's context swapped at run time serves new
connections while an open one goes on with its own."""

from __future__ import annotations

import asyncio
import ssl
import struct

from tidelog.records import build_batch
from tidelog.security.certificates import CertificateAuthority
from tidelog.security.listener_security import TlsListener
from tidelog.security.tls import client_context
from tidelog.server.network import INLINE_SLICE_BYTES, SocketServer
from tidelog.storage.log import Log

CA = CertificateAuthority()
ALICE = CA.issue("CN=alice,OU=eng")


def keystore(issued) -> dict[str, object]:
    return {
        "ssl.keystore.type": "PEM",
        "ssl.keystore.certificate.chain": issued.chain_pem.decode(),
        "ssl.keystore.key": issued.key_pem().decode(),
    }


def listener_settings(issued, **more) -> dict[str, object]:
    return {
        **keystore(issued),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": CA.certificate_pem.decode(),
        "ssl.client.auth": "requested",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),.*$/$1/,DEFAULT",
        **more,
    }


def client(*, certificate=None) -> ssl.SSLContext:
    settings = {
        "ssl.truststore.type": "PEM",
        "ssl.truststore.certificates": CA.certificate_pem.decode(),
    }
    return client_context(settings | (keystore(certificate) if certificate else {}))


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def read_frame(reader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def serving(tls: TlsListener, handler):
    server = SocketServer(handler, max_request_bytes=1 << 20, idle_timeout_ms=60_000)
    port = await server.listen(
        "SSL", "127.0.0.1", 0, tls.front, security_protocol="SSL", principal_of=tls.principal_of
    )
    return server, port


async def who(payload, context):
    return [frame(f"{context.security_protocol} {context.principal}".encode())]


async def ask(port: int, context: ssl.SSLContext, payload: bytes = b"who") -> bytes:
    reader, writer = await asyncio.open_connection(
        "127.0.0.1", port, ssl=context, server_hostname="localhost"
    )
    writer.write(frame(payload))
    answer = await asyncio.wait_for(read_frame(reader), 10)
    writer.close()
    return answer


def test_the_handler_sees_the_protocol_and_the_certificates_principal() -> None:
    tls = TlsListener(listener_settings(CA.issue("CN=broker", hosts=["localhost"])))

    async def main():
        server, port = await serving(tls, who)
        try:
            return await ask(port, client(certificate=ALICE)), await ask(port, client())
        finally:
            await server.close()

    assert asyncio.run(main()) == (b"SSL User:alice", b"SSL User:ANONYMOUS")


def test_a_certificate_no_rule_maps_closes_only_its_connection() -> None:
    rules = {"ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=ops$/$1/"}
    tls = TlsListener(listener_settings(CA.issue("CN=broker", hosts=["localhost"]), **rules))

    async def main():
        server, port = await serving(tls, who)
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, ssl=client(certificate=ALICE), server_hostname="localhost"
            )
            writer.write(frame(b"who"))
            closed = await asyncio.wait_for(reader.read(), 10)
            writer.close()
            return closed, await ask(port, client())
        finally:
            await server.close()

    assert asyncio.run(main()) == (b"", b"SSL User:ANONYMOUS")


def test_file_slices_past_the_inline_bound_arrive_whole_through_tls(tmp_path) -> None:
    log = Log.open(tmp_path / "t-0")
    while log.log_end_offset * 1000 < 3 * INLINE_SLICE_BYTES:
        log.append_as_leader(build_batch([("k", "v" * 1000)]))
    found = log.read(0, 1 << 30).records
    assert found.size > INLINE_SLICE_BYTES
    tls = TlsListener(listener_settings(CA.issue("CN=broker", hosts=["localhost"])))

    async def slices(payload, context):
        return [struct.pack(">i", found.size), found]

    async def main():
        server, port = await serving(tls, slices)
        try:
            return await ask(port, client())
        finally:
            await server.close()

    assert asyncio.run(main()) == found.to_bytes()


def test_a_swapped_context_serves_new_connections_and_spares_open_ones() -> None:
    old = CA.issue("CN=broker-old", hosts=["localhost"])
    new = CA.issue("CN=broker-new", hosts=["localhost"])
    tls = TlsListener(listener_settings(old))

    def served_by(writer) -> str:
        subject = dict(x[0] for x in writer.get_extra_info("peercert")["subject"])
        return subject["commonName"]

    async def main():
        server, port = await serving(tls, who)
        try:
            reader, writer = await asyncio.open_connection(
                "127.0.0.1", port, ssl=client(), server_hostname="localhost"
            )
            before = served_by(writer)
            tls.swap(listener_settings(new))
            writer.write(frame(b"who"))
            still = await asyncio.wait_for(read_frame(reader), 10)
            _, fresh = await asyncio.open_connection(
                "127.0.0.1", port, ssl=client(), server_hostname="localhost"
            )
            after = served_by(fresh)
            fresh.close()
            writer.close()
            return before, still, after
        finally:
            await server.close()

    assert asyncio.run(main()) == ("broker-old", b"SSL User:ANONYMOUS", "broker-new")
