"""The SASL server mechanisms against RFC 7677's example and against our client side."""

import base64

import pytest

from tidelog.security.jaas import parse_jaas_config
from tidelog.security.sasl import (
    PlainServer,
    SaslAuthenticationError,
    SaslFailure,
    ScramServer,
    plain_users,
)
from tidelog.security.sasl_client import SaslAuthenticationFailed, ScramClient
from tidelog.security.scram_credentials import SCRAM_MECHANISMS, ScramCredential

GENERIC = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-512"
)

# RFC 7677, section 3: SCRAM-SHA-256 for user "user", password "pencil"
RFC_CLIENT_FIRST = b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SERVER_FIRST = (
    b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096"
)
RFC_CLIENT_FINAL = (
    b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
    b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ="
)
RFC_SERVER_FINAL = b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")


def rfc_credential():
    return ScramCredential.from_password(
        SCRAM_MECHANISMS["SCRAM-SHA-256"], "pencil", 4096, RFC_SALT
    )


def test_server_answers_rfc_7677_example():
    server = ScramServer(
        "SCRAM-SHA-256",
        {"user": rfc_credential()}.get,
        nonce=lambda: RFC_SERVER_NONCE,
    )
    assert server.evaluate(RFC_CLIENT_FIRST) == RFC_SERVER_FIRST
    assert not server.complete
    assert server.evaluate(RFC_CLIENT_FINAL) == RFC_SERVER_FINAL
    assert server.complete and server.authorization_id == "user"


def test_client_speaks_rfc_7677_example():
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce="rOprNGfwEbeRWgbNEkqO")
    assert client.first() == RFC_CLIENT_FIRST
    assert client.final(RFC_SERVER_FIRST) == RFC_CLIENT_FINAL
    client.verify(RFC_SERVER_FINAL)
    with pytest.raises(SaslAuthenticationFailed, match="signature"):
        client.verify(b"v=" + base64.b64encode(b"x" * 32))


def exchange(mechanism, server, username, password):
    client = ScramClient(mechanism, username, password)
    server_first = server.evaluate(client.first())
    server_final = server.evaluate(client.final(server_first))
    client.verify(server_final)


@pytest.mark.parametrize("mechanism", sorted(SCRAM_MECHANISMS))
def test_client_and_server_agree(mechanism):
    credential = ScramCredential.from_password(SCRAM_MECHANISMS[mechanism], "s3cret", 4096)
    server = ScramServer(mechanism, {"al,i=ce": credential}.get)
    exchange(mechanism, server, "al,i=ce", "s3cret")
    assert server.authorization_id == "al,i=ce"


@pytest.mark.parametrize(("user", "password"), [("alice", "wrong"), ("mallory", "s3cret")])
def test_wrong_password_or_unknown_user_fails_with_kafkas_generic_message(user, password):
    credential = ScramCredential.from_password(SCRAM_MECHANISMS["SCRAM-SHA-512"], "s3cret")
    server = ScramServer("SCRAM-SHA-512", {"alice": credential}.get)
    with pytest.raises(SaslFailure) as failed:
        exchange("SCRAM-SHA-512", server, user, password)
    assert not isinstance(failed.value, SaslAuthenticationError)
    assert failed.value.client_message("SCRAM-SHA-512") == GENERIC
    assert not server.complete
    with pytest.raises(SaslFailure, match="over"):
        server.evaluate(b"n,,n=alice,r=abc")


def started_server(iterations=4096):
    credential = ScramCredential.from_password(
        SCRAM_MECHANISMS["SCRAM-SHA-256"], "pencil", iterations, RFC_SALT
    )
    return ScramServer("SCRAM-SHA-256", {"user": credential}.get, nonce=lambda: RFC_SERVER_NONCE)


@pytest.mark.parametrize(
    ("client_first", "reason"),
    [
        (b"p=tls-unique,,n=user,r=abc", "client first message"),
        (b"n,,m=ext,n=user,r=abc", "client first message"),
        (b"n,,n=user", "client first message"),
        (b"n,,n=us=er,r=abc", "bad escape"),
        (b"n,,n=user,r=abc,tokenauth=true", "no SCRAM-SHA-256 credential"),
        (b"n,,n=user,r=abc,other=1", "Unsupported SCRAM extensions"),
        (b"n,,n=user,r=abc,broken", "Invalid SCRAM extension"),
        (b"\xff\xfe", "not UTF-8"),
    ],
)
def test_malformed_client_first_fails(client_first, reason):
    with pytest.raises(SaslFailure, match=reason):
        started_server().evaluate(client_first)


