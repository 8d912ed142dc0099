"""OffsetCommit answers through the request dispatcher, on a real group coordinator and
logs: a client's commits with the same outcome share one response, encoded once, alone
or pipelined, each answer framed with its own correlation id; another outcome or another
version gets its own body; the bodies kept for the requests to come are bounded."""

from __future__ import annotations

import asyncio
import struct
import uuid
from types import SimpleNamespace

from coordinator.test_group_coordinator import NUM_PARTITIONS, Broker, CoordinatorConfig
from tidelog.protocol import ApiKey, RequestHeader, decode_response, encode_request
from tidelog.protocol.errors import ErrorCode
from tidelog.server import dispatch
from tidelog.server.dispatch import SHARED_BODIES_KEPT, RequestDispatcher
from tidelog.server.metadata_cache import MetadataCache, PartitionMetadata
from tidelog.server.network import ConnectionContext

TOPIC = "work"
TOPIC_PARTITIONS = SHARED_BODIES_KEPT + 1
CONTEXT = ConnectionContext("PLAINTEXT", "127.0.0.1", 40000)


def commit_frame(correlation_id: int, partitions: list[int], version: int = 8) -> bytes:
    """A commit of ``partitions`` of ``work`` outside any generation (a plain store)."""
    header = RequestHeader(
        request_api_key=ApiKey.OFFSET_COMMIT,
        request_api_version=version,
        correlation_id=correlation_id,
        client_id="answers",
    )
    body = {
        "group_id": "group",
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {
                "name": TOPIC,
                "partitions": [
                    {"partition_index": p, "committed_offset": correlation_id} for p in partitions
                ],
            }
        ],
    }
    return encode_request(header, body)


def answered(parts, version: int = 8) -> tuple[int, list[tuple[int, ErrorCode]]]:
    """(correlation id, [(partition, error)]) of a framed answer."""
    frame = b"".join(parts)
    assert struct.unpack_from(">i", frame)[0] == len(frame) - 4
    header, body = decode_response(frame[4:], ApiKey.OFFSET_COMMIT, version)
    errors = [(p.partition_index, p.error_code) for t in body.topics for p in t.partitions]
    return header.correlation_id, errors


def counting_encodes(monkeypatch) -> list[int]:
    """The version of each response body the dispatcher encodes, as it encodes it."""
    versions: list[int] = []
    encode = dispatch.encode_response_body

    def counted(api_key, version, response, **options):
        versions.append(version)
        return encode(api_key, version, response, **options)

    monkeypatch.setattr(dispatch, "encode_response_body", counted)
    return versions


def run(tmp_path, scenario) -> None:
    """``scenario(dispatcher)`` on a dispatcher whose broker leads every offsets
    partition and knows ``work`` with ``TOPIC_PARTITIONS`` partitions."""
    config = CoordinatorConfig(
        num_partitions=NUM_PARTITIONS,
        initial_rebalance_delay_ms=0,
        min_session_timeout_ms=10,
        max_session_timeout_ms=60_000,
    )
    coordinator = Broker(tmp_path, config, list(range(NUM_PARTITIONS)))

    async def main() -> None:
        await coordinator.start()
        try:
            metadata = MetadataCache("cluster")
            topic_id = uuid.uuid4()
            for p in range(TOPIC_PARTITIONS):
                metadata.update_partition(TOPIC, topic_id, PartitionMetadata(p, 1, 0, [1], [1]))
            ready = asyncio.Event()
            ready.set()
            broker = SimpleNamespace(
                ready=ready,
                group_coordinator=coordinator.coordinator,
                metadata=metadata,
                authorizer=None,
            )
            await scenario(RequestDispatcher(broker))
        finally:
            await coordinator.stop()

    asyncio.run(main())


def test_commits_with_the_same_outcome_share_one_body_alone_or_pipelined(tmp_path, monkeypatch):
    encoded = counting_encodes(monkeypatch)
    stored = [(0, ErrorCode.NONE), (1, ErrorCode.NONE), (2, ErrorCode.NONE)]

    async def scenario(dispatcher: RequestDispatcher) -> None:
        alone = [await dispatcher(commit_frame(i, [0, 1, 2]), CONTEXT) for i in (1, 2, 3)]
        burst = await dispatcher.handle_burst([commit_frame(i, [0, 1, 2]) for i in (4, 5)], CONTEXT)
        assert [answered(parts) for parts in [*alone, *burst]] == [
            (i, stored) for i in (1, 2, 3, 4, 5)
        ]
        assert encoded == [8]
        # Another outcome (a partition the cluster does not have), then another version.
        unknown = await dispatcher(commit_frame(6, [0, TOPIC_PARTITIONS]), CONTEXT)
        assert answered(unknown) == (
            6,
            [(0, ErrorCode.NONE), (TOPIC_PARTITIONS, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)],
        )
        older = await dispatcher(commit_frame(7, [0, 1, 2], version=7), CONTEXT)
        assert answered(older, version=7) == (7, stored)
        assert encoded == [8, 8, 7]

    run(tmp_path, scenario)


def test_the_bodies_kept_for_later_requests_are_bounded(tmp_path):
    """Commits with one more outcome than bodies are kept (each of another partition),
    one after another: each is answered, and the dispatcher holds no more than
    ``SHARED_BODIES_KEPT`` bodies (each pinning its response object)."""

    async def scenario(dispatcher: RequestDispatcher) -> None:
        for p in range(TOPIC_PARTITIONS):
            assert answered(await dispatcher(commit_frame(1, [p]), CONTEXT)) == (
                1,
                [(p, ErrorCode.NONE)],
            )
            assert 1 <= len(dispatcher._shared_bodies) <= SHARED_BODIES_KEPT

    run(tmp_path, scenario)
