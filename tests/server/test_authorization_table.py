"""The authorization table covers every API the broker serves, each whole-request
refusal is an answer every version of its API can carry, and a client's address is
written as Kafka's authorizer matches ACL hosts against it."""

from __future__ import annotations

import pytest

from tidelog.protocol import ApiKey, RequestHeader, api_spec, encode_response_chunks, request_class
from tidelog.protocol.errors import ErrorCode
from tidelog.server.authorization import AUTHORIZATION, OPEN, OnCluster, kafka_host
from tidelog.server.authorization_refusals import refusal
from tidelog.server.dispatch import HANDLERS


def test_every_served_api_is_open_or_checked():
    unchecked = [
        ApiKey(key).name for key in HANDLERS if key not in OPEN and key not in AUTHORIZATION
    ]
    assert unchecked == []


REFUSED_WHOLE = sorted(key for key, rule in AUTHORIZATION.items() if isinstance(rule, OnCluster))


@pytest.mark.parametrize("api_key", REFUSED_WHOLE, ids=[ApiKey(k).name for k in REFUSED_WHOLE])
def test_refusals_encode_in_every_version(api_key):
    spec = api_spec(api_key)
    for version in range(spec.min_version, spec.max_version + 1):
        header = RequestHeader(
            request_api_key=api_key, request_api_version=version, correlation_id=7, client_id="t"
        )
        response = refusal(header, request_class(api_key)(), ErrorCode.CLUSTER_AUTHORIZATION_FAILED)
        assert encode_response_chunks(header, api_key, version, response, strict=False)


@pytest.mark.parametrize(
    ("peer", "host"),
    [
        ("10.0.0.1", "10.0.0.1"),
        ("::1", "0:0:0:0:0:0:0:1"),
        ("fe80::1%eth0", "fe80:0:0:0:0:0:0:1%eth0"),
        ("2001:db8::ff00:42:8329", "2001:db8:0:0:0:ff00:42:8329"),
    ],
)
def test_client_addresses_are_written_as_java_writes_them(peer, host):
    assert kafka_host(peer) == host
