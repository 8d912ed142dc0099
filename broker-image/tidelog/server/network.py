"""The asyncio network layer: Kafka's length-prefixed frames over TCP.

Each connection is an asyncio protocol (:class:`_Connection`) that handles one request
at a time, in arrival order, and answers in that order. Clients may pipeline: later
requests wait, already read, in the connection's buffer (Kafka likewise mutes a
connection while one of its requests is in flight); while one is handled, the connection
reads ahead at most ``READ_AHEAD_BYTES`` before it leaves the rest to TCP's flow
control. The handler returns the response as parts: bytes are written as they are, a
``FileSlice`` is sent from its segment file with ``sendfile`` (zero copy) where the
transport allows, but up to 64 KiB of a response's slices are copied into its one send
(``INLINE_SLICE_BYTES``): a consumer at the tail gets its few batches in one segment,
without sendfile's costs. A frame above ``socket.request.max.bytes``, a handler failure
or an idle period of ``connections.max.idle.ms`` closes that one connection, with a log
line. A client that stops reading its answers holds its connection's next request until
the transport's buffer drains.

Handlers run eagerly. The request's last bytes arrive in ``data_received``, which starts
the handler's coroutine at once; most requests (a commit, a produce with acks=1, a fetch
that finds data) finish in that first step and are answered in the same turn of the
event loop, with no task, no future and no second poll of the loop. A handler that must
wait (acks=all, a long-poll fetch, a rebalance) goes on from there in a task. So the
first step of a handler, up to its first wait, runs outside any task: it must not use
``asyncio.timeout``, ``asyncio.TaskGroup`` or ``asyncio.current_task`` before it has
waited once (Python 3.12's eager tasks lift this; the broker runs on 3.11). Measured on
the 2-core bench machine with a client in another process sending one request at a
time, against the layer before (a task per connection reading an
``asyncio.StreamReader``: a future, a task wake-up and a second turn of the loop for
every request): to a handler that answers at once, 25-29 µs of the broker's user CPU
per request against 33-39 µs; S10's synchronous commits through the real dispatcher
(six alternating starts, three runs each), 3,751 against 3,423 commits/s and 167
against 186 µs of user CPU per commit (medians).

A client that pipelines (async commits, produce with several requests in flight) often
has its next request waiting when a response is ready. In-memory responses are then held
and leave together, one send for all the requests a read brought: held responses are
written when no whole request is left, before a handler waits, and before a response
that needs ``sendfile``, so holding never delays a response behind a slow request.

Requests the ``bursts`` handler takes (OffsetCommit) are handled together when the
client pipelined them: the whole frames of such requests waiting behind the first go
with it to :meth:`BurstHandler.handle_burst`, which answers all at once (a burst of
commits costs one append), and their responses leave together. Handling starts in
request order and the answers leave in it, as for requests handled alone.

A connection is admitted as it is accepted, before anything else: past one of the
connection limits (``limits``, :mod:`tidelog.security.connection_limits`) it is closed at
once, with one log line. A listener may speak TLS (``listen(..., ssl_context)``): the
connection runs the handshake first (asyncio's ``start_tls``) and serves requests once it
is done, with its security protocol and, when the client sent a certificate, the
principal that certificate maps to in its context; a handshake that fails (a client
that does not speak TLS, sends garbage, or presents a certificate nobody trusts) closes
that connection with one log line, and no other connection notices. Through TLS a file
slice cannot go by ``sendfile``: it is read at its position, in chunks, and written
(asyncio's own fallback reads from the file's shared current position, which another
connection's sendfile moves).

One module, though past 500 lines: the listener (:class:`SocketServer`) and its
connections (:class:`_Connection`) share one contract (one request in flight, read-ahead,
held responses, bursts, idle expiry) that neither half states alone, and a sixth of the
length is this docstring's record of that design and its measurements.
"""

from __future__ import annotations

import asyncio
import collections
import itertools
import logging
import os
import socket
import ssl
from collections.abc import Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from tidelog.security.connection_limits import ConnectionCounts, ConnectionLimits
from tidelog.security.principal import ANONYMOUS, KafkaPrincipal
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
# The principal a client certificate (DER) stands for; ValueError refuses it.
PrincipalOf = Callable[[bytes], KafkaPrincipal]
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

