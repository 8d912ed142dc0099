"""Malformed input over plain sockets: random, truncated, mutated, mis-typed and
oversized frames, unknown API keys and versions, hostile values in well-formed requests.
The broker answers what it can decode (UNSUPPORTED_VERSION with its ranges for an
ApiVersions it does not know), closes that one connection with a log line otherwise,
never crashes, and serves a well-behaved client all along."""

from __future__ import annotations

import socket
import struct
import threading
import time

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st
from kafka import KafkaConsumer, KafkaProducer, TopicPartition

from integration.broker_process import BrokerProcess
from integration.clients import RawClient, create_topics, read_frame
from protocol.samples import VARIANTS, sample_body, sample_header
from tidelog.protocol import (
    ApiKey,
    RemoteProtocolError,
    UnsupportedVersionError,
    api_specs,
    decode_request,
    decode_response,
    encode_request,
    request_class,
    request_header_version,
)
from tidelog.records import build_batch
from waiting import wait_until

MAX_REQUEST_BYTES = 64 * 1024
IDLE_MS = 2000
SPECS = api_specs()
# APIs whose well-formed requests are fair game for random values: none of them creates,
# deletes or alters anything but the fuzz topic's records.
SAFE = [
    ApiKey.PRODUCE,
    ApiKey.FETCH,
    ApiKey.LIST_OFFSETS,
    ApiKey.METADATA,
    ApiKey.API_VERSIONS,
    ApiKey.INIT_PRODUCER_ID,
    ApiKey.FIND_COORDINATOR,
]
UNKNOWN_KEYS = st.one_of(st.integers(-(2**15), -1), st.integers(max(SPECS) + 1, 2**15 - 1))
PROBE_ID = 2_000_000_000
TOPIC = "fuzz"


