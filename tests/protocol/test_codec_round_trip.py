"""Round trips of every API, version and direction, and the codec's encoding rules.

Kafka's own bytes for the same samples are checked in ``test_kafka_golden.py``; these
tests need no Java.
"""

from __future__ import annotations

import uuid

import pytest

from tidelog.protocol import (
    ApiKey,
    LocalProtocolError,
    RequestHeader,
    ResponseHeader,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    encode_response_chunks,
    request_class,
    request_codec,
    response_class,
)

from .samples import VARIANTS, all_message_versions, sample_body, sample_header, sample_id

SAMPLES = [
    pytest.param(api, version, kind, variant, id=sample_id(api, version, kind, variant))
    for api, version, kind in all_message_versions()
    for variant in VARIANTS
]


@pytest.mark.parametrize(("api", "version", "kind", "variant"), SAMPLES)
def test_round_trip(api, version, kind, variant):
    spec = api.request if kind == "request" else api.response
    header = sample_header(api.api_key, version, kind, correlation_id=77)
    body = sample_body(spec, version, variant)
    if kind == "request":
        frame = encode_request(header, body)
        decoded_header, decoded = decode_request(frame)
        assert decoded_header == header
        again = encode_request(decoded_header, decoded)
    else:
        frame = encode_response(header, api.api_key, version, body)
        decoded_header, decoded = decode_response(frame, api.api_key, version)
        assert decoded_header == header
        again = encode_response(decoded_header, api.api_key, version, decoded)
    assert decoded == body
    assert again == frame


@pytest.mark.parametrize(("api", "version", "kind", "variant"), SAMPLES[::7])
def test_dicts_encode_like_objects(api, version, kind, variant):
    spec = api.request if kind == "request" else api.response
    body = sample_body(spec, version, variant)
    if kind == "request":
        header = sample_header(api.api_key, version, kind, correlation_id=5)
        assert encode_request(header.to_dict(), body.to_dict()) == encode_request(header, body)
    else:
        assert encode_response(5, api.api_key, version, body.to_dict()) == encode_response(
            5, api.api_key, version, body
        )


def test_absent_fields_take_defaults():
    Fetch = request_class(ApiKey.FETCH)
    frame = encode_request(
        RequestHeader(request_api_key=1, request_api_version=3, correlation_id=1, client_id="c"),
        Fetch(max_wait_ms=100, min_bytes=1, topics=[]),
    )
    _, body = decode_request(frame)
    assert body.max_bytes == 0x7FFFFFFF  # v3 has MaxBytes: encoded as given (the default)
    assert body.isolation_level == 0  # v4+: absent, default
    assert body.session_epoch == -1  # v7+: absent, JSON default -1
    assert body.rack_id == ""
    assert body.cluster_id is None
    assert body.replica_state == Fetch.ReplicaState(replica_id=-1, replica_epoch=-1)


def test_non_default_value_in_absent_field():
    Fetch = request_class(ApiKey.FETCH)
    codec = request_codec(ApiKey.FETCH, 12)
    # Ignorable (TopicId, v13+): dropped silently.
    topic = Fetch.FetchTopic(topic="t", topic_id=uuid.uuid4(), partitions=[])
    out: list = []
    codec.write(out, Fetch(topics=[topic]))
    # Not ignorable (ReplicaState, v15+): an error, as in Kafka.
    with pytest.raises(LocalProtocolError, match="replica_state does not exist in version 12"):
        encode_request(
            RequestHeader(request_api_key=1, request_api_version=12, correlation_id=1),
            Fetch(replica_state=Fetch.ReplicaState(replica_id=3, replica_epoch=1)),
        )


def test_local_errors_name_the_field():
    Metadata = request_class(ApiKey.METADATA)
    header = RequestHeader(request_api_key=3, request_api_version=9, correlation_id=1)
    with pytest.raises(LocalProtocolError, match=r"metadata_request_topic\.name|\.name"):
        encode_request(header, Metadata(topics=[Metadata.MetadataRequestTopic(name=7)]))
    Produce = request_class(ApiKey.PRODUCE)
    with pytest.raises(LocalProtocolError, match="acks"):
        encode_request(
            RequestHeader(request_api_key=0, request_api_version=9, correlation_id=1),
            Produce(acks=1 << 20),
        )
    with pytest.raises(LocalProtocolError, match="null in a non-nullable array"):
        encode_request(
            RequestHeader(request_api_key=0, request_api_version=9, correlation_id=1),
            Produce(topic_data=None),
        )
    with pytest.raises(LocalProtocolError, match="not supported"):
        encode_request(
            RequestHeader(request_api_key=0, request_api_version=99, correlation_id=1),
            Produce(),
        )
    with pytest.raises(TypeError, match="no field"):
        Produce(akcs=1)


def test_response_header_from_request_header_or_correlation_id():
    Heartbeat = response_class(ApiKey.HEARTBEAT)
    request_header = RequestHeader(request_api_key=12, request_api_version=4, correlation_id=9)
    a = encode_response(request_header, ApiKey.HEARTBEAT, 4, Heartbeat())
    b = encode_response(9, ApiKey.HEARTBEAT, 4, Heartbeat())
    c = encode_response(ResponseHeader(correlation_id=9), ApiKey.HEARTBEAT, 4, Heartbeat())
    assert a == b == c
    assert a[:4] == (9).to_bytes(4, "big")
    assert a[4] == 0  # header v1: empty tagged fields


def test_response_chunks_pass_records_through():
    Fetch = response_class(ApiKey.FETCH)
    records = memoryview(bytes(range(256)) * 64)
    body = Fetch(
        responses=[
            Fetch.FetchableTopicResponse(
                topic="t", partitions=[Fetch.PartitionData(partition_index=0, records=records)]
            )
        ]
    )
    chunks = encode_response_chunks(3, ApiKey.FETCH, 12, body)
    assert any(chunk is records for chunk in chunks)
    size = int.from_bytes(chunks[0], "big")
    frame = b"".join(chunks[1:])
    assert size == len(frame)
    assert frame == encode_response(3, ApiKey.FETCH, 12, body)
    _, decoded = decode_response(frame, ApiKey.FETCH, 12)
    assert decoded.responses[0].partitions[0].records == records


def test_unknown_tagged_fields_survive_a_round_trip():
    ApiVersions = request_class(ApiKey.API_VERSIONS)
    body = ApiVersions(client_software_name="a", client_software_version="b")
    body._unknown_tagged_fields = [(9, b"\x01"), (4, b"")]
    header = RequestHeader(request_api_key=18, request_api_version=3, correlation_id=1)
    frame = encode_request(header, body)
    assert frame.endswith(bytes([2, 4, 0, 9, 1, 1]))  # in tag order
    _, decoded = decode_request(frame)
    assert decoded._unknown_tagged_fields == [(4, b""), (9, b"\x01")]
    assert encode_request(header, decoded) == frame
