"""What the real-client integration tests share: the records they send, topics, the check
that every record came back, the codec of the batches on disk, proxies that read the
frames between a client and a broker (one loses produce responses), and raw protocol
round trips over a plain socket."""

from __future__ import annotations

import contextlib
import itertools
import socket
import struct
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from tidelog.protocol import (
    ApiKey,
    RequestHeader,
    decode_response,
    encode_request,
    request_header_version,
)
from tidelog.records.batch import iter_batch_headers

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")
CODEC_IDS = {"none": 0, "gzip": 1, "snappy": 2, "lz4": 3, "zstd": 4}

Headers = tuple[tuple[str, bytes | None], ...]


@dataclass(frozen=True)
class Record:
    key: bytes | None
    value: bytes | None
    headers: Headers


@dataclass(frozen=True)
class Sent:
    """A record and where the producer was told it landed."""

    record: Record
    partition: int
    offset: int


@dataclass(frozen=True)
class Consumed:
    partition: int
    offset: int
    record: Record


def make_records(count: int, tag: str, *, null_header_values: bool = True) -> list[Record]:
    """``count`` records: every fifth without a key, some without a value (never both),
    a quarter without headers, the others with two or three (one with a null value where
    the client allows it); values of varied length that compress."""
    last_header = ("null", None) if null_header_values else ("last", b"-")
    records = []
    for i in range(count):
        key = None if i % 5 == 0 else b"key-%d" % (i % 211)
        value = (
            None
            if i % 7 == 3 and key is not None
            else b"%s-%d:" % (tag.encode(), i) + (b"abcdefgh" * (i % 13))
        )
        if i % 4 == 0:
            headers: Headers = ()
        elif i % 4 == 1:
            headers = (("seq", b"%d" % i), ("tag", tag.encode()))
        else:
            headers = (("seq", b"%d" % i), ("empty", b""), last_header)
        records.append(Record(key, value, headers))
    return records


def normalize_headers(headers: Iterable[tuple[str, bytes | None]] | None) -> Headers:
    return tuple((k, None if v is None else bytes(v)) for k, v in headers or ())


def create_topics(
    bootstrap: str, names: Sequence[str], partitions: int, configs: dict | None = None
) -> None:
    admin = KafkaAdminClient(bootstrap_servers=bootstrap)
    try:
        admin.create_topics(
            [NewTopic(name, partitions, 1, topic_configs=configs or {}) for name in names]
        )
    finally:
        admin.close()


def assert_round_trip(sent: Sequence[Sent], consumed: Sequence[Consumed]) -> None:
    """Every sent record came back exactly once, at the offset its producer was told, and
    each partition's records in the order they were sent, with nothing in between."""
    expected: dict[int, list[tuple[int, Record]]] = {}
    for s in sent:
        expected.setdefault(s.partition, []).append((s.offset, s.record))
    got: dict[int, list[tuple[int, Record]]] = {}
    for c in consumed:
        got.setdefault(c.partition, []).append((c.offset, c.record))
    assert sorted(got) == sorted(expected)
    for partition, records in expected.items():
        assert [o for o, _ in records] == list(range(len(records))), partition
        assert len(got[partition]) == len(records), partition
        mismatches = [(a, b) for a, b in zip(got[partition], records, strict=True) if a != b]
        assert not mismatches, f"partition {partition}: first mismatch {mismatches[0]}"


def stored_codecs(log_dirs: Sequence[Path], topic: str) -> dict[int, int]:
    """Records per compression codec id in the batches the broker stored for ``topic``."""
    codecs: dict[int, int] = {}
    for log_dir in log_dirs:
        for segment in Path(log_dir).glob(f"{topic}-*/*.log"):
            for header in iter_batch_headers(segment.read_bytes()):
                codecs[header.compression] = (
                    codecs.get(header.compression, 0) + header.last_offset_delta + 1
                )
    return codecs