# Through TLS a file slice past INLINE_SLICE_BYTES is read (in a worker thread) and
# written this much at a time. Measured on the 2-core bench machine, 200 MB of 1 KiB
# records read by loadgen over SASL_SSL, the median of six reads and the broker's CPU
# per MB (Kafka 3.9: 362 MB/s, 2.97 ms): 256 KiB chunks 311 MB/s, 2.33 ms; 1 MiB chunks
# 408-413 MB/s, 1.66-1.71 ms. With asyncio's write buffer raised to 4 MiB (to encrypt
# the next chunk while the socket sends the last): 512 KiB 344 MB/s, 1 MiB 353-376, 2 MiB
# 347, no better. Each chunk costs a hop to the thread and back; OpenSSL's memory buffer
# grows slower past a few hundred kB. A connection holds at most one chunk of a file in
# memory, and about one chunk's ciphertext in its transport.
TLS_SLICE_CHUNK = 1024 * 1024

# Bytes a connection reads ahead of the request it is handling before it stops reading
# its socket (twice asyncio.StreamReader's default limit, as before this layer was a
# protocol): a client that pipelines without end is held back by TCP, not by memory.
READ_AHEAD_BYTES = 128 * 1024


# Security protocols without TLS: their connections may be half-closed by the client.
_PLAIN_TCP = ("PLAINTEXT", "SASL_PLAINTEXT")


class CloseConnection(Exception):
    """Raised by a handler to close its connection with a warning (not a crash)."""


@dataclass
class ConnectionContext:
    """What a request handler may know about the connection a request came on."""

    listener: str
    peer_host: str
    peer_port: int
    connection_id: int = field(default_factory=lambda: next(_ids))
    security_protocol: str = "PLAINTEXT"
    # Who the connection acts for: ANONYMOUS until TLS or SASL says otherwise.
    principal: KafkaPrincipal = ANONYMOUS
    # The connection's SASL exchange while it authenticates (tidelog.security), else None.
    authenticator: Any = None
    # The event loop's time until which the connection reads no request (a quota's
    # throttle, KIP-219: the answer leaves at once, the client's next request waits).
    muted_until: float = 0.0
    # Set by a handler whose answer is the connection's last (a failed SASL exchange):
    # the connection closes once that answer is written.
    close_after_answer: bool = False


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
        limits: Callable[[], ConnectionLimits] = ConnectionLimits,
        tls_handshake_timeout_s: float = 10.0,
    ):
        self.handler = handler
        self.bursts = bursts
        self.limits = limits
        self.counts = ConnectionCounts()
        self.tls_handshake_timeout_s = tls_handshake_timeout_s
        self.max_request_bytes = max_request_bytes
        self.idle_timeout = idle_timeout_ms / 1000 if idle_timeout_ms >= 0 else None
        self._send_buffer = send_buffer_bytes
        self._receive_buffer = receive_buffer_bytes
        self._servers: list[asyncio.AbstractServer] = []
        self._connections: set[_Connection] = set()
        self._idle_watch: asyncio.Task | None = None

    async def listen(
        self,
        name: str,
        host: str,
        port: int,
        ssl_context: ssl.SSLContext | None = None,
        *,
        security_protocol: str = "PLAINTEXT",
        principal_of: PrincipalOf | None = None,
    ) -> int:
        """Start accepting on ``host:port`` (an empty host means every interface);
        returns the bound port (useful with port 0). With ``ssl_context`` every
        connection is TLS, and a connection exists for the handler once its handshake
        is done; ``principal_of`` names the principal of a client's certificate (a
        certificate it refuses, with ValueError, closes the connection)."""
        server = await asyncio.get_running_loop().create_server(
            lambda: _Connection(self, name, security_protocol, ssl_context, principal_of),
            host or None,
            port,
            reuse_address=True,
        )
        self._servers.append(server)
        return server.sockets[0].getsockname()[1]

    def admit(self, listener: str, address: str) -> bool:
        """Count a connection just accepted, or refuse it (logged) past a limit."""
        refusal = self.counts.admit(self.limits(), listener, address)
        if refusal is not None:
            logger.info("refused a connection on %s: %s", listener, refusal)
        return refusal is None

    def opened(self, connection: _Connection, sock) -> None:
        """A connection came: set its socket's options, and watch it for idleness."""
        if sock is not None:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            if self._send_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, self._send_buffer)
            if self._receive_buffer > 0:
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, self._receive_buffer)
        self._connections.add(connection)
        if self.idle_timeout is not None and self._idle_watch is None:
            self._idle_watch = asyncio.get_running_loop().create_task(self._watch_idle())

    def closed(self, connection: _Connection) -> None:
        self._connections.discard(connection)

    async def _watch_idle(self) -> None:
        """Close connections without a completed frame or response for
        ``connections.max.idle.ms``: one sweep for all of them, so that serving a request
        arms no timer. A peer that stops in the middle of a frame, or stops reading a
        response, is idle too; one whose request is being handled is not."""
        loop = asyncio.get_running_loop()
        interval = min(self.idle_timeout / 10, 1.0)
        while True:
            await asyncio.sleep(interval)
            deadline = loop.time() - self.idle_timeout
            for connection in list(self._connections):
                if not connection.busy and connection.last_active < deadline:
                    connection.expire()

    async def close(self) -> None:
        for server in self._servers:
            server.close()
        if self._idle_watch is not None:
            self._idle_watch.cancel()
            self._idle_watch = None
        for connection in list(self._connections):
            connection.close()
        for server in self._servers:
            await server.wait_closed()
        self._servers.clear()


