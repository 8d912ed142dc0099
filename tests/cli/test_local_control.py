"""The control socket of ``tidelog-local start``: one request, one answer, over a real
unix socket; a stale socket file is replaced, a live one refused."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path

import pytest

from tidelog.cli.local_control import SOCKET_NAME, ControlError, ControlServer, request


def answer_in_background(directory: Path, words: list[str]) -> dict:
    """Send ``words`` from a thread; the returned dict gets its answer or error."""
    outcome: dict = {}

    def send() -> None:
        try:
            outcome["answer"] = request(directory, words, timeout=10)
        except ControlError as error:
            outcome["error"] = str(error)

    thread = threading.Thread(target=send)
    thread.start()
    outcome["thread"] = thread
    return outcome


def handler(words: list[str]) -> str:
    if words[0] == "refuse":
        raise ControlError("refused:\nwith a second line")
    return "did " + "+".join(words)


def serve_until_answered(server: ControlServer, outcome: dict) -> None:
    while outcome["thread"].is_alive():
        server.serve(handler, timeout=0.1)
        outcome["thread"].join(0)


def test_a_request_gets_the_handlers_answer_or_its_error_on_one_line(tmp_path):
    server = ControlServer(tmp_path)
    try:
        done = answer_in_background(tmp_path, ["restart-broker", "2"])
        serve_until_answered(server, done)
        assert done["answer"] == "did restart-broker+2"
        refused = answer_in_background(tmp_path, ["refuse", "1"])
        serve_until_answered(server, refused)
        assert refused["error"] == "refused: with a second line"
    finally:
        server.close()
    assert not (tmp_path / SOCKET_NAME).exists()


def test_no_start_process_is_one_clear_error(tmp_path):
    with pytest.raises(ControlError, match=f"no tidelog-local start is running in {tmp_path}$"):
        request(tmp_path, ["stop-broker", "1"], timeout=10)


def test_a_stale_socket_file_is_replaced_and_a_live_one_refused(tmp_path):
    stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    stale.bind(str(tmp_path / SOCKET_NAME))  # a killed start leaves its file behind
    stale.close()
    with pytest.raises(ControlError, match="no tidelog-local start is running"):
        request(tmp_path, ["stop-broker", "1"], timeout=10)
    server = ControlServer(tmp_path)
    try:
        with pytest.raises(ControlError, match="another tidelog-local start is running in"):
            ControlServer(tmp_path)
        done = answer_in_background(tmp_path, ["stop-broker", "1"])
        serve_until_answered(server, done)
        assert done["answer"] == "did stop-broker+1"
    finally:
        server.close()


def test_a_directory_too_deep_for_an_address_is_reached_relative_to_the_working_directory(
    tmp_path, monkeypatch
):
    deep = tmp_path.joinpath(*["d" * 30] * 4)
    deep.mkdir(parents=True)
    assert len(str(deep / SOCKET_NAME)) > 108
    monkeypatch.chdir(deep.parent)
    server = ControlServer(deep)
    try:
        assert server.address == os.path.join(deep.name, SOCKET_NAME)
        done = answer_in_background(deep, ["restart-broker", "3"])
        serve_until_answered(server, done)
        assert done["answer"] == "did restart-broker+3"
    finally:
        server.close()
    assert not (deep / SOCKET_NAME).exists()
