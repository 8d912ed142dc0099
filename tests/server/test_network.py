import asyncio
import logging
import random
import struct
from asyncio.selector_events import _SelectorSocketTransport as SocketTransport

import pytest

from tidelog.records import build_batch
from tidelog.replication.purgatory import Purgatory
from tidelog.server.network import INLINE_SLICE_BYTES, MAX_BURST, CloseConnection, SocketServer
from tidelog.storage.log import Log


def frame(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


async def read_frame(reader) -> bytes:
    (size,) = struct.unpack(">i", await reader.readexactly(4))
    return await reader.readexactly(size)


async def started(handler, **kwargs):
    server = SocketServer(
        handler,
        max_request_bytes=kwargs.pop("max_request_bytes", 1 << 20),
        idle_timeout_ms=kwargs.pop("idle_timeout_ms", 60_000),
    )
    port = await server.listen("PLAINTEXT", "127.0.0.1", 0)
    return server, port


async def exchange(server: SocketServer, port: int, requests: list[bytes]) -> list[bytes]:
    """Send ``requests`` in one write, then read as many answers."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"".join(frame(r) for r in requests))
    answers = [await asyncio.wait_for(read_frame(reader), 5) for _ in requests]
    writer.close()
    await server.close()
    return answers


async def pipelined(handler, count: int) -> tuple[list[bytes], list[bytes]]:
    """Send ``count`` requests in one write, then read as many answers."""
    server, port = await started(handler)
    requests = [f"request-{i}".encode() for i in range(count)]
    return requests, await exchange(server, port, requests)


class Bursts:
    """A burst handler for requests starting with ``B``: answers them all at once, or
    gives them back (``answers=False``) to be handled one by one; keeps each burst."""

    def __init__(self, *, answers: bool = True):
        self.answers = answers
        self.bursts: list[list[bytes]] = []

    def joins_burst(self, frame: bytes) -> bool:
        return frame[:1] == b"B"

    async def handle_burst(self, frames, context):
        self.bursts.append(list(frames))
        return [[frame(b"burst:" + f)] for f in frames] if self.answers else None


async def alone(payload, context):
    if payload == b"Bbad":
        raise CloseConnection("a request this connection cannot go on after")
    return [frame(b"alone:" + payload)]


def test_pipelined_requests_are_answered_in_order():
    async def handler(payload, context):
        await asyncio.sleep(random.random() / 200)  # finish times vary
        return [frame(b"re:" + payload)]

    requests, answers = asyncio.run(pipelined(handler, 50))
    assert answers == [b"re:" + r for r in requests]


def test_answers_to_a_pipelined_burst_leave_in_few_writes(monkeypatch):
    writes = []
    real_write = SocketTransport.write
    monkeypatch.setattr(
        SocketTransport, "write", lambda self, data: writes.append(data) or real_write(self, data)
    )

    async def handler(payload, context):
        return [frame(b"re:" + payload)]

    requests, answers = asyncio.run(pipelined(handler, 50))
    assert answers == [b"re:" + r for r in requests]
    server_writes = [w for w in writes if b"re:" in w]  # the client's own write has none
    assert len(server_writes) <= 5, f"{len(server_writes)} writes for 50 pipelined answers"


def with_bursts(bursts, requests, answers: int, *, closes=False, max_request_bytes=1 << 20):
    """Send ``requests`` in one write to a server with ``bursts``; read ``answers``
    answers and, if the server ``closes`` the connection, the rest it sends before."""

    async def main():
        server = SocketServer(
            alone, max_request_bytes=max_request_bytes, idle_timeout_ms=-1, bursts=bursts
        )
        port = await server.listen("PLAINTEXT", "127.0.0.1", 0)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"".join(frame(r) for r in requests))
        answered = [await asyncio.wait_for(read_frame(reader), 5) for _ in range(answers)]
        rest = await asyncio.wait_for(reader.read(), 5) if closes else None
        writer.close()
        await server.close()
        return answered, rest

    return asyncio.run(main())


def test_pipelined_requests_the_burst_handler_takes_are_handled_together():
    bursts = Bursts()
    requests = [b"B1", b"B2", b"B3", b"x4", b"B5", b"B6", b"x7", b"B8"]
    answers, _ = with_bursts(bursts, requests, len(requests))
    assert bursts.bursts == [[b"B1", b"B2", b"B3"], [b"B5", b"B6"]]
    assert answers == [
        *(b"burst:" + r for r in requests[:3]),
        b"alone:x4",
        b"burst:B5",
        b"burst:B6",
        b"alone:x7",
        b"alone:B8",  # nothing waits behind it: no burst of one
    ]


def test_a_burst_holds_at_most_max_burst_requests():
    bursts = Bursts()
    requests = [f"B{i}".encode() for i in range(MAX_BURST + 10)]
    answers, _ = with_bursts(bursts, requests, len(requests))
    assert [len(b) for b in bursts.bursts] == [MAX_BURST, 10]
    assert answers == [b"burst:" + r for r in requests]


def test_a_burst_given_back_is_handled_request_by_request(caplog):
    """As when a request of it does not decode: the answers before the request that
    closes the connection are sent, then the connection closes."""
    bursts = Bursts(answers=False)
    requests = [b"B1", b"B2", b"Bbad", b"B4"]
    answers, rest = with_bursts(bursts, requests, 2, closes=True)
    assert bursts.bursts == [requests]
    assert answers == [b"alone:B1", b"alone:B2"]
    assert rest == b""  # then closed
    assert "a request this connection cannot go on after" in caplog.text


def test_the_last_request_of_a_burst_given_back_is_handled_alone_too():
    """The request the handler does not take, waiting behind a burst given back, does
    not make a new burst of the burst's last request (which would be given back again,
    and again, without end)."""
    bursts = Bursts(answers=False)
    answers, _ = with_bursts(bursts, [b"B1", b"B2", b"x3"], 3)
    assert bursts.bursts == [[b"B1", b"B2"]]
    assert answers == [b"alone:B1", b"alone:B2", b"alone:x3"]


def test_a_frame_over_the_limit_ends_a_burst_and_then_the_connection(caplog):
    bursts = Bursts()
    requests = [b"B1", b"B2", b"B" * 65, b"B4"]
    answers, rest = with_bursts(bursts, requests, 2, closes=True, max_request_bytes=64)
    assert bursts.bursts == [[b"B1", b"B2"]]
    assert answers == [b"burst:B1", b"burst:B2"]
    assert rest == b""
    assert "frame of 65 bytes is outside" in caplog.text


def test_a_held_answer_leaves_while_a_later_request_waits():
    async def main():
        release = asyncio.Event()

        async def handler(payload, context):
            if payload == b"slow":
                await release.wait()  # set only once the client has the fast answer
            return [frame(b"re:" + payload)]

        server, port = await started(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"fast") + frame(b"slow"))
        fast = await asyncio.wait_for(read_frame(reader), 5)
        release.set()
        slow = await asyncio.wait_for(read_frame(reader), 5)
        writer.close()
        await server.close()
        return fast, slow

    assert asyncio.run(main()) == (b"re:fast", b"re:slow")


def test_a_handler_that_need_not_wait_is_answered_without_a_task():
    """Its first step runs as its request arrives; one that waits goes on in a task,
    where what needs a task (``asyncio.timeout``) works."""
    seen = {}

    async def handler(payload, context):
        seen[payload, "first step"] = asyncio.current_task()
        if payload == b"waits":
            await asyncio.sleep(0.01)
            async with asyncio.timeout(1):
                await asyncio.sleep(0)
            seen[payload, "after its wait"] = asyncio.current_task()
        return [frame(b"re:" + payload)]

    async def main():
        server, port = await started(handler)
        return await exchange(server, port, [b"quick", b"waits", b"quick again"])

    assert asyncio.run(main()) == [b"re:quick", b"re:waits", b"re:quick again"]
    assert seen[b"quick", "first step"] is None
    assert seen[b"waits", "first step"] is None
    assert seen[b"waits", "after its wait"] is not None


def test_a_purgatory_wait_may_come_in_a_handlers_first_step():
    """Long-poll Fetch and acks=all wait there before they have waited on anything."""
    purgatory = Purgatory()

    async def handler(payload, context):
        await purgatory.wait([("t", 0)], 0.05)  # nothing notifies: its timeout ends it
        return [frame(b"re:" + payload)]

    async def main():
        server, port = await started(handler)
        answers = await exchange(server, port, [b"long poll"])
        return answers, purgatory.waiting

    assert asyncio.run(main()) == ([b"re:long poll"], 0)


def test_closing_the_server_cancels_a_handler_that_waits():
    async def main():
        started_waiting, was_cancelled = asyncio.Event(), asyncio.Event()

        async def handler(payload, context):
            started_waiting.set()
            try:
                await asyncio.Event().wait()  # never set
            except asyncio.CancelledError:
                was_cancelled.set()
                raise

        server, port = await started(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"forever"))
        await asyncio.wait_for(started_waiting.wait(), 5)
        await server.close()
        await asyncio.wait_for(was_cancelled.wait(), 5)
        closed = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        return closed

    assert asyncio.run(main()) == b""


def test_answers_before_a_request_that_closes_the_connection_are_sent(caplog):
    async def handler(payload, context):
        if payload == b"bad":
            raise CloseConnection("a request this connection cannot go on after")
        return [frame(b"re:" + payload)]

    async def main():
        server, port = await started(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"first") + frame(b"second") + frame(b"bad"))
        answers = [await asyncio.wait_for(read_frame(reader), 5) for _ in range(2)]
        rest = await asyncio.wait_for(reader.read(), 5)
        writer.close()
        await server.close()
        return answers, rest

    answers, rest = asyncio.run(main())
    assert answers == [b"re:first", b"re:second"]
    assert rest == b""  # then closed
    assert "a request this connection cannot go on after" in caplog.text


def test_no_response_parts_means_no_response():
    async def handler(payload, context):
        return None if payload == b"silent" else [frame(payload)]

    async def main():
        server, port = await started(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"silent") + frame(b"loud"))
        answer = await read_frame(reader)
        writer.close()
        await server.close()
        return answer

    assert asyncio.run(main()) == b"loud"


def test_oversized_frame_closes_only_that_connection(caplog):
    async def handler(payload, context):
        return [frame(payload)]

    async def main():
        server, port = await started(handler, max_request_bytes=100)
        bad_reader, bad_writer = await asyncio.open_connection("127.0.0.1", port)
        good_reader, good_writer = await asyncio.open_connection("127.0.0.1", port)
        bad_writer.write(struct.pack(">i", 101) + b"x" * 101)
        closed = await bad_reader.read(10)
        good_writer.write(frame(b"still here"))
        answer = await read_frame(good_reader)
        good_writer.close()
        await server.close()
        return closed, answer

    with caplog.at_level(logging.WARNING):
        closed, answer = asyncio.run(main())
    assert closed == b"" and answer == b"still here"
    assert any("socket.request.max.bytes=100" in m for m in caplog.messages)


def test_idle_connection_is_closed(caplog):
    async def handler(payload, context):
        return [frame(payload)]

    async def main():
        server, port = await started(handler, idle_timeout_ms=200)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"one"))
        first = await read_frame(reader)
        closed = await asyncio.wait_for(reader.read(10), 5)
        await server.close()
        return first, closed

    with caplog.at_level(logging.INFO):
        first, closed = asyncio.run(main())
    assert first == b"one" and closed == b""
    assert any("idle" in m for m in caplog.messages)


def test_a_request_being_handled_keeps_its_connection_open(caplog):
    """A long-poll or acks=all wait may outlast connections.max.idle.ms: not idle."""

    async def handler(payload, context):
        await asyncio.sleep(0.6)
        return [frame(payload)]

    async def main():
        server, port = await started(handler, idle_timeout_ms=200)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"slow"))
        answer = await asyncio.wait_for(read_frame(reader), 5)
        await server.close()
        return answer

    with caplog.at_level(logging.INFO):
        assert asyncio.run(main()) == b"slow"
    assert not any("idle" in m for m in caplog.messages)


def test_a_client_that_stops_reading_is_closed_when_idle(caplog):
    big = b"x" * (8 << 20)  # more than the socket buffers hold

    async def handler(payload, context):
        return [frame(big)]

    async def main():
        server, port = await started(handler, idle_timeout_ms=300)
        reader, writer = await asyncio.open_connection("127.0.0.1", port, limit=1 << 16)
        writer.write(frame(b"give me a lot"))
        await asyncio.sleep(1.5)  # read nothing meanwhile
        received = 0
        while chunk := await asyncio.wait_for(reader.read(1 << 20), 5):
            received += len(chunk)
        await server.close()
        return received

    with caplog.at_level(logging.INFO):
        received = asyncio.run(main())
    assert received < len(big) + 4
    assert any("idle" in m for m in caplog.messages)


def test_handler_failure_closes_the_connection_not_the_server(caplog):
    async def handler(payload, context):
        if payload == b"boom":
            raise RuntimeError("handler bug")
        return [frame(payload)]

    async def main():
        server, port = await started(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"boom"))
        closed = await reader.read(10)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"fine"))
        answer = await read_frame(reader)
        await server.close()
        return closed, answer

    with caplog.at_level(logging.ERROR):
        closed, answer = asyncio.run(main())
    assert (closed, answer) == (b"", b"fine")
    assert any("after an error" in m for m in caplog.messages)


def serve_slices(slices, monkeypatch) -> tuple[bytes, list[bytes], list[int]]:
    """The body a client reads when a handler answers a length prefix and ``slices``;
    the server's writes and the sizes it sent with sendfile."""
    writes, sent_by_sendfile = [], []
    real_write, real_sendfile = SocketTransport.write, asyncio.BaseEventLoop.sendfile

    def write(self, data):
        writes.append(bytes(data))
        return real_write(self, data)

    async def sendfile(self, transport, file, offset=0, count=None, **kwargs):
        sent_by_sendfile.append(count)
        return await real_sendfile(self, transport, file, offset, count, **kwargs)

    monkeypatch.setattr(SocketTransport, "write", write)
    monkeypatch.setattr(asyncio.BaseEventLoop, "sendfile", sendfile)
    size = sum(s.size for s in slices)

    async def handler(payload, context):
        return [struct.pack(">i", size), *slices]

    async def main():
        server, port = await started(handler)
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(frame(b"fetch"))
        body = await read_frame(reader)
        writer.close()
        await server.close()
        return body

    body = asyncio.run(main())
    return body, [w for w in writes if w != frame(b"fetch")], sent_by_sendfile


