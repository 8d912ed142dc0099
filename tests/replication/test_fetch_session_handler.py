"""The follower's side of a fetch session (KIP-227) as pure logic: what each fetch sends
and forgets, and how answers and errors move the session id and epoch."""

from __future__ import annotations

from tidelog.protocol.errors import ErrorCode
from tidelog.replication.fetch_session import FetchSessionHandler

A, B, C = ("t", 0), ("t", 1), ("u", 0)


def in_session(session_id: int = 42) -> FetchSessionHandler:
    """A handler whose first, full fetch of A opened session ``session_id``; its next
    fetch of A is built."""
    handler = FetchSessionHandler()
    handler.build({A: 0})
    handler.handle_response(ErrorCode.NONE, session_id)
    handler.build({A: 0})
    return handler


def test_the_first_fetch_is_full_and_later_ones_send_only_what_changed():
    handler = FetchSessionHandler()
    assert (handler.session_id, handler.epoch) == (0, 0)
    assert handler.build({A: 0, B: 0}) == ({A: 0, B: 0}, [])
    assert handler.handle_response(ErrorCode.NONE, 42)
    assert (handler.session_id, handler.epoch) == (42, 1)
    assert handler.build({A: 5, B: 0, C: 0}) == ({A: 5, C: 0}, [])
    assert handler.handle_response(ErrorCode.NONE, 42)
    assert handler.epoch == 2
    assert handler.build({A: 5}) == ({}, [B, C])


def test_no_session_from_the_leader_keeps_fetches_full():
    handler = FetchSessionHandler()
    handler.build({A: 0})
    handler.handle_response(ErrorCode.NONE, 0)
    assert handler.build({A: 3}) == ({A: 3}, []) and handler.epoch == 0


def test_an_evicted_session_starts_over_with_a_new_one():
    handler = in_session()
    assert not handler.handle_response(ErrorCode.FETCH_SESSION_ID_NOT_FOUND, 0)
    assert (handler.session_id, handler.epoch) == (0, 0)
    assert handler.build({A: 0}) == ({A: 0}, [])


def test_a_wrong_epoch_or_a_lost_answer_closes_the_session_with_a_full_fetch():
    handler = in_session()
    assert not handler.handle_response(ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0)
    assert (handler.session_id, handler.epoch) == (42, 0)  # closes 42, opens another
    handler.handle_response(ErrorCode.NONE, 43)
    handler.build({A: 0})
    handler.handle_error()
    assert (handler.session_id, handler.epoch) == (43, 0)
    assert handler.build({A: 0}) == ({A: 0}, [])