class _Resumed:
    """The rest of a coroutine whose first step ran already and yielded ``waiting_on``:
    awaited by a task, it goes on where the coroutine stopped (the task waits for what
    the coroutine waits for, and throws a cancellation into it)."""

    __slots__ = ("_coro", "_waiting_on")

    def __init__(self, coro: Coroutine, waiting_on: Any):
        self._coro = coro
        self._waiting_on = waiting_on

    def __await__(self):
        coro, waiting_on = self._coro, self._waiting_on
        while True:
            try:
                sent = yield waiting_on
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as error:  # thrown in by the task: a cancellation
                step, value = coro.throw, error
            else:
                step, value = coro.send, sent
            try:
                waiting_on = step(value)
            except StopIteration as done:
                return done.value


class _Connection(asyncio.Protocol):
    """One client's connection: its requests in, one at a time, its answers out in the
    same order; ``busy`` and ``last_active`` are what the idle sweep reads."""

    def __init__(
        self,
        server: SocketServer,
        listener: str,
        security_protocol: str = "PLAINTEXT",
        ssl_context: ssl.SSLContext | None = None,
        principal_of: PrincipalOf | None = None,
    ):
        self._server = server
        self._listener = listener
        self._security_protocol = security_protocol
        self._ssl_context = ssl_context
        self._principal_of = principal_of
        self._admitted: str | None = None  # the client address counted, until lost
        self._handshaking = False  # TLS: until the handshake is done
        self._loop = asyncio.get_running_loop()
        self._transport: asyncio.Transport | None = None
        self.context: ConnectionContext | None = None
        self.busy = False  # a request of it is being handled
        self.last_active = self._loop.time()  # of the last handled request or written answer
        self._buffer = bytearray()  # received, not yet handled
        self._given_back: collections.deque[bytes] = collections.deque()  # by a burst
        self._held: list[ResponsePart] = []  # answers not yet written
        self._task: asyncio.Task | None = None  # a handler that waits, or a sendfile
        self._writing_paused = False
        self._drained: asyncio.Future | None = None
        self._eof = False
        self._expired = False
        self._unmute: asyncio.TimerHandle | None = None  # set while the context is muted

    # -- asyncio's callbacks ------------------------------------------------------------

    def connection_made(self, transport: asyncio.Transport) -> None:
        """Accepted: admitted within the limits, then served at once, or once its TLS
        handshake is done."""
        peer = transport.get_extra_info("peername") or ("?", 0)
        if not self._server.admit(self._listener, peer[0]):
            transport.abort()
            return
        self._admitted = peer[0]
        self._transport = transport
        self.context = ConnectionContext(
            self._listener, peer[0], peer[1], security_protocol=self._security_protocol
        )
        self._server.opened(self, transport.get_extra_info("socket"))
        if self._ssl_context is not None:
            self._handshaking = True
            transport.pause_reading()  # the handshake's bytes are start_tls's
            self._task = self._loop.create_task(self._handshake(transport))

    async def _handshake(self, transport: asyncio.Transport) -> None:
        """TLS over the accepted connection; a failure closes it with one log line (Kafka
        logs it as a failed authentication), a cancellation (closing, idleness) quietly."""
        try:
            secured = await self._loop.start_tls(
                transport,
                self,
                self._ssl_context,
                server_side=True,
                ssl_handshake_timeout=self._server.tls_handshake_timeout_s,
            )
        except (OSError, TimeoutError) as error:
            logger.info(
                "failed authentication with %s (SSL handshake failed: %s)",
                self.context.peer_host,
                str(error) or type(error).__name__,
            )
            transport.abort()
            self.connection_lost(error)
            return
        except asyncio.CancelledError:
            transport.abort()
            self.connection_lost(None)
            return
        self._transport, self._handshaking, self._task = secured, False, None
        if self._principal_of is not None:
            self._take_certificate_principal()
        if self._buffer:  # requests that came with the handshake's last flight
            self._serve()

    def _release(self) -> None:
        if self._admitted is not None:
            self._server.counts.release(self._listener, self._admitted)
            self._admitted = None

    def _take_certificate_principal(self) -> None:
        """The principal of the client's certificate, if it sent one (else it stays
        ANONYMOUS, as in Kafka); a certificate no mapping rule names closes the
        connection."""
        certificate = self._transport.get_extra_info("ssl_object").getpeercert(binary_form=True)
        if certificate is None:
            return
        try:
            self.context.principal = self._principal_of(certificate)
        except ValueError as error:
            self._fail(CloseConnection(f"client certificate refused: {error}"))

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        if self._handshaking:  # decrypted before start_tls returned: served after it
            return
        if self._task is None and not self._writing_paused:
            self._serve()
        else:
            self._mind_reading()

    def eof_received(self) -> bool:
        """The client sent all it will: answer what came, then close (through TLS,
        asyncio closes at once: TLS has no half-closed connection)."""
        self._eof = True
        if self._task is None and not self._writing_paused:
            self._serve()
        return self.context.security_protocol in _PLAIN_TCP  # open for the answers

    def pause_writing(self) -> None:
        self._writing_paused = True

    def resume_writing(self) -> None:
        self._writing_paused = False
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        if self._task is None:
            self._serve()

    def connection_lost(self, error: Exception | None) -> None:
        """The connection is gone (also called once by a failed TLS handshake: asyncio
        may or may not tell of it then)."""
        self._release()
        self._server.closed(self)
        if self._unmute is not None:
            self._unmute.cancel()
        if self._drained is not None and not self._drained.done():
            self._drained.set_exception(ConnectionResetError("the client closed the connection"))

    # -- serving ------------------------------------------------------------------------

    def _serve(self) -> None:
        """Handle the requests waiting, in order, until one must wait or none is left;
        then write the answers held meanwhile in one send."""
        try:
            while self._task is None and not self._writing_paused:
                if self._transport.is_closing():
                    return
                if self._muted():
                    break
                frames = self._next_request()
                if frames is None:
                    break
                self._handle(frames)
        except (Exception, asyncio.CancelledError) as error:
            self._fail(error)
            return
        self._flush()
        if self._eof and self._task is None and self._waiting_frame_size() < 0:
            self._transport.close()
        self._mind_reading()

    def _muted(self) -> bool:
        """Whether a throttle holds the next request back (``muted_until``); serving goes
        on by itself when the throttle ends."""
        if self._unmute is not None:
            return True
        delay = self.context.muted_until - self._loop.time()
        if delay <= 0:
            return False
        self._unmute = self._loop.call_later(delay, self._unmuted)
        return True

    def _unmuted(self) -> None:
        self._unmute = None
        if self._task is None and not self._writing_paused and not self._transport.is_closing():
            self._serve()

    def _handle(self, frames: list[bytes]) -> None:
        """Run the handler's first step and give its answer; a handler that waits goes
        on in the connection's task, after the answers held so far are written."""
        if len(frames) == 1:
            coro = self._server.handler(frames[0], self.context)
        else:
            coro = self._handle_burst(frames)
        self.busy = True
        try:
            waiting_on = coro.send(None)
        except StopIteration as done:
            self.busy, self.last_active = False, self._loop.time()
            if done.value:
                self._answer(done.value)
            return
        self._flush()
        self._task = self._loop.create_task(self._go_on(self._rest_of(coro, waiting_on)))

    async def _handle_burst(self, frames: list[bytes]) -> list[ResponsePart] | None:
        answers = await self._server.bursts.handle_burst(frames, self.context)
        if answers is None:  # to be handled one by one, never in a burst again
            self._given_back.extend(frames)
            return None
        return [part for answer in answers if answer for part in answer]

    async def _rest_of(self, coro: Coroutine, waiting_on) -> list[ResponsePart] | None:
        parts = await _Resumed(coro, waiting_on)
        self.busy, self.last_active = False, self._loop.time()
        return parts

    async def _go_on(self, work: Awaitable[list[ResponsePart] | None]) -> None:
        """The task of a connection that waits: for the rest of a handler (then its
        answer is given) or for a write; then the requests waiting are served."""
        try:
            parts = await work
            self._task = None
            if parts:
                self._answer(parts)
        except (Exception, asyncio.CancelledError) as error:
            self._task = None
            self._fail(error)
            return
        if self._task is None:
            self._serve()

    def _answer(self, parts: Sequence[ResponsePart]) -> None:
        """Hold an answer in memory to be written with the next ones, or, when file
        slices of it are left for sendfile, write it in a task."""
        pieces, sendfile = _inlined(parts)
        if sendfile:
            self._task = self._loop.create_task(self._go_on(self._write(pieces)))
        else:
            self._held.extend(pieces)
            if self.context.close_after_answer:
                self._flush()
                self._transport.close()

    # -- reading ------------------------------------------------------------------------

    def _next_request(self) -> list[bytes] | None:
        """The frames of the next request, with the whole frames of requests the burst
        handler takes waiting behind it; None when no whole frame waits."""
        if self._given_back:
            return [self._given_back.popleft()]
        frame = self._take_frame()
        if frame is None:
            return None
        frames = [frame]
        bursts = self._server.bursts
        if bursts is not None and bursts.joins_burst(frame):
            while len(frames) < MAX_BURST and self._burst_frame_waiting():
                frames.append(self._take_frame())
        return frames

    def _waiting_frame_size(self) -> int:
        """The size of the next frame when the buffer holds all of it, else -1."""
        buffered = self._buffer
        if len(buffered) < 4:
            return -1
        size = int.from_bytes(buffered[:4], "big", signed=True)
        return size if len(buffered) - 4 >= size else -1

    def _burst_frame_waiting(self) -> bool:
        """Whether a whole frame within bounds waits that the burst handler takes (its
        first bytes are its API key)."""
        size = self._waiting_frame_size()
        return 0 <= size <= self._server.max_request_bytes and self._server.bursts.joins_burst(
            bytes(self._buffer[4:8])
        )

    def _take_frame(self) -> bytes | None:
        """The next frame, out of the buffer; None until all of it came."""
        buffered = self._buffer
        if len(buffered) < 4:
            return None
        size = int.from_bytes(buffered[:4], "big", signed=True)
        if not 0 <= size <= self._server.max_request_bytes:
            raise CloseConnection(
                f"frame of {size} bytes is outside "
                f"[0, socket.request.max.bytes={self._server.max_request_bytes}]"
            )
        if len(buffered) - 4 < size:
            return None
        with memoryview(buffered) as view:
            frame = bytes(view[4 : 4 + size])
        del buffered[: 4 + size]
        return frame

    def _mind_reading(self) -> None:
        """Read while the connection waits for its client; stop reading past
        ``READ_AHEAD_BYTES`` while it waits for a handler or a write."""
        transport = self._transport
        waiting = self._task is not None or self._writing_paused or self._unmute is not None
        pause = waiting and len(self._buffer) > READ_AHEAD_BYTES
        if pause == transport.is_reading() and not transport.is_closing():
            if pause:
                transport.pause_reading()
            else:
                transport.resume_reading()

    # -- writing ------------------------------------------------------------------------

    def _flush(self) -> None:
        """Write the answers held, in one send."""
        held = self._held
        if held:
            if not self._transport.is_closing():
                self._transport.write(held[0] if len(held) == 1 else b"".join(held))
            held.clear()
            self.last_active = self._loop.time()

    async def _write(self, pieces: list[ResponsePart]) -> None:
        """Write an answer's pieces in order, its file slices with sendfile (through TLS,
        read in chunks at their positions) and the in-memory runs between them in one
        send each; wait until the transport drains."""
        transport = self._transport
        plain = self.context.security_protocol in _PLAIN_TCP
        for piece in pieces:
            if type(piece) is not FileSlice:
                self._held.append(piece)
                continue
            # The client may leave while its answer is written; a write to a lost
            # connection would log a warning of asyncio's.
            if transport.is_closing():
                raise ConnectionResetError("the client closed the connection")
            self._flush()
            if not piece.size:
                continue
            if plain:
                # The kernel's sendfile, at explicit offsets (never asyncio's fallback,
                # which reads from the file's shared current position).
                with os.fdopen(os.dup(piece.fileno()), "rb", buffering=0) as file:
                    await self._loop.sendfile(
                        transport, file, piece.position, piece.size, fallback=False
                    )
            else:
                await self._write_read_slice(piece)
        self._flush()
        await self._drain()
        self.last_active = self._loop.time()

    async def _write_read_slice(self, piece: FileSlice) -> None:
        """A file slice through TLS: read at its position (positional reads, in a worker
        thread), ``TLS_SLICE_CHUNK`` bytes at a time, each written once the transport
        has drained the one before."""
        done = 0
        while done < piece.size:
            size = min(TLS_SLICE_CHUNK, piece.size - done)
            chunk = await self._loop.run_in_executor(
                None, piece.records.read, piece.position + done, size
            )
            if len(chunk) != size:
                raise OSError(f"{piece} ends {size - len(chunk)} bytes early")
            await self._drain()
            self._transport.write(chunk)
            done += size

    async def _drain(self) -> None:
        """Wait until the transport takes more (asyncio's flow control)."""
        if self._writing_paused:
            if self._transport.is_closing():  # resume_writing will not come
                raise ConnectionResetError("the client closed the connection")
            self._drained = self._loop.create_future()
            await self._drained

    # -- closing ------------------------------------------------------------------------

    def _fail(self, error: BaseException) -> None:
        """Close the connection after ``error``, with the log line it calls for; the
        answers to the requests before it are written first."""
        self.busy = False
        context = self.context
        if isinstance(error, CloseConnection):
            logger.warning(
                "closing connection %s from %s:%d: %s",
                context.connection_id,
                context.peer_host,
                context.peer_port,
                error,
            )
        elif isinstance(error, asyncio.CancelledError):
            if self._expired:
                self._close_idle()
                return
        elif not isinstance(error, ConnectionError):  # else the client went away
            logger.error(
                "closing connection %s from %s:%d after an error",
                context.connection_id,
                context.peer_host,
                context.peer_port,
                exc_info=error,
            )
        self.close()

    def expire(self) -> None:
        """Close for idleness (the idle sweep): at once, or once a write waiting for the
        client stops."""
        self._expired = True
        if self._task is not None:
            self._task.cancel()
        else:
            self._close_idle()

    def _close_idle(self) -> None:
        self._transport.abort()  # close() would still send what the peer won't read
        logger.info(
            "closing connection %s from %s:%d: idle for more than %.0f s",
            self.context.connection_id,
            self.context.peer_host,
            self.context.peer_port,
            self._server.idle_timeout,
        )

    def close(self) -> None:
        """Close once the answers held are written; a request being handled, or an
        answer being written, is abandoned."""
        if self._task is not None:
            self._task.cancel()
            self._task = None
        self._flush()
        self._transport.close()


def _inlined(parts: Sequence[ResponsePart]) -> tuple[list[ResponsePart], bool]:
    """An answer's parts with its file slices that fit, in order, within
    ``INLINE_SLICE_BYTES`` read into memory; and whether slices are left for sendfile."""
    pieces: list[ResponsePart] = []
    inline_left = INLINE_SLICE_BYTES
    sendfile = False
    for part in parts:
        if type(part) is FileSlice:
            if part.size <= inline_left:
                inline_left -= part.size
                part = part.to_bytes()
            else:
                sendfile = True
        pieces.append(part)
    return pieces, sendfile