def assert_stored_compressed(log_dirs: Sequence[Path], topic: str, codec: str) -> None:
    """The batches reached the log in the producer's codec (a client may send a batch
    uncompressed when compressing it saves nothing, so most of the records, not all)."""
    stored = stored_codecs(log_dirs, topic)
    assert set(stored) <= {0, CODEC_IDS[codec]}, stored
    assert stored.get(CODEC_IDS[codec], 0) > 0.9 * sum(stored.values()), stored


# -- proxies that read Kafka frames ------------------------------------------------------


def _read_exactly(sock: socket.socket, size: int) -> bytes | None:
    chunks, left = [], size
    while left:
        chunk = sock.recv(min(left, 1 << 20))
        if not chunk:
            return None
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def read_frame(sock: socket.socket) -> bytes | None:
    """One length-prefixed frame without its prefix; None at end of stream."""
    prefix = _read_exactly(sock, 4)
    if prefix is None:
        return None
    return _read_exactly(sock, struct.unpack(">i", prefix)[0])


class FrameProxy:
    """A TCP proxy in front of a broker that reads Kafka frames both ways and shows each
    to :meth:`on_request` / :meth:`on_response`. The broker advertises the proxy's port
    (``advertised.listeners``), so every connection to it goes through the proxy: a
    client's, and another broker's (a follower fetching from it)."""

    def __init__(self, port: int = 0):
        self._listener = socket.create_server(("127.0.0.1", port))
        self.port = self._listener.getsockname()[1]
        self.target: tuple[str, int] | None = None
        self._lock = threading.Lock()
        self._sockets: list[socket.socket] = []

    def start(self, target_port: int):
        self.target = ("127.0.0.1", target_port)
        threading.Thread(target=self._accept, daemon=True).start()
        return self

    def on_request(self, connection: int, api_key: int, version: int, frame: bytes) -> None:
        """Sees each request frame before the broker does; ``connection`` numbers the
        proxied connections in the order they came."""

    def on_response(
        self, connection: int, api_key: int | None, version: int | None, frame: bytes
    ) -> bool:
        """Sees each response frame; False swallows it and closes both connections."""
        return True

    def _accept(self) -> None:
        for connection in itertools.count():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._sockets += [client, upstream]
            in_flight: dict[int, tuple[int, int]] = {}
            ends = (connection, client, upstream, in_flight)
            threading.Thread(target=self._requests, args=ends, daemon=True).start()
            threading.Thread(target=self._responses, args=ends, daemon=True).start()

    @staticmethod
    def _close(*sockets: socket.socket) -> None:
        for sock in sockets:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)
            sock.close()

    def _requests(self, connection, client, upstream, in_flight) -> None:
        try:
            while (frame := read_frame(client)) is not None:
                api_key, version, correlation_id = struct.unpack_from(">hhi", frame)
                in_flight[correlation_id] = (api_key, version)  # before the broker sees it
                self.on_request(connection, api_key, version, frame)
                upstream.sendall(struct.pack(">i", len(frame)) + frame)
        except OSError:
            pass
        self._close(client, upstream)

    def _responses(self, connection, client, upstream, in_flight) -> None:
        try:
            while (frame := read_frame(upstream)) is not None:
                (correlation_id,) = struct.unpack_from(">i", frame)
                api_key, version = in_flight.pop(correlation_id, (None, None))
                if not self.on_response(connection, api_key, version, frame):
                    break
                client.sendall(struct.pack(">i", len(frame)) + frame)
        except OSError:
            pass
        self._close(client, upstream)

    def close(self) -> None:
        """Stop listening (new connections are refused) and close every connection."""
        self._close(self._listener)  # a plain close would leave the blocked accept() going
        with self._lock:
            self._close(*self._sockets)


