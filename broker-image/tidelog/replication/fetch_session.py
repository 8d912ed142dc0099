"""A follower's side of an incremental fetch session (KIP-227) with one leader, as Kafka's
``FetchSessionHandler`` keeps it; the leader's side is :mod:`tidelog.server.fetch_sessions`.

The first fetch is full (session id 0, epoch 0) and names every partition. When the
leader answers with a session id, the next fetches are incremental: they carry that id
and the next epoch, name only the partitions that are new or whose request changed
(fetch offset, log start offset, leader epoch, size limit), and forget the ones no longer
fetched. The leader then answers only the partitions with news.

Falling back to a full fetch: the leader does not know the session any more
(FETCH_SESSION_ID_NOT_FOUND, say after eviction) → a new session; any other session
error, or a lost connection → a full fetch that closes the old session (its id, epoch 0).
A full answer with session id 0 (no slot free on the leader) keeps the fetches full.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping

from tidelog.protocol.errors import ErrorCode

__all__ = ["SESSION_ERRORS", "FetchSessionHandler"]

_INITIAL_EPOCH = 0
_MAX_EPOCH = 2**31 - 1
SESSION_ERRORS = {
    ErrorCode.FETCH_SESSION_ID_NOT_FOUND,
    ErrorCode.INVALID_FETCH_SESSION_EPOCH,
    ErrorCode.FETCH_SESSION_TOPIC_ID_ERROR,
}


class FetchSessionHandler:
    """Builds each fetch's session fields and partitions; learns from each answer.

    Partitions are keys (any hashable) mapped to their request parameters (anything
    comparable with ``==``): a partition goes in an incremental fetch when it is new to
    the session or its parameters differ from the ones last sent."""

    def __init__(self) -> None:
        self.session_id = 0
        self.epoch = _INITIAL_EPOCH
        self._session: dict[Hashable, object] = {}  # what the leader holds
        self._pending: dict[Hashable, object] = {}  # what the fetch in flight asks

    @property
    def is_full(self) -> bool:
        return self.epoch == _INITIAL_EPOCH

    def build(self, wanted: Mapping[Hashable, object]) -> tuple[dict, list]:
        """(the partitions to send with their parameters, the partitions to forget) for a
        fetch of ``wanted``; send ``session_id`` and ``epoch`` with them."""
        self._pending = dict(wanted)
        if self.is_full:
            return dict(wanted), []
        session = self._session
        to_send = {key: asked for key, asked in wanted.items() if session.get(key) != asked}
        forgotten = [key for key in session if key not in wanted]
        return to_send, forgotten

    def handle_response(self, error_code: int, session_id: int) -> bool:
        """Learn from the answer to the fetch last built; whether its partitions can be
        used (False on an error: the next fetch is full)."""
        if error_code != ErrorCode.NONE:
            if error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND:
                self.session_id = 0
            self.epoch = _INITIAL_EPOCH
            return False
        if session_id == 0:
            self.session_id, self.epoch = 0, _INITIAL_EPOCH
        elif self.is_full:
            self.session_id, self.epoch = session_id, 1
        else:
            self.epoch = 1 if self.epoch >= _MAX_EPOCH else self.epoch + 1
        self._session = self._pending
        return True

    def handle_error(self) -> None:
        """The fetch got no answer: the next one is full and closes the session."""
        self.epoch = _INITIAL_EPOCH
