"""Delegation tokens' stored form, HMAC and SCRAM logins (tidelog.security.delegation_tokens)."""

import base64
import hashlib
import hmac
import json

import pytest

from tidelog.security.delegation_tokens import (
    DelegationTokenCache,
    TokenInfo,
    new_token_id,
    token_hmac,
)
from tidelog.security.principal import KafkaPrincipal
from tidelog.security.sasl import ScramServer
from tidelog.security.sasl_client import ScramClient

ALICE, BOB = KafkaPrincipal.user("alice"), KafkaPrincipal.user("bob b")
TOKEN = TokenInfo("tok-1", ALICE, ALICE, (BOB,), 1000, 5000, 9000)


def test_the_document_is_kafkas_and_reads_back():
    document = json.loads(TOKEN.to_json())
    assert document == {
        "version": 3,
        "owner": "User%3Aalice",
        "tokenRequester": "User%3Aalice",
        "renewers": ["User%3Abob%20b"],
        "issueTimestamp": 1000,
        "maxTimestamp": 9000,
        "expiryTimestamp": 5000,
        "tokenId": "tok-1",
    }
    assert TokenInfo.from_json(TOKEN.to_json()) == TOKEN


def test_an_older_document_without_requester_has_the_owner_as_requester():
    old = {
        "version": 1,
        "owner": "User:alice",
        "renewers": [],
        "issueTimestamp": 1,
        "maxTimestamp": 3,
        "expiryTimestamp": 2,
        "tokenId": "t",
    }
    assert TokenInfo.from_json(json.dumps(old).encode()).requester == ALICE
    with pytest.raises(ValueError, match="malformed"):
        TokenInfo.from_json(b'{"owner": "User:alice"}')


def test_hmac_is_hmac_sha512_of_the_id_under_the_secret():
    assert token_hmac("key", "tok-1") == hmac.new(b"key", b"tok-1", hashlib.sha512).digest()
    assert len(new_token_id()) == 22 and new_token_id() != new_token_id()


def test_owner_and_renewers_may_renew():
    assert TOKEN.may_renew(ALICE) and TOKEN.may_renew(BOB)
    assert not TOKEN.may_renew(KafkaPrincipal.user("carol"))


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_a_token_logs_in_as_its_owner_until_it_expires(mechanism):
    now = [4000]
    cache = DelegationTokenCache("key", lambda: now[0])
    cache.set(TOKEN)
    assert cache.by_hmac(token_hmac("key", "tok-1")) == TOKEN
    assert cache.by_hmac(token_hmac("other", "tok-1")) is None
    password = base64.b64encode(cache.hmac("tok-1")).decode()
    server = ScramServer(mechanism, {}.get, lambda t: cache.scram_login(t, mechanism))
    client = ScramClient(mechanism, "tok-1", password, token_auth=True)
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.authorization_id == "alice"
    now[0] = 5001
    assert cache.scram_login("tok-1", mechanism) is None
    cache.remove("tok-1")
    assert cache.tokens() == []
