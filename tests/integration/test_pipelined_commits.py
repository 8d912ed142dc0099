"""Asynchronous commits that a consumer (confluent-kafka) pipelines on its coordinator
connection: every one is answered, in order, without error, the last one is what the
group has, and the broker appended bursts of them as single batches to
``__consumer_offsets`` (fewer batches than commits). A malformed commit among pipelined
ones closes the connection after the answers to those before it, as alone."""

from __future__ import annotations

import socket
import struct

from confluent_kafka import Consumer
from confluent_kafka import TopicPartition as CTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from integration.clients import RawClient, read_frame
from integration.test_admin_apis import wait_until_serving
from integration.test_commit_unknown_partitions import committed
from tidelog.coordinator.group_coordinator import OFFSETS_TOPIC, partition_for
from tidelog.protocol import ApiKey, RequestHeader, decode_response, encode_request
from tidelog.protocol.errors import ErrorCode
from tidelog.records.batch import iter_batch_headers
from waiting import wait_until

COMMITS = 400
PARTITIONS = 6
OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions, Kafka's default


def offsets_batches(broker, group: str) -> int:
    """Batches in the log of ``group``'s offsets partition, on whichever log dir has it."""
    name = f"{OFFSETS_TOPIC}-{partition_for(group, OFFSETS_PARTITIONS)}"
    (directory,) = [d / name for d in broker.log_dirs if (d / name).is_dir()]
    return sum(
        len(list(iter_batch_headers(path.read_bytes()))) for path in sorted(directory.glob("*.log"))
    )


def test_pipelined_async_commits_are_all_answered_and_appended_in_bursts(broker):
    wait_until_serving(broker)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("work", PARTITIONS, 1)])["work"].result(30)
    answered: list[tuple[object, list[int]]] = []
    consumer = Consumer(
        {
            "bootstrap.servers": broker.bootstrap,
            "group.id": "pipelining",
            "enable.auto.commit": False,
            "on_commit": lambda error, done: answered.append((error, [p.offset for p in done])),
        }
    )
    try:
        consumer.assign([CTopicPartition("work", p) for p in range(PARTITIONS)])
        # The first commit finds the coordinator; the rest go out back to back.
        consumer.commit(offsets=[CTopicPartition("work", 0, 0)], asynchronous=False)
        before = offsets_batches(broker, "pipelining")
        for i in range(1, COMMITS + 1):
            offsets = [CTopicPartition("work", p, i * PARTITIONS + p) for p in range(PARTITIONS)]
            consumer.commit(offsets=offsets, asynchronous=True)
        # commit callbacks run in poll
        wait_until(
            lambda: consumer.poll(0.1) or len(answered) >= COMMITS,
            f"{COMMITS} commits answered",
            interval=0,
        )
    finally:
        consumer.close()
    assert len(answered) == COMMITS
    assert [error for error, _ in answered] == [None] * COMMITS
    assert [offsets[0] for _, offsets in answered] == [
        i * PARTITIONS for i in range(1, COMMITS + 1)
    ]
    assert committed(admin, "pipelining") == {
        ("work", p): COMMITS * PARTITIONS + p for p in range(PARTITIONS)
    }
    appended = offsets_batches(broker, "pipelining") - before
    assert 1 <= appended < COMMITS, f"{appended} batches for {COMMITS} commits"


def offset_commit_frame(correlation_id: int, group: str, offset: int) -> bytes:
    """An OffsetCommit v8 of partition 0 of ``work``, with its size prefix."""
    header = RequestHeader(
        request_api_key=ApiKey.OFFSET_COMMIT,
        request_api_version=8,
        correlation_id=correlation_id,
        client_id="pipelining",
    )
    body = {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {"name": "work", "partitions": [{"partition_index": 0, "committed_offset": offset}]}
        ],
    }
    frame = encode_request(header, body)
    return struct.pack(">i", len(frame)) + frame


def cut_short(framed: bytes) -> bytes:
    """``framed`` (a request with its size prefix) without the last 9 bytes of its body,
    the prefix saying so: a request that does not decode."""
    return struct.pack(">i", len(framed) - 4 - 9) + framed[4:-9]


def test_a_malformed_commit_among_pipelined_ones_is_answered_as_if_alone(broker):
    """The burst of the three commits behind the first does not decode: each is then
    handled alone, so the two before the malformed one are answered and stored, and the
    connection closes at it, with a log line, as for a malformed request alone."""
    wait_until_serving(broker)
    admin = AdminClient({"bootstrap.servers": broker.bootstrap})
    admin.create_topics([NewTopic("work", 1, 1)])["work"].result(30)
    assert committed(admin, "raw") == {}  # and the group's coordinator is loaded
    pipelined = [
        offset_commit_frame(1, "raw", 10),
        offset_commit_frame(2, "raw", 20),
        cut_short(offset_commit_frame(3, "raw", 30)),
        offset_commit_frame(4, "raw", 40),
    ]
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(b"".join(pipelined))
        answers = [read_frame(sock) for _ in range(2)]
        after = read_frame(sock)
    assert None not in answers, "closed before answering the commits ahead of the malformed one"
    responses = [decode_response(a, ApiKey.OFFSET_COMMIT, 8) for a in answers]
    assert [header.correlation_id for header, _ in responses] == [1, 2]
    codes = [p.error_code for _, body in responses for t in body.topics for p in t.partitions]
    assert codes == [ErrorCode.NONE, ErrorCode.NONE]
    assert after is None  # closed at the malformed commit
    assert committed(admin, "raw") == {("work", 0): 20}
    assert "OffsetCommitRequest v8: malformed body" in broker.log()


def test_a_malformed_commit_with_another_request_behind_it_closes_only_its_connection(
    broker,
):
    """A malformed commit with a request of another API waiting behind it (a burst of one,
    given back): the connection closes at the commit, with a log line, and the broker
    goes on serving other connections."""
    wait_until_serving(broker)
    malformed = cut_short(offset_commit_frame(1, "raw", 10))
    header = RequestHeader(
        request_api_key=ApiKey.API_VERSIONS,
        request_api_version=3,
        correlation_id=2,
        client_id="pipelining",
    )
    probe = encode_request(header, {"client_software_name": "t", "client_software_version": "1"})
    with socket.create_connection(("127.0.0.1", broker.port), timeout=10) as sock:
        sock.sendall(malformed + struct.pack(">i", len(probe)) + probe)
        assert read_frame(sock) is None  # closed at the malformed commit
    assert "OffsetCommitRequest v8: malformed body" in broker.log()
    with RawClient(broker.port) as client:
        metadata = client.request(ApiKey.METADATA, 12, {"topics": None})
    assert metadata.brokers
