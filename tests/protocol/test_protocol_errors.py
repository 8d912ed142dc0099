"""What the peer can get wrong: unknown api keys, unsupported versions, truncated and
corrupted frames. Each gives a RemoteProtocolError carrying its Kafka error code and the
header as far as it was read; nothing else ever escapes."""

from __future__ import annotations

import contextlib
import random
import struct

import pytest

from tidelog.protocol import (
    ApiKey,
    ErrorCode,
    MalformedMessageError,
    RemoteProtocolError,
    RequestHeader,
    UnknownApiKeyError,
    UnsupportedVersionError,
    api_specs,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
)

from .samples import sample_body, sample_header


def _request(api_key: int, version: int, variant: str = "full") -> bytes:
    spec = api_specs()[ApiKey(api_key)].request
    header = sample_header(api_key, version, "request", correlation_id=4242)
    return encode_request(header, sample_body(spec, version, variant))


def _response(api_key: int, version: int, variant: str = "full") -> bytes:
    spec = api_specs()[ApiKey(api_key)].response
    return encode_response(4242, api_key, version, sample_body(spec, version, variant))


def test_unknown_api_key():
    frame = struct.pack(">hhih", 1000, 0, 31, -1)
    with pytest.raises(UnknownApiKeyError) as caught:
        decode_request(frame)
    error = caught.value
    assert (error.api_key, error.api_version, error.correlation_id) == (1000, 0, 31)
    assert error.header.correlation_id == 31
    assert error.error_code == ErrorCode.INVALID_REQUEST


@pytest.mark.parametrize("api_key", [ApiKey.PRODUCE, ApiKey.METADATA, ApiKey.API_VERSIONS])
def test_unsupported_version_keeps_the_header(api_key):
    version = api_specs()[api_key].max_version + 1
    # A future version of a flexible API: header v2 (client id, tagged fields), any body.
    frame = struct.pack(">hhih", api_key, version, 77, 3) + b"abc" + b"\x00" + b"\x07junk"
    with pytest.raises(UnsupportedVersionError) as caught:
        decode_request(frame)
    error = caught.value
    assert error.error_code == ErrorCode.UNSUPPORTED_VERSION == 35
    assert (error.api_key, error.api_version, error.correlation_id) == (api_key, version, 77)
    assert error.header.client_id == "abc"
    assert isinstance(error, RemoteProtocolError)


def test_unsupported_version_with_unreadable_header():
    frame = struct.pack(">hhi", ApiKey.API_VERSIONS, 99, 5) + b"\x00"
    with pytest.raises(UnsupportedVersionError) as caught:
        decode_request(frame)
    assert caught.value.correlation_id == 5
    assert caught.value.header.client_id is None


def test_negative_version_is_unsupported():
    with pytest.raises(UnsupportedVersionError):
        decode_request(struct.pack(">hhih", ApiKey.FETCH, -1, 5, -1))


TRUNCATED = [
    ("produce_v9", ApiKey.PRODUCE, 9),
    ("produce_v3", ApiKey.PRODUCE, 3),
    ("fetch_v12", ApiKey.FETCH, 12),
    ("fetch_v15", ApiKey.FETCH, 15),
    ("metadata_v12", ApiKey.METADATA, 12),
    ("api_versions_v3", ApiKey.API_VERSIONS, 3),
    ("create_topics_v5", ApiKey.CREATE_TOPICS, 5),
    ("join_group_v9", ApiKey.JOIN_GROUP, 9),
]


@pytest.mark.parametrize(
    ("api_key", "version"), [t[1:] for t in TRUNCATED], ids=[t[0] for t in TRUNCATED]
)
def test_truncated_requests(api_key, version):
    frame = _request(api_key, version)
    decode_request(frame)
    for cut in range(len(frame)):
        with pytest.raises(MalformedMessageError) as caught:
            decode_request(frame[:cut])
        error = caught.value
        assert error.error_code == ErrorCode.INVALID_REQUEST
        if cut >= 8:
            assert error.correlation_id == 4242
            assert error.header.request_api_key == api_key
        elif cut >= 2:
            assert error.header.request_api_key == api_key


@pytest.mark.parametrize(
    ("api_key", "version"), [t[1:] for t in TRUNCATED], ids=[t[0] for t in TRUNCATED]
)
def test_truncated_responses(api_key, version):
    frame = _response(api_key, version)
    decode_response(frame, api_key, version)
    for cut in range(len(frame)):
        with pytest.raises(MalformedMessageError) as caught:
            decode_response(frame[:cut], api_key, version)
        if cut >= 4:
            assert caught.value.correlation_id == 4242


@pytest.mark.parametrize(
    ("api_key", "version"), [t[1:] for t in TRUNCATED], ids=[t[0] for t in TRUNCATED]
)
def test_corrupted_requests_never_escape(api_key, version):
    """Random byte flips: either a message decodes, or a RemoteProtocolError."""
    rng = random.Random(f"{api_key}-{version}")
    original = _request(api_key, version)
    for _ in range(300):
        frame = bytearray(original)
        for _ in range(rng.randint(1, 4)):
            frame[rng.randrange(len(frame))] = rng.randrange(256)
        with contextlib.suppress(RemoteProtocolError):
            decode_request(bytes(frame))


def test_huge_array_count_is_refused_before_allocating():
    header = RequestHeader(request_api_key=3, request_api_version=1, correlation_id=1)
    frame = encode_request(header, {"topics": []})
    frame = frame[:-4] + struct.pack(">i", 0x7FFFFFFF)
    with pytest.raises(MalformedMessageError, match="bytes remain"):
        decode_request(frame)


def test_null_in_a_non_nullable_field():
    header = RequestHeader(request_api_key=3, request_api_version=1, correlation_id=1)
    frame = encode_request(header, {"topics": [{"name": "t"}]})
    frame = frame[:-3] + struct.pack(">h", -1)  # the topic name as a null string
    with pytest.raises(MalformedMessageError, match="null"):
        decode_request(frame)


def test_invalid_utf8():
    header = RequestHeader(request_api_key=3, request_api_version=1, correlation_id=1)
    frame = encode_request(header, {"topics": [{"name": "ab"}]})
    with pytest.raises(MalformedMessageError):
        decode_request(frame[:-2] + b"\xff\xfe")


def test_trailing_bytes_are_ignored_as_kafka_does():
    frame = _request(ApiKey.HEARTBEAT, 4)
    assert decode_request(frame + b"\x00\x01")[1] == decode_request(frame)[1]


def test_short_frames():
    for frame in (b"", b"\x00", b"\x00\x03\x00"):
        with pytest.raises(MalformedMessageError):
            decode_request(frame)
