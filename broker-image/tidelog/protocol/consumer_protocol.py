"""The consumer protocol: what consumers put in a group's member metadata.

The coordinator carries these bytes without reading them, except for the topics a member
subscribes to (OffsetDelete refuses to delete offsets of a subscribed topic). Layout of
``ConsumerProtocolSubscription`` (every version starts the same way)::

    int16 version, int32 topic count, then each topic as int16 length + UTF-8
"""

from __future__ import annotations

import struct

__all__ = ["subscribed_topics"]


def subscribed_topics(metadata: bytes) -> list[str]:
    """The topics of a subscription; ValueError when the bytes are not one."""
    try:
        (count,) = struct.unpack_from(">i", metadata, 2)
        position, topics = 6, []
        for _ in range(count):
            (length,) = struct.unpack_from(">h", metadata, position)
            position += 2
            if length < 0 or position + length > len(metadata):
                raise ValueError("topic name past the end")
            topics.append(bytes(metadata[position : position + length]).decode())
            position += length
    except (struct.error, UnicodeDecodeError) as error:
        raise ValueError(f"not a consumer protocol subscription: {error}") from None
    return topics
