"""The admin library's error: a Kafka error code and a message."""

from __future__ import annotations

from tidelog.protocol.errors import ErrorCode

__all__ = ["AdminError"]


class AdminError(Exception):
    """A request failed with ``code``; ``message`` defaults to Kafka's text for it."""

    def __init__(self, code: int, message: str | None = None):
        self.code = ErrorCode(code)
        super().__init__(message or self.code.message or self.code.name)
