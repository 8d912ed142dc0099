"""A SASL connection's state machine (tidelog.security.authenticator) and what each SASL
listener serves (tidelog.security.sasl_listeners), without sockets."""

import asyncio
import logging

import pytest

from tidelog.protocol import ApiKey
from tidelog.protocol.errors import ErrorCode
from tidelog.security.authenticator import (
    AuthenticationSettings,
    AuthenticatorFactory,
    ConnectionAuthenticator,
    State,
)
from tidelog.security.principal import ANONYMOUS, KafkaPrincipal
from tidelog.security.sasl import PlainServer, ScramServer
from tidelog.security.sasl_client import ScramClient, plain_client_token
from tidelog.security.sasl_listeners import SaslListener, sasl_listeners
from tidelog.security.scram_credentials import SCRAM_MECHANISMS, ScramCredential
from tidelog.server.config import BrokerConfig, ConfigError
from tidelog.server.network import CloseConnection, ConnectionContext

USERS = {"alice": "alice-pw", "bob": "bob-pw"}
CREDENTIALS = {
    user: ScramCredential.from_password(SCRAM_MECHANISMS["SCRAM-SHA-512"], password)
    for user, password in USERS.items()
}
GENERIC = (
    "Authentication failed during authentication due to invalid credentials with SASL "
    "mechanism SCRAM-SHA-512"
)


class Clock:
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now


def mechanisms(name):
    if name == "PLAIN":
        return PlainServer(USERS)
    return ScramServer(name, CREDENTIALS.get)


def authenticator(reauth_ms=0, delay_ms=0, clock=None):
    context = ConnectionContext(
        "SASL_PLAINTEXT", "10.0.0.1", 5555, security_protocol="SASL_PLAINTEXT"
    )
    listener = SaslListener("SASL_PLAINTEXT", ("SCRAM-SHA-512", "PLAIN"))
    settings = AuthenticationSettings(delay_ms, reauth_ms, 1024)
    auth = ConnectionAuthenticator(context, listener, mechanisms, settings, clock or Clock())
    context.authenticator = auth
    return auth, context


def run(coroutine):
    return asyncio.run(coroutine)


def scram_login(auth, user, password):
    """SaslHandshake v1 then SaslAuthenticate: the results of the two authenticates."""
    assert auth.handshake("SCRAM-SHA-512", 1)[0] == ErrorCode.NONE
    return scram_exchange(auth, user, password)


def scram_exchange(auth, user, password):
    client = ScramClient("SCRAM-SHA-512", user, password)
    first = run(auth.authenticate(client.first()))
    if first.error_code != ErrorCode.NONE:
        return first, None
    final = run(auth.authenticate(client.final(first.auth_bytes)))
    if final.error_code == ErrorCode.NONE:
        client.verify(final.auth_bytes)
    return first, final


def test_before_authentication_only_api_versions_and_the_handshake_pass():
    auth, context = authenticator()
    auth.admit(10, ApiKey.API_VERSIONS)
    auth.admit(10, ApiKey.SASL_HANDSHAKE)
    for api_key in (ApiKey.METADATA, ApiKey.PRODUCE, ApiKey.SASL_AUTHENTICATE, 999):
        with pytest.raises(CloseConnection, match="during SASL handshake"):
            auth.admit(10, api_key)
    assert context.principal == ANONYMOUS


def test_a_frame_above_the_receive_limit_closes_before_authentication():
    auth, _ = authenticator()
    with pytest.raises(CloseConnection, match="sasl.server.max.receive.size=1024"):
        auth.admit(1025, ApiKey.SASL_HANDSHAKE)