def test_authorization_id_other_than_user_is_told_to_the_client():
    with pytest.raises(SaslAuthenticationError) as failed:
        started_server().evaluate(b"n,a=admin,n=user,r=abc")
    assert "authorization id that is different from username" in failed.value.client_message("x")
    started_server().evaluate(b"n,a=user,n=user,r=abc")


def test_too_few_stored_iterations_fail():
    with pytest.raises(SaslFailure, match="less than the minimum 4096"):
        started_server(iterations=4095).evaluate(RFC_CLIENT_FIRST)


@pytest.mark.parametrize(
    ("client_final", "reason"),
    [
        (RFC_CLIENT_FINAL.replace(b"c=biws", b"c=eSws"), "channel binding"),
        (RFC_CLIENT_FINAL.replace(b"$k0,", b"$k1,"), "nonce"),
        (RFC_CLIENT_FINAL.replace(b"p=dHzb", b"p=dHzc"), "credentials"),
        (RFC_CLIENT_FINAL[:-10], "base64|proof"),
        (b"c=biws,r=x", "client final message"),
    ],
)
def test_bad_client_final_fails(client_final, reason):
    server = started_server()
    server.evaluate(RFC_CLIENT_FIRST)
    with pytest.raises(SaslFailure, match=reason):
        server.evaluate(client_final)
    assert not server.complete


def test_token_authentication_makes_the_owner_the_user():
    mechanism = SCRAM_MECHANISMS["SCRAM-SHA-512"]
    token_hmac = base64.b64encode(b"token-hmac").decode()
    credential = ScramCredential.from_password(mechanism, token_hmac)
    server = ScramServer(
        "SCRAM-SHA-512", {}.get, tokens={"token-id": (credential, "alice", 10**13)}.get
    )
    client = ScramClient("SCRAM-SHA-512", "token-id", token_hmac, token_auth=True)
    assert client.first().endswith(b",tokenauth=true")
    client.verify(server.evaluate(client.final(server.evaluate(client.first()))))
    assert server.authorization_id == "alice" and server.token_authenticated
    assert server.credential_expiry_ms == 10**13


PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";'
)


def plain_server():
    return PlainServer(plain_users(parse_jaas_config(PLAIN_JAAS)))


def test_plain_users_come_from_user_options():
    assert plain_users(parse_jaas_config(PLAIN_JAAS)) == {
        "admin": "admin-pw",
        "alice": "alice-pw",
    }


@pytest.mark.parametrize("token", [b"\0alice\0alice-pw", b"alice\0alice\0alice-pw"])
def test_plain_accepts_the_user(token):
    server = plain_server()
    assert server.evaluate(token) == b""
    assert server.complete and server.authorization_id == "alice"


@pytest.mark.parametrize(
    ("token", "message", "told"),
    [
        (b"\0alice\0wrong", "Authentication failed: Invalid username or password", True),
        (b"\0bob\0alice-pw", "Authentication failed: Invalid username or password", True),
        (b"\0\0alice-pw", "Authentication failed: username not specified", True),
        (b"\0alice\0", "Authentication failed: password not specified", True),
        (b"admin\0alice\0alice-pw", "different from username", True),
        (b"alice-pw", "Invalid SASL/PLAIN response: expected 3 tokens, got 1", True),
        (b"\0al\xffice\0pw", "not UTF-8", False),
    ],
)
def test_plain_refusals(token, message, told):
    server = plain_server()
    with pytest.raises(SaslFailure, match=message) as failed:
        server.evaluate(token)
    assert isinstance(failed.value, SaslAuthenticationError) is told
    assert not server.complete


def test_plain_takes_one_message():
    server = plain_server()
    server.evaluate(b"\0alice\0alice-pw")
    with pytest.raises(SaslFailure):
        server.evaluate(b"\0alice\0alice-pw")
