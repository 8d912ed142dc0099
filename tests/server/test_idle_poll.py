"""The broker's idle-polling event loop: when it polls before it sleeps, and that it
serves sockets as asyncio's own loop does. The selector runs on real sockets; only its
clock is a stepping one, so that "short" and "long" waits do not depend on this
machine's speed."""

from __future__ import annotations

import asyncio
import selectors
import socket
from collections.abc import Iterator

import pytest

from tidelog.server.idle_poll import IdlePollingSelector, new_event_loop

WINDOW_S = 0.001


class SteppingClock:
    """Advances ``step`` seconds on every reading."""

    def __init__(self, step: float):
        self.now = 0.0
        self.step = step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


@pytest.fixture
def pair() -> Iterator[tuple[socket.socket, socket.socket]]:
    reader, writer = socket.socketpair()
    yield reader, writer
    reader.close()
    writer.close()


def selector_on(reader: socket.socket, clock: SteppingClock) -> IdlePollingSelector:
    selector = IdlePollingSelector(WINDOW_S, clock)
    selector.register(reader, selectors.EVENT_READ)
    return selector


def test_ready_work_is_found_by_polling_and_polling_goes_on(pair) -> None:
    reader, writer = pair
    selector = selector_on(reader, SteppingClock(WINDOW_S / 10))
    writer.send(b"x")
    assert [key.fileobj for key, _ in selector.select(1.0)] == [reader]
    assert selector.polls_next
    selector.close()


def test_a_window_without_work_stops_polling_until_a_wait_is_short(pair) -> None:
    reader, writer = pair
    clock = SteppingClock(WINDOW_S / 10)
    selector = selector_on(reader, clock)
    assert selector.select(0.01) == []  # polled the whole window, then slept
    assert not selector.polls_next
    clock.step = WINDOW_S * 2  # a wait longer than the window keeps the loop sleeping
    writer.send(b"x")
    assert len(selector.select(1.0)) == 1
    assert not selector.polls_next
    reader.recv(1)
    clock.step = WINDOW_S / 10  # a short wait: the loop is busy again
    writer.send(b"y")
    assert len(selector.select(1.0)) == 1
    assert selector.polls_next
    selector.close()


def test_a_wait_bounded_by_a_timer_polls_until_the_timer_and_keeps_polling(pair) -> None:
    reader, _ = pair
    selector = selector_on(reader, SteppingClock(WINDOW_S / 10))
    assert selector.select(WINDOW_S / 2) == []
    assert selector.polls_next  # the gap ended with the timer, not known to be long
    selector.close()


def test_a_zero_timeout_neither_polls_nor_changes_the_state(pair) -> None:
    reader, _ = pair
    clock = SteppingClock(WINDOW_S / 10)
    selector = selector_on(reader, clock)
    assert selector.select(0) == []
    assert clock.now == 0.0  # not even read the clock
    assert selector.polls_next
    selector.close()


@pytest.mark.parametrize("idle_poll_us", [0, 200])
def test_the_loop_serves_a_tcp_round_trip(idle_poll_us: int) -> None:
    async def echo_once() -> bytes:
        async def echo(reader, writer):
            writer.write(await reader.readexactly(5))
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(echo, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"hello")
        answer = await reader.readexactly(5)
        writer.close()
        server.close()
        await server.wait_closed()
        return answer

    with asyncio.Runner(loop_factory=lambda: new_event_loop(idle_poll_us)) as runner:
        assert runner.run(echo_once()) == b"hello"