def test_scram_login_sets_the_principal_and_admits_everything():
    auth, context = authenticator()
    assert auth.handshake("SCRAM-SHA-512", 1) == (ErrorCode.NONE, ["SCRAM-SHA-512", "PLAIN"])
    auth.admit(10, ApiKey.SASL_AUTHENTICATE)
    with pytest.raises(CloseConnection, match="Unexpected Kafka request of type API_VERSIONS"):
        auth.admit(10, ApiKey.API_VERSIONS)
    _, final = scram_exchange(auth, "alice", "alice-pw")
    assert final.error_code == ErrorCode.NONE and final.session_lifetime_ms == 0
    assert context.principal == KafkaPrincipal.user("alice")
    assert auth.admits_all()
    auth.admit(10_000_000, ApiKey.PRODUCE)
    again = run(auth.authenticate(b"x"))
    assert again.error_code == ErrorCode.ILLEGAL_SASL_STATE
    assert (
        again.error_message == "SaslAuthenticate request received after successful authentication"
    )


def test_a_wrong_password_fails_after_the_delay_with_kafkas_message(caplog, monkeypatch):
    auth, context = authenticator(delay_ms=50)
    slept = []

    async def recorded_sleep(seconds):
        slept.append(seconds)

    monkeypatch.setattr("tidelog.security.authenticator.asyncio.sleep", recorded_sleep)
    with caplog.at_level(logging.INFO, logger="tidelog.security.authenticator"):
        _, final = scram_login(auth, "alice", "wrong")
    assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert final.error_message == GENERIC
    assert slept == [0.05]
    assert auth.state is State.FAILED and context.principal == ANONYMOUS
    assert "wrong" not in caplog.text and "Failed authentication with" in caplog.text
    with pytest.raises(CloseConnection):
        auth.admit(10, ApiKey.API_VERSIONS)


def test_an_unknown_user_fails_at_the_first_message_with_the_same_message():
    auth, _ = authenticator()
    first, _ = scram_login(auth, "mallory", "x")
    assert (first.error_code, first.error_message) == (
        ErrorCode.SASL_AUTHENTICATION_FAILED,
        GENERIC,
    )


def test_an_unknown_mechanism_gets_the_enabled_list_and_fails_the_connection():
    auth, _ = authenticator()
    assert auth.handshake("GSSAPI", 1) == (
        ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        ["SCRAM-SHA-512", "PLAIN"],
    )
    with pytest.raises(CloseConnection):
        auth.admit(10, ApiKey.SASL_AUTHENTICATE)


def test_handshake_v0_takes_raw_tokens_framed_answers():
    auth, context = authenticator()
    assert auth.handshake("PLAIN", 0)[0] == ErrorCode.NONE
    assert auth.expects_raw_token
    assert run(auth.raw_token(plain_client_token("bob", "bob-pw"))) == [b"\0\0\0\0", b""]
    assert context.principal == KafkaPrincipal.user("bob") and not auth.expects_raw_token


def test_a_failed_raw_token_closes_the_connection():
    auth, _ = authenticator()
    auth.handshake("PLAIN", 0)
    with pytest.raises(CloseConnection, match="Invalid username or password"):
        run(auth.raw_token(plain_client_token("bob", "nope")))
    with pytest.raises(CloseConnection, match="sasl.server.max.receive.size"):
        auth2, _ = authenticator()
        auth2.handshake("PLAIN", 0)
        run(auth2.raw_token(b"x" * 1025))


def test_session_lifetime_and_reauthentication():
    clock = Clock()
    auth, context = authenticator(reauth_ms=60_000, clock=clock)
    _, final = scram_login(auth, "alice", "alice-pw")
    assert final.session_lifetime_ms == 60_000
    clock.now += 59.9
    auth.admit(10, ApiKey.FETCH)
    clock.now += 0.1
    assert not auth.admits_all()
    with pytest.raises(CloseConnection, match="expired without re-authentication"):
        auth.admit(10, ApiKey.FETCH)
    auth.admit(10, ApiKey.SASL_HANDSHAKE)  # re-authentication may start
    _, final = scram_login(auth, "alice", "alice-pw")
    assert final.error_code == ErrorCode.NONE and auth.admits_all()
    assert context.principal == KafkaPrincipal.user("alice")


