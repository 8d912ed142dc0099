"""tidelog's codec against Apache Kafka 3.9.1's own serializers, byte for byte.

One JVM run (``KafkaProtocolReference.java``) serializes, with Kafka's generated message
classes:

* every sample message of ``samples.py``: each API, each version, request and response,
  with every field set to a non-default value and with nulls/defaults (read into Kafka's
  classes through its JSON converters);
* a set of messages built with the classes' setters: the everyday client and broker
  messages, tagged fields, unknown tagged fields, a nullable struct, ControlledShutdown v0;

and prints Kafka's error codes and API table. tidelog must produce the identical bytes,
decode Kafka's bytes to the same values, and agree on the tables.
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tidelog.protocol import (
    ApiKey,
    ErrorCode,
    api_specs,
    decode_request,
    decode_response,
    encode_request,
    encode_response,
    request_header_version,
    response_header_version,
)
from tidelog.protocol.primitives import parse_kafka_uuid

from .samples import (
    VARIANTS,
    all_message_versions,
    sample_body,
    sample_header,
    sample_id,
    tagged_or_records,
    to_kafka_json,
)

SAMPLES = [
    pytest.param(api, version, kind, variant, id=sample_id(api, version, kind, variant))
    for api, version, kind in all_message_versions()
    for variant in VARIANTS
]

BUILT_IDS = {
    *(f"api_versions_request_v{v}" for v in range(4)),
    *(f"api_versions_response_v{v}" for v in range(4)),
    "api_versions_response_unsupported",
    "metadata_request_v1",
    "metadata_request_v9",
    "metadata_request_v12",
    "metadata_request_v1_all_topics",
    "metadata_response_v1",
    "metadata_response_v9",
    "metadata_response_v12",
    "produce_request_v3",
    "produce_request_v9",
    "fetch_request_v4",
    "fetch_request_v12",
    "fetch_request_v13",
    "fetch_request_v15",
    "fetch_response_v4",
    "fetch_response_v12",
    "fetch_response_v13",
    "list_offsets_request_v1",
    "list_offsets_request_v7",
    "list_offsets_response_v1",
    "list_offsets_response_v7",
    "create_topics_request_v5",
    "create_topics_response_v5",
    "describe_configs_request_v1",
    "describe_configs_request_v4",
    "describe_configs_response_v1",
    "describe_configs_response_v4",
    "init_producer_id_request_v0",
    "init_producer_id_request_v4",
    "init_producer_id_response_v0",
    "init_producer_id_response_v4",
    "controlled_shutdown_request_v0",
    "controlled_shutdown_request_v3",
    "api_versions_request_v3_unknown_tags",
    "fetch_response_v12_unknown_tags",
    "consumer_group_heartbeat_response_null_assignment",
    "consumer_group_heartbeat_response_assignment",
}

TOPIC_ID = uuid.UUID("0123456789abcdef0fedcba987654321")


def _decode(entry: dict[str, Any]) -> tuple[Any, Any]:
    frame = bytes.fromhex(entry["hex"])
    if entry["kind"] == "request":
        return decode_request(frame)
    return decode_response(frame, entry["api_key"], entry["version"])


def _encode(entry: dict[str, Any], header: Any, body: Any) -> bytes:
    if entry["kind"] == "request":
        return encode_request(header, body)
    return encode_response(header, entry["api_key"], entry["version"], body)


@pytest.fixture(scope="module")
def built(kafka_reference: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {entry["id"]: entry for entry in kafka_reference["built"]}


# --------------------------------------------------------------------------------------
# Every API and version


@pytest.mark.parametrize(("api", "version", "kind", "variant"), SAMPLES)
def test_sample_matches_kafka(kafka_reference, api, version, kind, variant):
    key = sample_id(api, version, kind, variant)
    reference = kafka_reference["samples_by_id"][key]
    assert "error" not in reference, reference.get("error")
    correlation_id = kafka_reference["inputs_by_id"][key]["correlation_id"]
    header = sample_header(api.api_key, version, kind, correlation_id)
    body = sample_body(api.request if kind == "request" else api.response, version, variant)
    entry = {"kind": kind, "api_key": api.api_key, "version": version, "hex": reference["hex"]}

    assert _encode(entry, header, body).hex() == reference["hex"]
    decoded_header, decoded_body = _decode(entry)
    assert decoded_body == body
    assert decoded_header.correlation_id == correlation_id
    if kind == "request":
        assert request_header_version(api.api_key, version) == reference["header_version"]
        assert decoded_header.request_api_key == api.api_key
        assert decoded_header.request_api_version == version
    else:
        assert response_header_version(api.api_key, version) == reference["header_version"]


# --------------------------------------------------------------------------------------
# Messages built with Kafka's setters


def test_built_set_is_complete(built):
    assert set(built) == BUILT_IDS


@pytest.mark.parametrize("key", sorted(BUILT_IDS))
def test_built_message_round_trip(built, key):
    """Decode Kafka's bytes, compare every field with Kafka's JSON view of the message,
    and re-encode to the identical bytes."""
    entry = built[key]
    header, body = _decode(entry)
    api = api_specs()[ApiKey(entry["api_key"])]
    spec = api.request if entry["kind"] == "request" else api.response
    ours = to_kafka_json(body, spec, entry["version"])
    theirs = entry["body_json"]
    optional = tagged_or_records(spec, entry["version"])
    _assert_json_matches(ours, theirs, optional, path=key)
    assert _encode(entry, header, body).hex() == entry["hex"]


def _assert_json_matches(ours: Any, theirs: Any, optional: set[str], path: str) -> None:
    if isinstance(theirs, dict):
        assert isinstance(ours, dict), path
        for name, value in ours.items():
            if name not in theirs:
                assert name in optional, f"{path}.{name} missing from Kafka's view"
            elif name in optional and name.startswith("records"):
                continue
            else:
                _assert_json_matches(value, theirs[name], optional, f"{path}.{name}")
        assert set(theirs) <= set(ours) | {"recordsSizeInBytes"}, path
    elif isinstance(theirs, list):
        assert isinstance(ours, list) and len(ours) == len(theirs), path
        for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
            _assert_json_matches(a, b, optional, f"{path}[{i}]")
    else:
        assert ours == theirs, path


def test_api_versions_response_header_is_always_v0(built):
    for v in range(4):
        entry = built[f"api_versions_response_v{v}"]
        assert entry["header_version"] == 0
        header, body = _decode(entry)
        assert [k.api_key for k in body.api_keys] == [0, 18]
    header, body = _decode(built["api_versions_response_v3"])
    assert body.supported_features[0].name == "metadata.version"
    assert body.finalized_features_epoch == 7  # a tagged field
    assert body.zk_migration_ready is True  # a tagged field
    _, body = _decode(built["api_versions_response_unsupported"])
    assert body.error_code == ErrorCode.UNSUPPORTED_VERSION


def test_controlled_shutdown_v0_has_no_client_id(built):
    entry = built["controlled_shutdown_request_v0"]
    assert entry["header_version"] == 0
    header, body = _decode(entry)
    assert body.broker_id == 3
    assert header.client_id == ""  # absent from header v0: the default
    assert bytes.fromhex(entry["hex"])[8:].hex() == "00000003"


def test_fetch_request_v13_topic_ids_and_v15_replica_state(built):
    _, body = _decode(built["fetch_request_v13"])
    assert body.topics[0].topic_id == TOPIC_ID
    assert body.topics[0].topic == ""
    assert body.cluster_id == "tidelog-cluster"  # tagged
    assert body.isolation_level == 1
    _, body = _decode(built["fetch_request_v15"])
    assert (body.replica_state.replica_id, body.replica_state.replica_epoch) == (2, 77)
    assert body.replica_id == -1  # absent since v15


def test_produce_records_are_slices_of_the_frame(built):
    entry = built["produce_request_v9"]
    frame = bytes.fromhex(entry["hex"])
    _, body = decode_request(frame)
    assert body.acks == -1 and body.transactional_id is None
    partition = body.topic_data[0].partition_data[0]
    assert isinstance(partition.records, memoryview)
    assert partition.records.obj is frame
    records = bytes(partition.records)
    assert records[16] == 2  # record batch magic v2
    assert frame.find(records) > 0


def test_fetch_response_tagged_and_nullable_fields(built):
    _, body = _decode(built["fetch_response_v12"])
    p0, p1 = body.responses[0].partitions
    assert p0.aborted_transactions[0].producer_id == 1000
    assert p1.aborted_transactions is None
    assert p1.error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    assert (p1.diverging_epoch.epoch, p1.diverging_epoch.end_offset) == (2, 30)
    assert (p1.current_leader.leader_id, p1.current_leader.leader_epoch) == (2, 4)
    assert p0.diverging_epoch.epoch == -1  # tagged, absent: the default struct
    _, body = _decode(built["fetch_response_v13"])
    assert body.responses[0].topic_id == TOPIC_ID


def test_unknown_tagged_fields_are_kept(built):
    _, body = _decode(built["api_versions_request_v3_unknown_tags"])
    assert body._unknown_tagged_fields == [(3, b"\x01\x02\x03"), (70, b"")]
    _, body = _decode(built["fetch_response_v12_unknown_tags"])
    partition = body.responses[0].partitions[0]
    # Written after the known tag 1 (CurrentLeader), in tag order.
    assert partition._unknown_tagged_fields == [(5, b"\x09\x09"), (9, b"\x00")]
    assert partition.current_leader.leader_id == 1


def test_nullable_struct(built):
    _, body = _decode(built["consumer_group_heartbeat_response_null_assignment"])
    assert body.assignment is None
    _, body = _decode(built["consumer_group_heartbeat_response_assignment"])
    assert body.assignment.topic_partitions[0].topic_id == TOPIC_ID
    assert body.assignment.topic_partitions[0].partitions == [0, 2]


def test_create_topics_v5_configs(built):
    _, body = _decode(built["create_topics_request_v5"])
    orders, payments = body.topics
    assert [(c.name, c.value) for c in orders.configs] == [
        ("cleanup.policy", "compact"),
        ("retention.ms", None),
    ]
    assert [(a.partition_index, a.broker_ids) for a in payments.assignments] == [
        (0, [1, 2]),
        (1, [2, 3]),
    ]
    assert body.validate_only is True
    _, body = _decode(built["create_topics_response_v5"])
    assert body.topics[1].topic_config_error_code == ErrorCode.INVALID_CONFIG  # tagged
    assert body.topics[1].configs is None
    assert body.topics[0].configs[1].is_sensitive is True


# --------------------------------------------------------------------------------------
# Tables


def test_error_codes_match_kafka(kafka_reference):
    theirs = {e["code"]: (e["name"], e["retriable"]) for e in kafka_reference["errors"]}
    ours = {int(e): (e.name, e.retriable) for e in ErrorCode}
    assert ours == theirs


def test_api_table_matches_kafka(kafka_reference):
    listener_names = {"zkBroker": "ZK_BROKER", "broker": "BROKER", "controller": "CONTROLLER"}
    theirs = {a["api_key"]: a for a in kafka_reference["apis"]}
    assert set(theirs) == {int(k) for k in api_specs()}
    for key, api in api_specs().items():
        kafka = theirs[key]
        assert key.name == kafka["name"]
        assert (api.min_version, api.max_version) == (kafka["min_version"], kafka["max_version"])
        assert api.latest_version_unstable == kafka["latest_version_unstable"]
        assert sorted(listener_names[n] for n in api.listeners) == kafka["listeners"]
        versions = range(api.max_version + 2)
        assert [request_header_version(key, v) for v in versions] == kafka[
            "request_header_versions"
        ]
        assert [response_header_version(key, v) for v in versions] == kafka[
            "response_header_versions"
        ]


def test_kafka_uuid_text_form():
    assert parse_kafka_uuid("ASNFZ4mrze8P7cuph2VDIQ") == TOPIC_ID
