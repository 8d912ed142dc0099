"""The ZooKeeper servers' addresses, looked up ahead of kazoo and remembered.

kazoo looks up every host of the connect string again at each reconnect, one after the
other, in its connection thread. While a cluster's DNS is degraded, one reconnect can
then outlast the session: in Kubernetes, when a node goes with a CoreDNS replica on it,
about half the lookups wait out the resolver's timeouts (5 s, twice) until the node is
declared gone, and the operator's e2e run saw brokers on healthy nodes lose their
sessions that way while two of three ZooKeeper servers were up all along. The JVM that
runs Kafka's ZooKeeper client keeps name lookups for 30 s (``networkaddress.cache.ttl``).

Here a thread of the client's own looks the hosts up every ``REFRESH_S`` and whenever the
connection drops, and hands kazoo the addresses (``KazooClient.set_hosts``): a reconnect
never waits on DNS. A host whose lookup fails keeps the addresses it had (its server may
well still be there; a wrong one costs a refused connect); one never looked up is given
to kazoo by name, as before. Over TLS the server's certificate names the host, not its
address (a pod's address is not known when its certificate is made): :meth:`name_of`
gives back the name an address was looked up from, which the TLS handshake checks.
"""

from __future__ import annotations

import logging
import socket
import threading
from collections.abc import Callable

__all__ = ["REFRESH_S", "ZooKeeperAddresses", "host_ports"]

logger = logging.getLogger(__name__)

REFRESH_S = 30.0
DEFAULT_PORT = 2181

Lookup = Callable[[str, int], list[str]]


def host_ports(hosts: str) -> list[tuple[str, int]]:
    """``h1:p1,h2,[::1]:p3`` → [(host, port)], ZooKeeper's port where none is given."""
    found = []
    for item in hosts.split(","):
        host, _, port = item.strip().rpartition(":")
        if not host or host.endswith(":"):  # no port (an IPv6 literal has colons)
            host, port = item.strip(), ""
        found.append((host.strip("[]"), int(port) if port else DEFAULT_PORT))
    return found


def look_up(host: str, port: int) -> list[str]:
    """The host's addresses (IPv4 and IPv6), in the resolver's order, no repeats."""
    addresses = socket.getaddrinfo(host, port, 0, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    return list(dict.fromkeys(info[4][0] for info in addresses))


class ZooKeeperAddresses:
    """The connect string's hosts as addresses: :meth:`refresh` looks them up and calls
    ``apply`` with kazoo's hosts string whenever it changed; :meth:`start` runs it in a
    daemon thread, every ``REFRESH_S`` and at once after :meth:`connection_dropped`."""

    def __init__(
        self, hosts: str, chroot: str, apply: Callable[[str], None], lookup: Lookup = look_up
    ):
        self._hosts = host_ports(hosts)
        self._chroot = chroot
        self._apply = apply
        self._lookup = lookup
        self._known: dict[tuple[str, int], list[str]] = {}
        self._names: dict[str, str] = {}  # address → the host it was looked up from
        self._applied: str | None = None
        self._wake = threading.Event()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="zookeeper-addresses", daemon=True)

    def _hosts_string(self) -> str:
        """kazoo's hosts: each host's last known addresses, else its name."""
        parts = []
        for host, port in self._hosts:
            for address in self._known.get((host, port), [host]):
                parts.append(f"[{address}]:{port}" if ":" in address else f"{address}:{port}")
        return ",".join(parts) + self._chroot

    def refresh(self) -> None:
        for host, port in self._hosts:
            try:
                found = self._lookup(host, port)
            except OSError as error:
                known = self._known.get((host, port))
                logger.warning(
                    "cannot look up ZooKeeper host %s (%s); %s",
                    host,
                    error,
                    f"keeping its addresses {known}" if known else "kazoo will try by name",
                )
                continue
            if found:
                self._known[(host, port)] = found
                self._names.update(dict.fromkeys(found, host))
        hosts = self._hosts_string()
        if hosts != self._applied:
            self._apply(hosts)
            self._applied = hosts

    def name_of(self, address: str) -> str:
        """The connect string's host that ``address`` was looked up from (``address``
        itself when it was not: a name kazoo was given as it is)."""
        return self._names.get(address, address)

    def start(self) -> None:
        self._thread.start()

    def connection_dropped(self) -> None:
        """Look the hosts up again now (kazoo's listener may call it: it only signals)."""
        self._wake.set()

    def stop(self) -> None:
        self._stopped.set()
        self._wake.set()

    def _run(self) -> None:
        while not self._stopped.is_set():
            self._wake.wait(REFRESH_S)
            self._wake.clear()
            if not self._stopped.is_set():
                self.refresh()