def test_reauthentication_may_not_change_the_principal_or_the_mechanism():
    auth, context = authenticator(reauth_ms=1000)
    scram_login(auth, "alice", "alice-pw")
    _, final = scram_login(auth, "bob", "bob-pw")
    assert final.error_code == ErrorCode.SASL_AUTHENTICATION_FAILED
    assert context.principal == KafkaPrincipal.user("alice") and auth.state is State.FAILED
    auth, _ = authenticator(reauth_ms=1000)
    scram_login(auth, "alice", "alice-pw")
    assert auth.handshake("PLAIN", 1) == (ErrorCode.UNSUPPORTED_SASL_MECHANISM, ["SCRAM-SHA-512"])
    assert auth.state is State.FAILED


def test_handshake_v0_on_an_authenticated_connection_is_illegal():
    auth, _ = authenticator()
    scram_login(auth, "alice", "alice-pw")
    assert auth.handshake("SCRAM-SHA-512", 0) == (ErrorCode.ILLEGAL_SASL_STATE, [])
    assert auth.admits_all()


# -- listeners ---------------------------------------------------------------------------

PLAIN_JAAS = (
    "org.apache.kafka.common.security.plain.PlainLoginModule required "
    'username="admin" password="admin-pw" user_admin="admin-pw" user_alice="alice-pw";'
)
SCRAM_JAAS = (
    "org.apache.kafka.common.security.scram.ScramLoginModule required "
    'username="admin" password="admin-pw";'
)
BASE = {
    "zookeeper.connect": "localhost:2181",
    "listeners": "PLAINTEXT://:9092,SASL_PLAINTEXT://:9093",
}


def config(**keys):
    return BrokerConfig({**BASE, **keys})


def test_plaintext_only_has_no_sasl_listener():
    assert sasl_listeners(BrokerConfig({"zookeeper.connect": "x"})) == {}


def test_a_listener_serves_its_enabled_mechanisms_with_plains_users():
    listeners = sasl_listeners(
        config(
            **{
                "sasl.enabled.mechanisms": "GSSAPI",
                "listener.name.sasl_plaintext.sasl.enabled.mechanisms": "SCRAM-SHA-512,PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
            }
        )
    )
    assert listeners == {
        "SASL_PLAINTEXT": SaslListener(
            "SASL_PLAINTEXT",
            ("SCRAM-SHA-512", "PLAIN"),
            {"admin": "admin-pw", "alice": "alice-pw"},
        )
    }


@pytest.mark.parametrize(
    ("keys", "message"),
    [
        ({}, "Could not find a 'KafkaServer' or 'sasl_plaintext.KafkaServer' entry.*GSSAPI"),
        (
            {"sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": PLAIN_JAAS},
            "set listener.name.sasl_plaintext.plain.sasl.jaas.config",
        ),
        (
            {
                "sasl.enabled.mechanisms": "OAUTHBEARER",
                "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": SCRAM_JAAS,
            },
            "tidelog does not serve OAUTHBEARER",
        ),
        ({"sasl.enabled.mechanisms": ""}, "must not be empty"),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": "Broken",
            },
            "listener.name.sasl_plaintext.plain.sasl.jaas.config: sasl.jaas.config: expected",
        ),
        (
            {
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
                "security.inter.broker.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism.inter.broker.protocol": "SCRAM-SHA-512",
            },
            "sasl.mechanism.inter.broker.protocol must be included in sasl.enabled.mechanisms",
        ),
    ],
)
def test_a_listener_that_cannot_serve_refuses_the_start(keys, message):
    with pytest.raises(ConfigError, match=message):
        sasl_listeners(config(**keys))


def test_an_unprefixed_jaas_config_is_ignored_with_kafkas_warning(caplog):
    with caplog.at_level(logging.WARNING):
        sasl_listeners(
            config(
                **{
                    "sasl.enabled.mechanisms": "PLAIN",
                    "sasl.jaas.config": PLAIN_JAAS,
                    "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
                }
            )
        )
    assert "Server config sasl.jaas.config should be prefixed with SASL mechanism name" in (
        caplog.text
    )