@pytest.fixture(scope="module")
def broker(module_chroot, tmp_path_factory):
    """One broker for the module, on a chroot of its own."""
    process = BrokerProcess(
        tmp_path_factory.mktemp("malformed"),
        module_chroot,
        overrides={
            "socket.request.max.bytes": str(MAX_REQUEST_BYTES),
            "message.max.bytes": str(MAX_REQUEST_BYTES // 2),
            "connections.max.idle.ms": str(IDLE_MS),
            "auto.create.topics.enable": "false",
        },
    ).start()
    create_topics(process.bootstrap, [TOPIC, "steady"], 2)
    yield process
    assert process.stop() == 0, process.log()[-3000:]


class SteadyClient(threading.Thread):
    """A well-behaved kafka-python producer sending a record every 20 ms."""

    def __init__(self, bootstrap: str):
        super().__init__(daemon=True)
        self.producer = KafkaProducer(bootstrap_servers=bootstrap, acks=1, max_block_ms=5000)
        self.sent: list[bytes] = []
        self.errors: list[Exception] = []
        self._stopping = threading.Event()

    def run(self) -> None:
        while not self._stopping.wait(0.02):
            value = b"steady-%d" % len(self.sent)
            try:
                self.producer.send("steady", value, partition=0).get(timeout=10)
                self.sent.append(value)
            except Exception as error:
                self.errors.append(error)

    def stop(self) -> None:
        self._stopping.set()
        self.join(15)
        self.producer.close(timeout=5)


@pytest.fixture(scope="module")
def steady(broker):
    client = SteadyClient(broker.bootstrap)
    client.start()
    yield client
    client.stop()


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def header(api_key: int, version: int, correlation_id: int = 7) -> bytes:
    flexible = api_key in SPECS and request_header_version(api_key, version) >= 2
    client_id = b"fuzzer"
    raw = struct.pack(">hhih", api_key, version, correlation_id, len(client_id)) + client_id
    return raw + (b"\x00" if flexible else b"")


def probe() -> bytes:
    """A well-formed ApiVersions v3 request, sent after each malformed frame."""
    return framed(
        encode_request(
            sample_header(ApiKey.API_VERSIONS, 3, "request", PROBE_ID),
            {"client_software_name": "probe", "client_software_version": "1"},
        )
    )


# -- what a connection gets ------------------------------------------------------------------


def sample_request(key: int, version: int, variant: str, seed: int) -> bytes:
    spec = SPECS[key]
    body = sample_body(spec.request, version, variant, seed)
    return encode_request(sample_header(key, version, "request", 7), body)


safe_versions = st.sampled_from(SAFE).flatmap(
    lambda key: st.tuples(st.just(key), st.integers(SPECS[key].min_version, SPECS[key].max_version))
)
samples = st.builds(
    lambda kv, variant, seed: sample_request(kv[0], kv[1], variant, seed),
    safe_versions,
    st.sampled_from(VARIANTS),
    st.integers(1, 10_000),
)


@st.composite
def truncated(draw) -> bytes:
    frame = draw(samples)
    return frame[: draw(st.integers(0, len(frame) - 1))]


@st.composite
def mutated(draw) -> bytes:
    """Bytes overwritten anywhere after the api key (which stays a safe one)."""
    frame = bytearray(draw(samples))
    for _ in range(draw(st.integers(1, 4))):
        position = draw(st.integers(2, len(frame) - 1))
        frame[position] = draw(st.integers(0, 255))
    return bytes(frame)


@st.composite
def mistyped(draw) -> bytes:
    """The header of one API in front of the body of another."""
    key, version = draw(safe_versions)
    other = draw(st.sampled_from(sorted(SPECS)))
    other_version = draw(st.integers(SPECS[other].min_version, SPECS[other].max_version))
    body = sample_request(other, other_version, draw(st.sampled_from(VARIANTS)), 1)
    return header(key, version) + body[len(header(other, other_version)) :]


@st.composite
def random_body(draw) -> bytes:
    key, version = draw(safe_versions)
    return header(key, version) + draw(st.binary(max_size=300))


@st.composite
def unknown_version(draw) -> bytes:
    key = draw(st.sampled_from(sorted(SPECS)))
    spec = SPECS[key]
    version = draw(
        st.one_of(st.integers(spec.max_version + 1, 2**15 - 1), st.integers(-(2**15), -1))
    )
    return header(key, version) + draw(st.binary(max_size=40))


@st.composite
def unknown_api(draw) -> bytes:
    return header(draw(UNKNOWN_KEYS), draw(st.integers(0, 20))) + draw(st.binary(max_size=40))


def _records(draw) -> bytes:
    """Valid batches, batches with bytes changed, or plain noise."""
    batch = build_batch([(b"k", b"v" * draw(st.integers(0, 200)))], compression=0)
    kind = draw(st.sampled_from(["valid", "damaged", "noise"]))
    if kind == "valid":
        return batch
    if kind == "noise":
        return draw(st.binary(max_size=200))
    damaged = bytearray(batch)
    damaged[draw(st.integers(0, len(damaged) - 1))] ^= draw(st.integers(1, 255))
    return bytes(damaged)


@st.composite
def hostile_values(draw) -> bytes:
    """Well-formed Produce, Fetch and ListOffsets requests for the fuzz topic with
    arbitrary partitions, offsets, sizes, timestamps and record bytes."""
    int32 = st.integers(-(2**31), 2**31 - 1)
    int64 = st.integers(-(2**63), 2**63 - 1)
    partition = st.one_of(st.integers(-2, 3), int32)
    kind = draw(st.sampled_from(["produce", "fetch", "list_offsets"]))
    if kind == "produce":
        key, version = ApiKey.PRODUCE, draw(st.sampled_from([3, 7, 9, 11]))
        body = {
            "acks": draw(st.sampled_from([-1, 1, 2, -2])),
            "timeout_ms": 1000,
            "topic_data": [
                {
                    "name": TOPIC,
                    "partition_data": [{"index": draw(partition), "records": _records(draw)}],
                }
            ],
        }
    elif kind == "fetch":
        key, version = ApiKey.FETCH, draw(st.sampled_from([4, 11, 12]))
        body = {
            "replica_id": -1,
            "max_wait_ms": draw(st.integers(0, 200)),
            "min_bytes": draw(int32),
            "max_bytes": draw(int32),
            "isolation_level": draw(st.integers(0, 1)),
            "topics": [
                {
                    "topic": TOPIC,
                    "partitions": [
                        {
                            "partition": draw(partition),
                            "fetch_offset": draw(int64),
                            "log_start_offset": -1,
                            "partition_max_bytes": draw(int32),
                        }
                    ],
                }
            ],
        }
    else:
        key, version = ApiKey.LIST_OFFSETS, draw(st.sampled_from([0, 1, 5, 8]))
        wanted = {
            "partition_index": draw(partition),
            "timestamp": draw(st.one_of(st.integers(-4, 1), int64)),
        }
        if version == 0:
            wanted["max_num_offsets"] = draw(st.integers(-1, 3))
        body = {"replica_id": -1, "topics": [{"name": TOPIC, "partitions": [wanted]}]}
        if version >= 2:
            body["isolation_level"] = draw(st.integers(0, 1))
    body = request_class(key).from_dict(body)
    return encode_request(sample_header(key, version, "request", 7), body)


def _frame(frame: bytes, expected: str = "by decoding") -> tuple[str, bytes]:
    return expected, framed(frame)


def _oversized(size: int, tail: bytes) -> tuple[str, bytes]:
    return "oversized", struct.pack(">i", size) + tail


inputs = st.one_of(
    st.builds(_frame, hostile_values()),
    st.builds(_frame, samples),
    st.builds(_frame, truncated()),
    st.builds(_frame, mutated()),
    st.builds(_frame, mistyped()),
    st.builds(_frame, random_body()),
    st.builds(_frame, unknown_version()),
    st.builds(_frame, unknown_api()),
    st.builds(
        _oversized,
        st.one_of(st.integers(MAX_REQUEST_BYTES + 1, 2**31 - 1), st.integers(-(2**31), -1)),
        st.binary(max_size=64),
    ),
    st.builds(lambda data: ("garbage", data), st.binary(min_size=1, max_size=200)),
)


# -- what the broker must do -------------------------------------------------------------------


def expectation(payload: bytes) -> tuple[str, int, int, bool]:
    """What a well-behaved broker does with one frame: ("answer", key, version, whether
    a response comes) or ("close", ...)."""
    frame = payload[4:]
    try:
        request_header, body = decode_request(frame)
    except UnsupportedVersionError as error:
        if error.api_key == ApiKey.API_VERSIONS:
            return "unsupported", error.api_key, 0, True
        return "close", 0, 0, False
    except RemoteProtocolError:
        return "close", 0, 0, False
    key, version = request_header.request_api_key, request_header.request_api_version
    silent = key == ApiKey.PRODUCE and body.acks == 0
    return "answer", key, version, not silent


def exchange(port: int, payload: bytes, *, then_probe: bool) -> tuple[list[bytes], bool, int]:
    """Send ``payload`` (and the probe) on a new connection; the frames that came back,
    whether the broker closed the connection, and our port (the broker's log names it)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    local_port = sock.getsockname()[1]
    frames: list[bytes] = []
    closed = False
    try:
        sock.sendall(payload + (probe() if then_probe else b""))
        if not then_probe:
            sock.shutdown(socket.SHUT_WR)
        while True:
            frame = read_frame(sock)
            if frame is None:
                closed = True
                break
            frames.append(frame)
            if struct.unpack_from(">i", frame)[0] == PROBE_ID:
                break
    except (ConnectionResetError, BrokenPipeError):
        closed = True
    finally:
        sock.close()
    return frames, closed, local_port


def assert_logged_close(broker: BrokerProcess, local_port: int) -> None:
    wait_until(
        lambda: f"from 127.0.0.1:{local_port}" in broker.log(),
        f"a log line for the connection from {local_port}",
        5,
        interval=0.02,
    )


def assert_probe_answered(frames: list[bytes]) -> None:
    assert frames, "no answer to the probe"
    _, body = decode_response(frames[-1], ApiKey.API_VERSIONS, 3)
    assert body.error_code == 0 and body.api_keys


@settings(
    max_examples=400,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=inputs)
def test_malformed_frames_get_errors_or_a_logged_close(broker, steady, case):
    kind, payload = case
    event(kind)
    if kind == "garbage":
        exchange(broker.port, payload, then_probe=False)
    elif kind == "oversized":
        frames, closed, local_port = exchange(broker.port, payload, then_probe=True)
        assert closed and not frames
        assert_logged_close(broker, local_port)
    else:
        outcome, key, version, responds = expectation(payload)
        event(f"{outcome} {ApiKey(key).name if outcome == 'answer' else ''}")
        frames, closed, local_port = exchange(broker.port, payload, then_probe=True)
        if outcome == "close":
            assert closed and not frames
            assert_logged_close(broker, local_port)
        elif outcome == "unsupported":
            assert len(frames) == 2, (closed, frames)
            _, body = decode_response(frames[0], ApiKey.API_VERSIONS, 0)
            assert body.error_code == 35
            assert {k.api_key for k in body.api_keys} >= {int(k) for k in SAFE}
            assert_probe_answered(frames)
        else:
            assert len(frames) == (2 if responds else 1), (closed, frames, broker.log()[-2000:])
            if responds:
                decode_response(frames[0], key, version)
            assert_probe_answered(frames)
    assert broker.process.poll() is None, broker.log()[-3000:]
    with RawClient(broker.port) as client:
        metadata = client.request(ApiKey.METADATA, 12, {"topics": None})
        assert TOPIC in {t.name for t in metadata.topics}


def test_apiversions_of_an_unknown_version_gets_v0_with_error_35_and_the_ranges(broker):
    version = SPECS[ApiKey.API_VERSIONS].max_version + 1
    frames, closed, _ = exchange(
        broker.port, framed(header(ApiKey.API_VERSIONS, version, 99) + b"\x00"), then_probe=True
    )
    assert len(frames) == 2 and not closed
    response_header, body = decode_response(frames[0], ApiKey.API_VERSIONS, 0)
    assert response_header.correlation_id == 99
    assert body.error_code == 35
    ranges = {k.api_key: (k.min_version, k.max_version) for k in body.api_keys}
    for key in (ApiKey.PRODUCE, ApiKey.FETCH, ApiKey.LIST_OFFSETS, ApiKey.API_VERSIONS):
        assert ranges[key] == (0, SPECS[key].max_version)


def test_a_frame_that_stops_midway_is_closed_when_idle(broker):
    sock = socket.create_connection(("127.0.0.1", broker.port), timeout=IDLE_MS / 1000 + 10)
    local_port = sock.getsockname()[1]
    started = time.monotonic()
    sock.sendall(struct.pack(">i", 100) + b"\x00\x12\x00\x03")  # 4 bytes of 100
    assert sock.recv(1) == b""  # the broker closes it
    assert time.monotonic() - started < IDLE_MS / 1000 + 5
    sock.close()
    assert_logged_close(broker, local_port)


def test_the_well_behaved_client_was_served_throughout(broker, steady):
    """Runs after the fuzzing (same module, same broker): the steady producer never
    failed, and what it sent is there."""
    # Served after the fuzzing too (and, run alone, more than a handful of times).
    fuzzed = len(steady.sent)
    wait_until(
        lambda: steady.errors or len(steady.sent) > max(fuzzed, 10),
        "the steady producer acknowledged after the fuzzing",
    )
    sent = list(steady.sent)
    assert not steady.errors, steady.errors[:3]
    consumer = KafkaConsumer(bootstrap_servers=broker.bootstrap, enable_auto_commit=False)
    tp = TopicPartition("steady", 0)
    consumer.assign([tp])
    consumer.seek_to_beginning(tp)
    values: list[bytes] = []

    def read_all_sent() -> bool:
        values.extend(m.value for ms in consumer.poll(timeout_ms=500).values() for m in ms)
        return len(values) >= len(sent)

    try:
        wait_until(read_all_sent, f"the {len(sent)} records sent read back", interval=0)
    finally:
        consumer.close()
    assert values[: len(sent)] == sent
    assert "Traceback" not in broker.log()
