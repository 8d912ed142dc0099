"""The authorization table covers every API the broker serves, and each whole-request
refusal is an answer every version of its API can carry."""

from __future__ import annotations

import pytest

from tidelog.protocol import ApiKey, RequestHeader, api_spec, encode_response_chunks, request_class
from tidelog.protocol.errors import ErrorCode
from tidelog.server.authorization import AUTHORIZATION, OPEN, OnCluster
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
