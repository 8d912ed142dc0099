"""The ZooKeeper servers' addresses handed to kazoo: looked up ahead, kept through a
failed lookup (a degraded cluster DNS), the name where none was ever found."""

import socket

import pytest

from tidelog.controller.zk_addresses import ZooKeeperAddresses, host_ports


class Resolver:
    """Answers from ``table``; a name missing from it fails as a resolver timeout does."""

    def __init__(self, table: dict[str, list[str]]):
        self.table = table

    def __call__(self, host: str, port: int) -> list[str]:
        if host not in self.table:
            raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
        return self.table[host]


@pytest.mark.parametrize(
    "hosts, expected",
    [
        ("zk-0:2181,zk-1:2182", [("zk-0", 2181), ("zk-1", 2182)]),
        ("zk-0", [("zk-0", 2181)]),
        ("[::1]:2183,127.0.0.1", [("::1", 2183), ("127.0.0.1", 2181)]),
    ],
)
def test_the_connect_strings_hosts_and_ports(hosts, expected):
    assert host_ports(hosts) == expected


def test_kazoo_gets_addresses_and_keeps_them_when_a_lookup_fails():
    applied = []
    resolver = Resolver({"zk-0": ["10.0.0.1"], "zk-1": ["10.0.0.2", "fd00::2"]})
    addresses = ZooKeeperAddresses(
        "zk-0:2181,zk-1:2181,zk-2:2181", "/tidelog", applied.append, resolver
    )
    addresses.refresh()
    assert applied == ["10.0.0.1:2181,10.0.0.2:2181,[fd00::2]:2181,zk-2:2181/tidelog"]
    resolver.table = {"zk-2": ["10.0.0.3"]}  # zk-0 and zk-1 no longer resolve
    addresses.refresh()
    assert applied[-1] == "10.0.0.1:2181,10.0.0.2:2181,[fd00::2]:2181,10.0.0.3:2181/tidelog"
    resolver.table = {"zk-0": ["10.0.0.9"], "zk-1": ["10.0.0.2", "fd00::2"], "zk-2": ["10.0.0.3"]}
    addresses.refresh()  # a server that moved is followed
    assert applied[-1] == "10.0.0.9:2181,10.0.0.2:2181,[fd00::2]:2181,10.0.0.3:2181/tidelog"
    addresses.refresh()
    assert len(applied) == 3  # unchanged: kazoo is not told again


def test_each_address_names_the_host_it_was_looked_up_from():
    """What the TLS handshake checks the server's certificate against."""
    resolver = Resolver({"zk-0": ["10.0.0.1"], "zk-1": ["10.0.0.2", "fd00::2"]})
    addresses = ZooKeeperAddresses("zk-0:2181,zk-1:2181,zk-2:2181", "", lambda _: None, resolver)
    addresses.refresh()
    assert [addresses.name_of(a) for a in ("10.0.0.1", "fd00::2", "zk-2")] == [
        "zk-0",
        "zk-1",
        "zk-2",  # never looked up: kazoo has its name
    ]
