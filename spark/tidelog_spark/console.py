"""One writer for a terminal program's output (``tidelog-demo``'s bar table, its status
lines, its shutdown messages and its warnings).

Every message goes to a :class:`Console`, whose own thread alone writes standard output
and standard error, each message whole, its newline included. Printing from the main
thread cannot promise that: ``print`` writes the text and the newline separately, and a
signal handler may run (and raise) between the two, so that the next message goes on the
same line. A message put on the console's queue is there whole or not at all.

A closed standard output (the reading end of a pipe gone: ``| tee`` or ``| head`` ended)
is noticed when it happens, not at the next write: a watcher thread waits for the
descriptor's POLLERR or POLLHUP (a pipe without readers, a terminal hung up), and a write
that fails with EPIPE says the same. Either calls ``on_closed`` once, from one of the
console's threads; later messages to that stream are dropped, and its descriptor is
pointed at ``/dev/null`` so that the interpreter's flush at exit cannot fail.
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import queue
import select
import threading
from collections.abc import Callable
from typing import TextIO

__all__ = ["Console", "ConsoleLogHandler"]

_GONE = select.POLLERR | select.POLLHUP


class Console:
    """The one writer of ``out`` and ``err``; ``on_closed`` is called once if ``out`` is
    closed. Use :meth:`say` from any thread, :meth:`close` once at the end."""

    def __init__(self, out: TextIO, err: TextIO, on_closed: Callable[[], None]):
        self.out, self.err = out, err
        self._on_closed = on_closed
        self._closed: set[int] = set()  # ids of the streams found closed
        self._lock = threading.Lock()
        self._messages: queue.SimpleQueue[tuple[TextIO, str] | None] = queue.SimpleQueue()
        self._writer = threading.Thread(target=self._write_all, name="console", daemon=True)
        self._writer.start()
        self._wake_read, self._wake_write = os.pipe()
        self._watcher = threading.Thread(target=self._watch, name="console-watch", daemon=True)
        self._watcher.start()

    @property
    def out_closed(self) -> bool:
        """Whether standard output was found closed."""
        return id(self.out) in self._closed

    def say(self, text: str, *, error: bool = False) -> None:
        """Write ``text`` and a newline to ``out`` (``err`` with ``error``), whole."""
        self._messages.put((self.err if error else self.out, text + "\n"))

    def close(self, timeout: float = 10.0) -> None:
        """Write what was said before, then stop; return after ``timeout`` seconds at
        most (a reader that stopped reading must not keep the program alive)."""
        self._messages.put(None)
        self._writer.join(timeout)
        os.write(self._wake_write, b"x")
        self._watcher.join(timeout)
        os.close(self._wake_read)
        os.close(self._wake_write)

    def _write_all(self) -> None:
        while (message := self._messages.get()) is not None:
            stream, text = message
            if id(stream) in self._closed:
                continue
            try:
                stream.write(text)
                stream.flush()
            except (OSError, ValueError):  # EPIPE, EIO (a terminal gone), a closed file
                self._gone(stream)

    def _watch(self) -> None:
        try:
            fd = self.out.fileno()
        except (OSError, ValueError, io.UnsupportedOperation):
            return  # not a file (a test's StringIO): a write finds it closed
        poll = select.poll()
        poll.register(fd, 0)  # no events asked: only POLLERR, POLLHUP and POLLNVAL come
        poll.register(self._wake_read, select.POLLIN)
        for ready, events in poll.poll():
            if ready == fd and events & _GONE:
                self._gone(self.out)

    def _gone(self, stream: TextIO) -> None:
        with self._lock:
            if id(stream) in self._closed:
                return
            self._closed.add(id(stream))
        with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, stream.fileno())
            os.close(devnull)
        if stream is self.out:
            self._on_closed()


class ConsoleLogHandler(logging.Handler):
    """Log records (the Kafka client's warnings) as messages to the console's ``err``."""

    def __init__(self, console: Console, level: int = logging.WARNING):
        super().__init__(level)
        self.console = console
        self.setFormatter(logging.Formatter("%(name)s: %(levelname)s %(message)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.console.say(self.format(record), error=True)
