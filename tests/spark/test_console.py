"""``tidelog_spark.console``: one thread writes every message whole, however many threads
say things at once, and a closed standard output is noticed, with or without a write."""

from __future__ import annotations

import errno
import io
import logging
import os
import stat
import threading

from tidelog_spark.console import Console, ConsoleLogHandler


class RecordingStream(io.StringIO):
    """A text stream that remembers which thread made each write."""

    def __init__(self) -> None:
        super().__init__()
        self.writers: set[str] = set()

    def write(self, text: str) -> int:
        self.writers.add(threading.current_thread().name)
        return super().write(text)


def test_concurrent_writers_never_interleave_within_a_line():
    out, err = RecordingStream(), RecordingStream()
    console = Console(out, err, on_closed=lambda: None)
    start = threading.Barrier(8)

    def say_many(writer: int) -> None:
        start.wait()
        for n in range(300):
            console.say(f"writer {writer} line {n} " + "x" * (n % 50), error=writer % 2 == 1)

    threads = [threading.Thread(target=say_many, args=(w,), name=f"w{w}") for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    console.close()
    assert out.writers | err.writers == {"console"}
    for stream, writers in ((out, (0, 2, 4, 6)), (err, (1, 3, 5, 7))):
        lines = stream.getvalue().split("\n")
        assert lines.pop() == ""  # every message ends with its newline
        expected = {f"writer {w} line {n} " + "x" * (n % 50) for w in writers for n in range(300)}
        assert sorted(lines) == sorted(expected)
        for w in writers:  # and each writer's lines keep their order
            mine = [line for line in lines if line.startswith(f"writer {w} ")]
            assert [int(line.split()[3]) for line in mine] == list(range(300))


def test_log_records_go_to_err_through_the_console():
    out, err = RecordingStream(), RecordingStream()
    console = Console(out, err, on_closed=lambda: None)
    logger = logging.getLogger("tidelog-tests.console")
    logger.addHandler(ConsoleLogHandler(console))
    try:
        logger.warning("two\nlines")
        logger.info("below the handler's level")
    finally:
        logger.handlers.clear()
    console.close()
    assert err.getvalue() == "tidelog-tests.console: WARNING two\nlines\n"
    assert err.writers == {"console"}
    assert out.getvalue() == ""


def pipe_console() -> tuple[Console, int, threading.Event, list[None]]:
    """A console whose stdout is a pipe; the pipe's reading end; an event set and a list
    appended to at each call of ``on_closed``."""
    read_end, write_end = os.pipe()
    closed, calls = threading.Event(), []

    def on_closed() -> None:
        calls.append(None)
        closed.set()

    console = Console(os.fdopen(write_end, "w"), io.StringIO(), on_closed=on_closed)
    return console, read_end, closed, calls


def test_a_closed_stdout_is_noticed_before_anything_is_written():
    console, read_end, closed, calls = pipe_console()
    try:
        assert not console.out_closed
        os.close(read_end)
        assert closed.wait(timeout=10), "on_closed was not called"
        assert console.out_closed
        # the descriptor now leads nowhere, so the interpreter's last flush cannot fail
        assert stat.S_ISCHR(os.fstat(console.out.fileno()).st_mode)
        console.say("after the reader went away")
    finally:
        console.close()
        console.out.close()
    assert calls == [None]


class BrokenPipe(io.StringIO):
    """A stdout whose reader is gone: every write fails with EPIPE."""

    def __init__(self) -> None:
        super().__init__()
        self.attempts = 0

    def write(self, text: str) -> int:
        self.attempts += 1
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def test_a_write_to_a_closed_stdout_stops_the_writing_and_calls_on_closed_once():
    calls: list[None] = []
    console = Console(BrokenPipe(), io.StringIO(), on_closed=lambda: calls.append(None))
    for n in range(3):
        console.say(f"line {n}")
    console.close()
    assert calls == [None]
    assert console.out_closed
    assert console.out.attempts == 1  # the later lines were dropped, not tried
    console.say("after the close")  # no error either