def test_plain_users_only_from_kafkas_plain_login_module():
    listeners = sasl_listeners(
        config(
            **{
                "sasl.enabled.mechanisms": "PLAIN",
                "listener.name.sasl_plaintext.plain.sasl.jaas.config": SCRAM_JAAS.replace(
                    'password="admin-pw"', 'password="admin-pw" user_x="y"'
                ),
            }
        )
    )
    assert listeners["SASL_PLAINTEXT"].plain_users == {}


def test_the_factory_follows_a_new_configuration_and_skips_other_listeners():
    keys = {
        "sasl.enabled.mechanisms": "PLAIN",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": PLAIN_JAAS,
    }
    current = [config(**keys)]
    factory = AuthenticatorFactory(lambda: current[0], lambda user: {})
    plaintext = ConnectionContext("PLAINTEXT", "h", 1)
    assert factory.for_connection(plaintext) is None
    sasl = ConnectionContext("SASL_PLAINTEXT", "h", 1, security_protocol="SASL_PLAINTEXT")
    assert factory.for_connection(sasl).handshake("PLAIN", 1)[1] == ["PLAIN"]
    current[0] = config(
        **{
            **keys,
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256",
            "listener.name.sasl_plaintext.scram-sha-256.sasl.jaas.config": SCRAM_JAAS,
        }
    )
    assert factory.for_connection(sasl).handshake("PLAIN", 1)[1] == ["PLAIN", "SCRAM-SHA-256"]


def test_the_factory_reads_scram_credentials_from_the_users_configs():
    stored = {"alice": {"SCRAM-SHA-512": CREDENTIALS["alice"].to_config_value(), "x": "y"}}
    factory = AuthenticatorFactory(
        lambda: config(
            **{
                "sasl.enabled.mechanisms": "SCRAM-SHA-512",
                "listener.name.sasl_plaintext.scram-sha-512.sasl.jaas.config": SCRAM_JAAS,
            }
        ),
        lambda user: stored.get(user, {}),
    )
    context = ConnectionContext("SASL_PLAINTEXT", "h", 1, security_protocol="SASL_PLAINTEXT")
    auth = factory.for_connection(context)
    _, final = scram_login(auth, "alice", "alice-pw")
    assert final.error_code == ErrorCode.NONE


@pytest.mark.parametrize(
    ("reauth_ms", "lifetime_ms"), [(0, 30_000), (60_000, 30_000), (10_000, 10_000)]
)
def test_a_token_sessions_lifetime_ends_with_the_token(reauth_ms, lifetime_ms):
    """KIP-368 with a delegation token: the session lasts no longer than the token."""
    now_ms = 1_000_000
    token = ScramCredential.from_password(SCRAM_MECHANISMS["SCRAM-SHA-512"], "hmac-b64")

    def token_mechanisms(name):
        return ScramServer(name, {}.get, {"tok": (token, "alice", now_ms + 30_000)}.get)

    context = ConnectionContext("L", "h", 1, security_protocol="SASL_PLAINTEXT")
    auth = ConnectionAuthenticator(
        context,
        SaslListener("L", ("SCRAM-SHA-512",)),
        token_mechanisms,
        AuthenticationSettings(0, reauth_ms, 1024),
        Clock(),
        lambda: now_ms,
    )
    auth.handshake("SCRAM-SHA-512", 1)
    client = ScramClient("SCRAM-SHA-512", "tok", "hmac-b64", token_auth=True)
    first = run(auth.authenticate(client.first()))
    final = run(auth.authenticate(client.final(first.auth_bytes)))
    assert final.error_code == ErrorCode.NONE and final.session_lifetime_ms == lifetime_ms
    assert context.principal == KafkaPrincipal.user("alice") and auth.token_authenticated
