"""Kafka's sasl.jaas.config syntax read into one JaasEntry."""

import pytest

from tidelog.security.jaas import parse_jaas_config
from tidelog.server.config_key import ConfigError

PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def test_plain_client_entry_with_double_quotes():
    entry = parse_jaas_config(f'{PLAIN} required username="alice" password="alice-secret";')
    assert entry.login_module == PLAIN
    assert entry.control_flag == "required"
    assert entry.options == {"username": "alice", "password": "alice-secret"}


def test_server_entry_with_users_single_quotes_escapes_and_comments():
    text = f"""
        {PLAIN} REQUIRED // the broker's own
            username="admin" password='adm;in' /* users: */ user_admin="adm;in"
            user_bob="b\\"o\\\\b" token=bare-word_1.$x;
    """
    entry = parse_jaas_config(text)
    assert entry.control_flag == "required"
    assert entry.options == {
        "username": "admin",
        "password": "adm;in",
        "user_admin": "adm;in",
        "user_bob": 'b"o\\b',
        "token": "bare-word_1.$x",
    }


def test_entry_without_options():
    entry = parse_jaas_config("org.apache.kafka.common.security.scram.ScramLoginModule optional;")
    assert entry.options == {}
    assert entry.control_flag == "optional"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "contains 0 login modules"),
        (f"{PLAIN} required; {PLAIN} required;", "contains 2 login modules"),
        (f'{PLAIN} required username="a"', "expected ';'"),
        (f'{PLAIN} mandatory username="a";', "invalid control flag"),
        (f'{PLAIN} required username "a";', "expected '='"),
        (f"{PLAIN} required username=;", "a value for option 'username'"),
        (f'{PLAIN} required username="a', "unexpected character"),
        (f"{PLAIN} required username=a#;", "unexpected character '#'"),
        (f"{PLAIN};", "expected a control flag"),
    ],
)
def test_malformed_entries_are_refused(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_jaas_config(text)


def test_refusal_does_not_echo_option_values():
    with pytest.raises(ConfigError) as refused:
        parse_jaas_config(f'{PLAIN} required password="s3cret" user_x "y";')
    assert "s3cret" not in str(refused.value)
