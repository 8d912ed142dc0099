"""The asyncio network layer: Kafka's length-prefixed frames over TCP.

Each connection is served by one coroutine that reads a frame, hands it to the request
handler, and writes the response before it handles the next frame, so responses leave
in request order. Clients may pipeline: later requests wait, already read, in the
stream's buffer (Kafka likewise mutes a connection while one of its requests is in
flight). The handler returns the response as parts: bytes are written as they are, a
``FileSlice`` is sent from its segment file with ``sendfile`` (zero copy) where the
transport allows, but up to 64 KiB of a response's slices are copied into its one send
(``INLINE_SLICE_BYTES``): a consumer at the tail gets its few batches in one segment,
without sendfile's costs. A frame above ``socket.request.max.bytes``, a
handler failure or an idle period of ``connections.max.idle.ms`` closes that one
connection, with a log line.

A client that pipelines (async commits, produce with several requests in flight) often
has its next request waiting in the buffer when a response is ready. In-memory responses
are then held and leave together, one send for a burst instead of one each: held
responses are written with the next response that is not held, or as soon as the
connection's task waits (for the client, or inside a handler), so holding never delays
a response behind a slow request.

Requests the ``bursts`` handler takes (OffsetCommit) are handled together when the
client pipelined them: the whole frames of such requests already waiting behind the one
read go with it to :meth:`BurstHandler.handle_burst`, which answers all at once (a
burst of commits costs one append), and their responses leave together. Handling starts
in request order and the answers leave in it, as for requests handled alone.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import itertools
import logging
import os
import socket
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from tidelog.storage.file_records import FileSlice

__all__ = [
    "BurstHandler",
    "CloseConnection",
    "ConnectionContext",
    "ResponsePart",
    "SocketServer",
]

logger = logging.getLogger(__name__)

ResponsePart = bytes | bytearray | memoryview | FileSlice
Handler = Callable[[bytes, "ConnectionContext"], Awaitable[Sequence[ResponsePart] | None]]

_ids = itertools.count(1)

# Pipelined requests handled together at most: a burst's first answer waits for its last.
MAX_BURST = 64

# Up to this many bytes of a response's file slices are read and written with the rest
# of it, in one send. For each slice, asyncio's sendfile costs a duplicated descriptor,
# a pause of reading, a send of its own for the parts before it, and two more turns of
# the loop before the task goes on. Measured on the 2-core bench machine, a client in
# another process asking for a header and one slice: a round trip took 75-81 us with
# sendfile and 41-56 us read and written for slices of 5 to 60 kB, 101 against 64 us at
# 120 kB, and 170 against 365 us at 250 kB, past the socket's buffer. The bound also
# bounds what one response copies into memory.
INLINE_SLICE_BYTES = 64 * 1024


class CloseConnection(Exception):
    """Raised by a handler to close its connection with a warning (not a crash)."""


@dataclass
class ConnectionContext:
    """What a request handler may know about the connection a request came on."""

    listener: str
    peer_host: str
    peer_port: int
    connection_id: int = field(default_factory=lambda: next(_ids))


@dataclass(eq=False)
class _Connection:
    """The serving task of one connection and what the idle sweep needs of it."""

    task: asyncio.Task
    last_active: float  # loop time of the last handled request or written response
    busy: bool = False  # a request of it is being handled
    expired: bool = False  # cancelled by the idle sweep, not by close()


def _waiting_frame_size(reader: asyncio.StreamReader) -> int:
    """The size of the next frame when ``reader`` holds all of it already, else -1.
    Reads StreamReader's buffer (``_buffer``, the bytes received and not yet read,
    unchanged since Python 3.4): the stream has no public way to peek."""
    buffered = reader._buffer
    if len(buffered) < 4:
        return -1
    size = int.from_bytes(buffered[:4], "big")
    return size if len(buffered) - 4 >= size else -1


def _request_waiting(reader: asyncio.StreamReader) -> bool:
    """Whether ``reader`` holds a whole next frame already."""
    return _waiting_frame_size(reader) >= 0


class BurstHandler(Protocol):
    """Handles pipelined requests of some kinds together (the request dispatcher)."""

    def joins_burst(self, frame: bytes) -> bool:
        """Whether the request a frame starts with may be handled in a burst."""

    async def handle_burst(
        self, frames: list[bytes], context: ConnectionContext
    ) -> list[Sequence[ResponsePart] | None] | None:
        """A response for each frame, in order; None to have each handled alone."""


class SocketServer:
    def __init__(
        self,
        handler: Handler,
        *,
        max_request_bytes: int,
        idle_timeout_ms: int,
        send_buffer_bytes: int = -1,
        receive_buffer_bytes: int = -1,
        bursts: BurstHandler | None = None,
    ):
        self._handler = handler
        self._bursts = bursts
        self._max_request_bytes = max_request_bytes
        self._idle_timeout = idle_timeout_ms / 1000 if idle_timeout_ms >= 0 else None
        self._send_buffer = send_buffer_bytes
        self._receive_buffer = receive_buffer_bytes
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[_Connection] = set()
        self._idle_watch: asyncio.Task | None = None

    async def listen(self, name: str, host: str, port: int) -> int:
        """Start accepting on ``host:port`` (an empty host means every interface);
        returns the bound port (useful with port 0)."""
        server = await asyncio.start_server(
            lambda r, w: self._accept(name, r, w), host or None, port, reuse_address=True
        )
        self._servers.append(server)
        return server.sockets[0].getsockname()[1]

    async def _accept(
        self, name: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        sock = writer.get_extra_info("socket")
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._send_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer)
            if self._receive_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer)
        peer = writer.get_extra_info("peername") or ("?", 0)
        context = ConnectionContext(name, peer[0], peer[1])
        connection = _Connection(asyncio.current_task(), asyncio.get_running_loop().time())
        self._connections.add(connection)
        self._start_idle_watch()
        # close() cancels connection tasks; one that ends cancelled is logged as an error
        # by Python 3.11's stream callback, so it ends quietly instead.
        with contextlib.suppress(asyncio.CancelledError):
            await self._serve(reader, writer, context, connection)

    async def _serve(self, reader, writer, context: ConnectionContext, connection) -> None:
        loop = asyncio.get_running_loop()
        held: list[ResponsePart] = []
        # Frames of a burst the burst handler gave back, to be handled one by one.
        unanswered: collections.deque[bytes] = collections.deque()
        bursts = self._bursts

        def write_held() -> None:
            if held and not writer.transport.is_closing():
                writer.write(b"".join(held))
            held.clear()

        try:
            while True:
                given_back = bool(unanswered)  # never in a burst again
                if given_back:
                    frame = unanswered.popleft()
                else:
                    frame = await self._read_frame(reader, context)
                    if frame is None:
                        return
                connection.busy = True
                if (
                    bursts is not None
                    and not given_back
                    and _request_waiting(reader)
                    and bursts.joins_burst(frame)
                ):
                    frames = await self._read_burst(frame, reader, context)
                    answers = await bursts.handle_burst(frames, context)
                    if answers is None:
                        unanswered.extend(frames)
                        continue
                    parts = [part for answer in answers if answer for part in answer]
                else:
                    parts = await self._handler(frame, context)
                connection.busy, connection.last_active = False, loop.time()
                if not parts:
                    continue
                if (unanswered or _request_waiting(reader)) and not any(
                    type(p) is FileSlice for p in parts
                ):
                    if not held:
                        loop.call_soon(write_held)  # runs once this task waits
                    held.extend(parts)
                    continue
                if held:
                    parts = [*held, *parts]
                    held.clear()  # before the await: write_held may run meanwhile
                await self._write(writer, parts)
                connection.last_active = loop.time()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass  # the client went away
        except CloseConnection as reason:
            logger.warning(
                "closing connection %s from %s:%d: %s",
                context.connection_id,
                context.peer_host,
                context.peer_port,
                reason,
            )
        except asyncio.CancelledError:
            if not connection.expired:
                raise
            writer.transport.abort()  # close() would still send what the peer won't read
            logger.info(
                "closing connection %s from %s:%d: idle for more than %.0f s",
                context.connection_id,
                context.peer_host,
                context.peer_port,
                self._idle_timeout,
            )
        except Exception:
            logger.exception(
                "closing connection %s from %s:%d after an error",
                context.connection_id,
                context.peer_host,
                context.peer_port,
            )
        finally:
            self._connections.discard(connection)
            write_held()  # answers to the requests before one that closes the connection
            writer.close()

    def _start_idle_watch(self) -> None:
        if self._idle_timeout is not None and self._idle_watch is None:
            self._idle_watch = asyncio.get_running_loop().create_task(self._watch_idle())

    async def _watch_idle(self) -> None:
        """Close connections without a completed frame or response for
        ``connections.max.idle.ms``: one sweep for all of them, so that serving a request
        arms no timer. A peer that stops in the middle of a frame, or stops reading a
        response, is idle too; one whose request is being handled is not."""
        loop = asyncio.get_running_loop()
        interval = min(self._idle_timeout / 10, 1.0)
        while True:
            await asyncio.sleep(interval)
            deadline = loop.time() - self._idle_timeout
            for connection in list(self._connections):
                if not connection.busy and connection.last_active < deadline:
                    connection.expired = True
                    connection.task.cancel()

    async def _read_burst(self, frame: bytes, reader: asyncio.StreamReader, context) -> list:
        """``frame`` and the whole frames waiting behind it that the burst handler takes
        (up to ``MAX_BURST``): read without waiting for the client."""
        frames = [frame]
        while len(frames) < MAX_BURST:
            size = _waiting_frame_size(reader)
            if size < 0 or size > self._max_request_bytes:
                break
            # the waiting frame's first bytes (its API key), not yet read
            if not self._bursts.joins_burst(bytes(reader._buffer[4:8])):
                break
            frames.append(await self._read_frame(reader, context))
        return frames

    async def _read_frame(self, reader: asyncio.StreamReader, context) -> bytes | None:
        try:
            prefix = await reader.readexactly(4)
        except asyncio.IncompleteReadError as error:
            if error.partial:
                raise
            return None  # a clean close between requests
        size = int.from_bytes(prefix, "big", signed=True)
        if size < 0 or size > self._max_request_bytes:
            logger.warning(
                "closing connection %s from %s:%d: frame of %d bytes is outside "
                "[0, socket.request.max.bytes=%d]",
                context.connection_id,
                context.peer_host,
                context.peer_port,
                size,
                self._max_request_bytes,
            )
            return None
        return await reader.readexactly(size)

    @staticmethod
    async def _write(writer: asyncio.StreamWriter, parts: Sequence[ResponsePart]) -> None:
        """Write the parts in order: runs of in-memory parts as one write (one send
        syscall instead of one per header field), file slices with sendfile, except
        those that fit, in order, within the response's ``INLINE_SLICE_BYTES``: they
        are read and written with the parts around them."""
        loop = asyncio.get_running_loop()
        pending: list = []
        inline_left = INLINE_SLICE_BYTES
        for part in [*parts, None]:
            if part is not None and not isinstance(part, FileSlice):
                pending.append(part)
                continue
            if part is not None and part.size <= inline_left:
                pending.append(part.to_bytes())
                inline_left -= part.size
                continue
            # The client may leave while its request waited or its response is written;
            # each write to a lost connection would log a warning of asyncio's.
            if writer.transport.is_closing():
                raise ConnectionResetError("the client closed the connection")
            if pending:
                writer.write(b"".join(pending))
                pending.clear()
            if part is not None and part.size:
                await writer.drain()
                # A private file object: sendfile's fallback path seeks it.
                with os.fdopen(os.dup(part.fileno()), "rb", buffering=0) as file:
                    await loop.sendfile(writer.transport, file, part.position, part.size)
        await writer.drain()

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        if self._idle_watch is not None:
            self._idle_watch.cancel()
            self._idle_watch = None
        for connection in list(self._connections):
            connection.task.cancel()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()
