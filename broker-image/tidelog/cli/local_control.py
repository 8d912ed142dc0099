"""The control socket of ``tidelog-local start``: ``<dir>/control.sock``, a unix socket
through which ``tidelog-local restart-broker`` and ``stop-broker`` ask the running start
process to act on one of its brokers (only it can: the brokers are its children).

One request per connection, one line each way, UTF-8: the request is the command's
words separated by spaces (``restart-broker 2``), the answer ``ok <message>`` or
``error <message>``. The start process answers on its main thread, one request at a
time, between its checks of the brokers.

The socket's file is its address, and a unix socket address holds at most 107 bytes:
a longer ``<dir>`` is reached by its path relative to the working directory when that
one fits.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import socket
from collections.abc import Callable
from pathlib import Path

__all__ = ["SOCKET_NAME", "ControlError", "ControlServer", "request"]

SOCKET_NAME = "control.sock"
# sun_path is 108 bytes on Linux, with the terminating NUL.
_MAX_ADDRESS_BYTES = 107
# How long the start process waits for a connected client's request line.
_REQUEST_TIMEOUT_S = 5.0


class ControlError(Exception):
    """A request that could not be made or was refused; the message is one line."""


def socket_address(directory: Path) -> str:
    """The address of ``directory``'s control socket, absolute when it fits."""
    path = directory / SOCKET_NAME
    for candidate in (str(path.absolute()), os.path.relpath(path)):
        if len(os.fsencode(candidate)) <= _MAX_ADDRESS_BYTES:
            return candidate
    raise ControlError(f"{path} is too long for a unix socket's address; use a shorter --dir")


def _read_line(connection: socket.socket) -> str | None:
    """One line, without its newline; None when the peer closed first."""
    data = b""
    while not data.endswith(b"\n"):
        chunk = connection.recv(4096)
        if not chunk:
            return None
        data += chunk
    return data[:-1].decode()


def _one_line(text: str) -> str:
    return " ".join(text.splitlines())


class ControlServer:
    """The listening socket of a start process in ``directory``.

    Refuses to take over a socket another start process still answers on (two start
    processes in one directory would share its data); a socket file nobody answers on
    is left from a start process that was killed, and is replaced."""

    def __init__(self, directory: Path):
        self.address = socket_address(directory)
        if os.path.exists(self.address):
            probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                probe.connect(self.address)
            except OSError:
                os.unlink(self.address)
            else:
                raise ControlError(f"another tidelog-local start is running in {directory}")
            finally:
                probe.close()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self._listener.bind(self.address)
        self._listener.listen()
        self._selector = selectors.DefaultSelector()
        self._selector.register(self._listener, selectors.EVENT_READ)

    def serve(self, handler: Callable[[list[str]], str], timeout: float) -> None:
        """Wait up to ``timeout`` seconds for a request and answer it: ``ok`` with what
        ``handler`` returns, ``error`` with the :class:`ControlError` it raises."""
        if not self._selector.select(timeout):
            return
        connection, _ = self._listener.accept()
        with connection:
            connection.settimeout(_REQUEST_TIMEOUT_S)
            try:
                line = _read_line(connection)
            except (OSError, UnicodeDecodeError):
                return
            if not line:  # a probe, or a client that gave up
                return
            try:
                answer = f"ok {_one_line(handler(line.split()))}"
            except ControlError as error:
                answer = f"error {_one_line(str(error))}"
            with contextlib.suppress(OSError):  # the client gave up waiting
                connection.sendall(answer.encode() + b"\n")

    def close(self) -> None:
        self._selector.close()
        self._listener.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.address)


def request(directory: Path, words: list[str], timeout: float) -> str:
    """Send one request to the start process running in ``directory`` and return its
    ``ok`` message; :class:`ControlError` with its ``error`` message, or when no start
    process answers within ``timeout`` seconds."""
    address = socket_address(directory)
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as connection:
        connection.settimeout(timeout)
        try:
            connection.connect(address)
        except (FileNotFoundError, ConnectionRefusedError):
            raise ControlError(f"no tidelog-local start is running in {directory}") from None
        try:
            connection.sendall(" ".join(words).encode() + b"\n")
            answer = _read_line(connection)
        except TimeoutError:
            raise ControlError(
                f"the tidelog-local start in {directory} did not answer in {timeout:g} s"
            ) from None
    if answer is None:
        raise ControlError(f"the tidelog-local start in {directory} stopped without answering")
    status, _, message = answer.partition(" ")
    if status != "ok":
        raise ControlError(message)
    return message
