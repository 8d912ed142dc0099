"""The authorizer's broker keys: Kafka's AclAuthorizer class (or tidelog's name for it)
accepted, any other class refused when the configuration is read, in one line that
names the accepted ones (``tidelog-server`` exits with that line:
tests/integration/test_acl_tools.py)."""

from __future__ import annotations

import pytest

from tidelog.server.config import BrokerConfig, ConfigError

ZOOKEEPER = {"zookeeper.connect": "127.0.0.1:2181"}


@pytest.mark.parametrize(
    "name",
    ["", "kafka.security.authorizer.AclAuthorizer", "tidelog.security.authorizer.AclAuthorizer"],
)
def test_accepted_authorizers(name):
    config = BrokerConfig({**ZOOKEEPER, "authorizer.class.name": name})
    assert config["authorizer.class.name"] == name
    assert config["super.users"] == "" and config["allow.everyone.if.no.acl.found"] is False


@pytest.mark.parametrize(
    ("key", "value", "says"),
    [
        (
            "authorizer.class.name",
            "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "set authorizer.class.name to kafka.security.authorizer.AclAuthorizer",
        ),
        ("super.users", "User:admin;admin", "'admin' is not <type>:<name>"),
        ("allow.everyone.if.no.acl.found", "yes", "allow.everyone.if.no.acl.found"),
    ],
)
def test_refused_in_one_line(key, value, says):
    with pytest.raises(ConfigError) as refused:
        BrokerConfig({**ZOOKEEPER, key: value})
    assert says in str(refused.value) and "\n" not in str(refused.value)
