"""The broker's cache of user and client-id configs, against a real ZooKeeper, with the
znodes written as Kafka's tools write them."""

import asyncio
import json

import pytest
from kazoo.client import KazooClient

from tidelog.controller.zk_client import KafkaZkClient
from tidelog.server.entity_configs import (
    EntityConfigs,
    desanitize,
    entity_path,
    parse_entity_path,
    sanitize,
)


@pytest.fixture
def zk(zk_chroot):
    client = KafkaZkClient(zk_chroot, session_timeout_ms=6000)
    client.start()
    yield client
    client.close()


@pytest.fixture
def raw(zk_chroot):
    client = KazooClient(hosts=zk_chroot)
    client.start()
    yield client
    client.stop()
    client.close()


def write(raw, path: str, config: dict) -> None:
    raw.create(path, json.dumps({"version": 1, "config": config}).encode(), makepath=True)


@pytest.mark.parametrize(
    "name, sanitized",
    [
        ("alice", "alice"),
        ("CN=a b,O=c", "CN%3Da%20b%2CO%3Dc"),
        ("x*y~z_.-", "x%2Ay%7Ez_.-"),
        ("<default>", "<default>"),
        ("é/", "%C3%A9%2F"),
    ],
)
def test_names_are_sanitized_as_kafka_does(name, sanitized):
    assert sanitize(name) == sanitized
    assert desanitize(sanitized) == name


def test_entity_paths_round_trip():
    assert entity_path("a/b", "c 1") == ("users", "a%2Fb/clients/c%201")
    assert parse_entity_path("users", "a%2Fb/clients/c%201") == ("a/b", "c 1")
    assert entity_path(None, "<default>") == ("clients", "<default>")
    assert parse_entity_path("clients", "<default>") == (None, "<default>")
    assert parse_entity_path("users", "<default>") == ("<default>", None)
    assert parse_entity_path("users", "a/topics/b") is None
    assert parse_entity_path("topics", "a") is None
    with pytest.raises(ValueError):
        entity_path(None, None)


def test_loads_every_entity_and_refreshes_one_announced(zk, raw):
    write(raw, "/config/users/alice", {"producer_byte_rate": "1024", "SCRAM-SHA-256": "s"})
    write(raw, "/config/users/<default>/clients/<default>", {"consumer_byte_rate": "5"})
    write(raw, "/config/users/CN%3Db/clients/app%201", {"request_percentage": "50"})
    write(raw, "/config/clients/<default>", {"producer_byte_rate": "7"})
    entity_configs = EntityConfigs(zk)
    entity_configs.load()
    assert entity_configs.user("alice") == {"producer_byte_rate": "1024", "SCRAM-SHA-256": "s"}
    assert entity_configs.user_client("<default>", "<default>") == {"consumer_byte_rate": "5"}
    assert entity_configs.user_client("CN=b", "app 1") == {"request_percentage": "50"}
    assert entity_configs.client("<default>") == {"producer_byte_rate": "7"}
    # the parents made for nested entities hold no config and are not entities
    assert entity_configs.user("<default>") == {}
    assert entity_configs.user("CN=b") == {}
    assert set(entity_configs.entities()) == {
        ("alice", None),
        ("<default>", "<default>"),
        ("CN=b", "app 1"),
        (None, "<default>"),
    }

    heard = []
    entity_configs.subscribe(lambda entity_type, name: heard.append((entity_type, name)))
    zk.set_entity_config("users", "CN%3Db/clients/app%201", {"request_percentage": "60"})
    zk.set_entity_config("clients", "<default>", {})
    asyncio.run(entity_configs.refresh("users", "CN%3Db/clients/app%201"))
    asyncio.run(entity_configs.refresh("clients", "<default>"))
    assert entity_configs.user_client("CN=b", "app 1") == {"request_percentage": "60"}
    assert entity_configs.client("<default>") == {}
    assert (None, "<default>") not in entity_configs.entities()
    assert heard == [("users", "CN%3Db/clients/app%201"), ("clients", "<default>")]
