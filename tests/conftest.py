"""Session-wide fixtures: one real ZooKeeper server shared by the whole test session,
and one real Kubernetes control plane for the tests that ask for it; and an address where
a TCP connect hangs.

Tests isolate themselves with ``zk_chroot`` (a chroot of their own on that server), not
with a server each. Never stop or restart the shared server in a test: a test that needs
that runs its own :class:`~tidelog.zookeeper.ZooKeeperServer`.
"""

from __future__ import annotations

import socket
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml
from kazoo.client import KazooClient
from kubernetes import client

from kubeapi.control_plane import ControlPlane
from tidelog.zookeeper import ZooKeeperServer


@pytest.fixture
def hanging_address() -> Iterator[tuple[str, int]]:
    """A listening socket whose accept queue is full: the kernel drops a new connect's
    SYN, so the connect hangs, as one to a restarted pod's old address does."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(0)
    queued = [socket.socket() for _ in range(2)]
    for client_socket in queued:
        client_socket.setblocking(False)
        client_socket.connect_ex(listener.getsockname())
    yield listener.getsockname()
    for sock in (listener, *queued):
        sock.close()


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """The session's ZooKeeper server, on a free loopback port."""
    with ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")) as server:
        yield server


@pytest.fixture
def zk_chroot(zookeeper: ZooKeeperServer) -> str:
    """A connect string with this test's own chroot, ``127.0.0.1:<port>/test-<uuid>``.

    The chroot node exists, so kazoo clients and brokers can use it as it is.
    """
    return _new_chroot(zookeeper)


@pytest.fixture(scope="module")
def module_chroot(zookeeper: ZooKeeperServer) -> str:
    """Like ``zk_chroot``, shared by the tests of one module."""
    return _new_chroot(zookeeper)


def _new_chroot(zookeeper: ZooKeeperServer) -> str:
    """Created by a client that stops right after: no kazoo client of the fixtures stays
    connected between tests. Its connection thread draws each ping's jitter from the
    global ``random``, and Hypothesis warns when that state changes while it generates
    examples (seen in the planner's property tests, run after a ZooKeeper test in the
    same worker)."""
    path = f"/test-{uuid.uuid4().hex}"
    admin = KazooClient(hosts=zookeeper.connect_string)
    admin.start(timeout=10)
    try:
        admin.create(path)
    finally:
        admin.stop()
        admin.close()
    return f"{zookeeper.connect_string}{path}"


@pytest.fixture(scope="session")
def kube_control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """etcd + kube-apiserver + kube-controller-manager; ``.kubeconfig`` logs in as admin."""
    with ControlPlane(tmp_path_factory.mktemp("kube")) as plane:
        yield plane


@pytest.fixture(scope="session")
def tidelog_crds(kube_control_plane: ControlPlane) -> ControlPlane:
    """The control plane with the CRDs of ``crds/`` applied and established."""
    crds = Path(__file__).resolve().parents[1] / "crds"
    applied = kube_control_plane.kubectl("apply", "-f", str(crds))
    assert applied.returncode == 0, applied.stderr
    for path in sorted(crds.glob("*.yaml")):
        name = yaml.safe_load(path.read_text())["metadata"]["name"]
        waited = kube_control_plane.kubectl(
            "wait", "--for=condition=Established", f"crd/{name}", "--timeout=30s"
        )
        assert waited.returncode == 0, waited.stderr
    return kube_control_plane


@pytest.fixture
def kube_api(kube_control_plane: ControlPlane) -> Iterator[client.ApiClient]:
    with kube_control_plane.api_client() as api:
        yield api


@pytest.fixture
def kube_namespace(kube_api: client.ApiClient) -> Iterator[str]:
    """A namespace of this test's own, deleted afterwards (its objects with it)."""
    name = f"test-{uuid.uuid4().hex[:12]}"
    core = client.CoreV1Api(kube_api)
    core.create_namespace(client.V1Namespace(metadata=client.V1ObjectMeta(name=name)))
    yield name
    core.delete_namespace(name)