class ProduceResponseDropper(FrameProxy):
    """A proxy whose first ``drop`` Produce responses never reach the client: the broker
    handles the request, the proxy swallows its answer and closes both connections, so
    the client must send the same batch again.

    ``dropped`` and ``relayed`` hold the decoded Produce responses: the ones the client
    never saw and the ones it did."""

    def __init__(self, drop: int):
        super().__init__()
        self._left = drop
        self.dropped: list = []
        self.relayed: list = []

    def on_response(self, connection, api_key, version, frame) -> bool:
        if api_key != ApiKey.PRODUCE:
            return True
        _, body = decode_response(frame, api_key, version)
        with self._lock:
            drop = self._left > 0
            self._left -= drop
            (self.dropped if drop else self.relayed).append(body)
        return not drop


def produce_acknowledgements(bodies: Iterable) -> list[tuple[str, int, int, int]]:
    """(topic, partition, error code, base offset) of every partition in ``bodies``."""
    return [
        (topic.name, partition.index, partition.error_code, partition.base_offset)
        for body in bodies
        for topic in body.responses
        for partition in topic.partition_responses
    ]


def assert_retries_were_deduplicated(proxy: ProduceResponseDropper) -> None:
    """Each produce whose response was lost came again and was acknowledged with the
    offsets of its first append: the broker recognised the duplicate."""
    assert proxy.dropped, "no produce response was dropped"
    dropped = produce_acknowledgements(proxy.dropped)
    relayed = produce_acknowledgements(proxy.relayed)
    assert all(code == 0 for _, _, code, _ in dropped + relayed), dropped + relayed
    for acknowledgement in dropped:
        assert relayed.count(acknowledgement) == 1, (acknowledgement, relayed)


# -- raw requests -----------------------------------------------------------------------------


class RawClient:
    """Kafka requests over a plain socket, encoded and decoded by tidelog.protocol."""

    def __init__(self, port: int, timeout: float = 10):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self._correlation = 0

    def send(self, api_key: int, version: int, body) -> int:
        self._correlation += 1
        header = RequestHeader(
            request_api_key=api_key,
            request_api_version=version,
            correlation_id=self._correlation,
            client_id="raw-client",
        )
        assert request_header_version(api_key, version) >= 1
        frame = encode_request(header, body)
        self.sock.sendall(struct.pack(">i", len(frame)) + frame)
        return self._correlation

    def receive(self, api_key: int, version: int, correlation_id: int):
        frame = read_frame(self.sock)
        assert frame is not None, "the broker closed the connection"
        header, body = decode_response(frame, api_key, version)
        assert header.correlation_id == correlation_id
        return body

    def request(self, api_key: int, version: int, body):
        return self.receive(api_key, version, self.send(api_key, version, body))

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> RawClient:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


# -- offsets by timestamp ---------------------------------------------------------------------

# Small segments and a dense time index, so that lookups cross segments and index entries.
TIMESTAMP_TOPIC_CONFIGS = {"segment.bytes": "4096", "index.interval.bytes": "256"}
BASE_TIMESTAMP = 1_700_000_000_000


def timestamped_records(count: int = 300) -> list[tuple[bytes, bytes, int]]:
    """(key, value, timestamp): timestamps rising by 10 ms, but every seventh record 35 ms
    older than its predecessor and every eleventh repeating the one before."""
    records, previous = [], BASE_TIMESTAMP
    for i in range(count):
        if i % 7 == 6:
            timestamp = previous - 35
        elif i % 11 == 10:
            timestamp = previous
        else:
            timestamp = BASE_TIMESTAMP + 10 * i
        records.append((b"k%d" % i, b"value-%d-" % i + b"x" * (i % 50), timestamp))
        previous = timestamp
    return records


def timestamp_targets(timestamps: Sequence[int]) -> list[int]:
    """Every timestamp, one below and one above it, and before and after them all."""
    targets = {t + d for t in timestamps for d in (-1, 0, 1)}
    return sorted(targets | {0, max(timestamps) + 1})


def expected_offset(timestamps: Sequence[int], target: int) -> tuple[int, int] | None:
    """(offset, timestamp) of the first record at or after ``target``, by offset: what
    ListOffsets answers for a timestamp."""
    for offset, timestamp in enumerate(timestamps):
        if timestamp >= target:
            return offset, timestamp
    return None