@pytest.mark.parametrize("records", [1, 300])
def test_file_slices_are_sent_from_the_segment(tmp_path, records, monkeypatch):
    log = Log.open(tmp_path / "t-0")
    for i in range(records):
        log.append_as_leader(build_batch([(f"k{i}", "v" * 500)]))
    found = log.read(0, 1 << 30).records

    body, _, _ = serve_slices([found], monkeypatch)
    assert body == found.to_bytes()


def test_a_small_file_slice_leaves_in_one_send_with_its_header(tmp_path, monkeypatch):
    log = Log.open(tmp_path / "t-0")
    log.append_as_leader(build_batch([("k", "v" * 500)]))
    found = log.read(0, 1 << 30).records

    body, writes, sent_by_sendfile = serve_slices([found], monkeypatch)
    assert body == found.to_bytes()
    assert writes == [struct.pack(">i", found.size) + found.to_bytes()]
    assert sent_by_sendfile == []


def test_file_slices_past_the_inline_bound_go_with_sendfile(tmp_path, monkeypatch):
    slices = []
    for partition in range(3):
        log = Log.open(tmp_path / f"t-{partition}")
        while log.log_end_offset * 1000 < INLINE_SLICE_BYTES // 2:
            log.append_as_leader(build_batch([("k", "v" * 1000)]))
        slices.append(log.read(0, 1 << 30).records)
    assert slices[0].size + slices[1].size > INLINE_SLICE_BYTES >= slices[0].size

    body, writes, sent_by_sendfile = serve_slices(slices, monkeypatch)
    assert body == b"".join(s.to_bytes() for s in slices)
    assert writes[0] == struct.pack(">i", len(body)) + slices[0].to_bytes()
    assert sent_by_sendfile == [slices[1].size, slices[2].size]
