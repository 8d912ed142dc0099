"""A progress bar for long-running work of the command-line tools, on stderr so that
stdout stays the tool's output.

On a terminal the bar is one line redrawn in place; elsewhere (a log, a pipe, a test) it
prints a line each time the work passes another tenth, and at the end, so a log shows
progress without a line per poll.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import TextIO

__all__ = ["ProgressBar", "format_bytes", "wait_with_progress"]

WIDTH = 30


def format_bytes(count: float) -> str:
    for unit in ("B", "KB", "MB", "GB"):
        if abs(count) < 1000 or unit == "GB":
            return f"{count:.0f} {unit}" if unit == "B" else f"{count:.1f} {unit}"
        count /= 1000
    raise AssertionError("unreachable")


class ProgressBar:
    """``[#####---------]  33%  1.2 MB of 3.6 MB  <note>``."""

    def __init__(self, total: int, stream: TextIO | None = None):
        self.total = max(total, 0)
        self.stream = sys.stderr if stream is None else stream
        self._tty = self.stream.isatty()
        self._last_tenth = -1

    def line(self, done: int, note: str = "") -> str:
        fraction = 1.0 if self.total == 0 else min(max(done, 0) / self.total, 1.0)
        filled = round(fraction * WIDTH)
        bar = "#" * filled + "-" * (WIDTH - filled)
        amounts = f"{format_bytes(min(done, self.total))} of {format_bytes(self.total)}"
        return f"[{bar}] {fraction:4.0%}  {amounts}" + (f"  {note}" if note else "")

    def update(self, done: int, note: str = "") -> None:
        text = self.line(done, note)
        if self._tty:
            self.stream.write("\r\x1b[K" + text)
        else:
            tenth = 10 if self.total == 0 else int(10 * min(done, self.total) / self.total)
            if tenth == self._last_tenth:
                return
            self._last_tenth = tenth
            self.stream.write(text + "\n")
        self.stream.flush()

    def close(self) -> None:
        if self._tty:
            self.stream.write("\n")
            self.stream.flush()


def wait_with_progress(
    poll: Callable[[], tuple[int, int, str, bool]],
    *,
    interval: float = 1.0,
    stream: TextIO | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> None:
    """Call ``poll`` (→ bytes done, bytes in all, a note, finished) every ``interval``
    seconds, drawing the bar, until it says finished."""
    bar = None
    try:
        while True:
            done, total, note, finished = poll()
            if bar is None or bar.total != total:
                bar = ProgressBar(total, stream)
            bar.update(total if finished else done, note)
            if finished:
                return
            sleep(interval)
    finally:
        if bar is not None:
            bar.close()
