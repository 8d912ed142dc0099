"""``spec.listeners`` and ``spec.authorization`` into the brokers' keys (pure): each
listener's security protocol, what SCRAM and client certificates need, the authorizer and
its super users, and the keys a user may not set because the operator does. A real broker
serving such keys: ``test_listener_security.py``."""

from __future__ import annotations

import pytest

from tidelog_operator.broker_config import check_config
from tidelog_operator.builders import listeners
from tidelog_operator.cluster.children import desired_children
from tidelog_operator.spec import parse_cluster

STORAGE = {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}}


def cluster(**spec):
    return parse_cluster("events", "prod", {**STORAGE, **spec})


@pytest.mark.parametrize(
    ("listener", "protocol"),
    [
        ({}, "SASL_SSL"),
        ({"tls": False}, "SASL_PLAINTEXT"),
        ({"tls": False, "authentication": "none"}, "PLAINTEXT"),
        ({"authentication": "none"}, "SSL"),
        ({"authentication": "tls"}, "SSL"),
    ],
)
def test_each_listener_gets_its_protocol_beside_replication(listener, protocol):
    keys = listeners.listener_keys(cluster(listeners=[{"name": "app", "port": 9100, **listener}]))
    assert keys["listener.security.protocol.map"] == f"REPLICATION:SSL,APP:{protocol}"
    assert keys["listeners"] == "REPLICATION://0.0.0.0:9091,APP://0.0.0.0:9100"
    assert keys["inter.broker.listener.name"] == "REPLICATION"
    assert keys["listener.name.replication.ssl.client.auth"] == "required"
    assert ("listener.name.app.sasl.enabled.mechanisms" in keys) == protocol.startswith("SASL")


def test_the_default_is_one_internal_listener_with_tls_and_scram():
    spec = cluster()
    keys = listeners.listener_keys(spec)
    assert keys["listener.security.protocol.map"] == "REPLICATION:SSL,INTERNAL:SASL_SSL"
    assert keys["listener.name.internal.sasl.enabled.mechanisms"] == "SCRAM-SHA-512"
    assert keys["listener.name.internal.scram-sha-512.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required;"
    )
    assert keys["ssl.truststore.location"] == "/etc/tidelog/tls/cluster-ca/ca.crt"
    assert "authorizer.class.name" not in keys and "super.users" not in keys
    assert listeners.listener_status(spec) == [
        {
            "name": "internal",
            "type": "internal",
            "port": 9092,
            "tls": True,
            "authentication": "scram-sha-512",
            "bootstrapServers": "events-bootstrap.prod.svc:9092",
            "caSecret": "events-cluster-ca-cert",
        }
    ]


def test_certificate_users_are_checked_against_the_clients_ca_and_named_by_their_cn():
    spec = cluster(listeners=[{"name": "mtls", "port": 9093, "authentication": "tls"}])
    keys = listeners.listener_keys(spec)
    assert keys["listener.name.mtls.ssl.client.auth"] == "required"
    assert keys["listener.name.mtls.ssl.truststore.location"] == (
        "/etc/tidelog/tls/clients-ca/ca.crt"
    )
    assert keys["listener.name.mtls.ssl.principal.mapping.rules"] == (
        "RULE:^CN=([^,]+)$/$1/,DEFAULT"
    )
    mounts = {m["name"]: m["mountPath"] for m in listeners.tls_mounts(spec)}
    assert mounts["clients-ca"] == "/etc/tidelog/tls/clients-ca"
    assert "clients-ca" not in {m["name"] for m in listeners.tls_mounts(cluster())}


def test_authorization_turns_the_acl_authorizer_on_with_the_brokers_and_operator_as_super_users():
    spec = cluster(authorization={"type": "simple", "superUsers": ["admin", "User:CN=ops,O=x"]})
    keys = listeners.listener_keys(spec)
    assert keys["authorizer.class.name"] == "kafka.security.authorizer.AclAuthorizer"
    assert keys["super.users"].split(";") == [
        "User:CN=events-broker,O=tidelog.dev",
        "User:CN=events-operator,O=tidelog.dev",
        "User:admin",
        "User:CN=ops,O=x",
    ]


@pytest.mark.parametrize(
    "key",
    [
        "ssl.keystore.location",
        "ssl.truststore.password",
        "listener.name.internal.ssl.client.auth",
        "super.users",
        "authorizer.class.name",
        "sasl.enabled.mechanisms",
        "security.inter.broker.protocol",
    ],
)
def test_security_keys_in_the_spec_are_refused_as_the_operators(key):
    checked = check_config({key: "x"}, {"zookeeper.connect": "zk:2181"})
    assert checked.refused == {key: "set by the operator"}


def test_the_whole_configuration_is_one_the_broker_accepts():
    spec = cluster(
        listeners=[
            {"name": "internal", "port": 9092},
            {"name": "mtls", "port": 9093, "authentication": "tls"},
            {"name": "external", "port": 9094, "type": "nodeport", "nodePortBase": 31000},
        ],
        authorization={"type": "simple"},
    )
    children = desired_children(spec)
    assert children.config.valid, children.config.message()
