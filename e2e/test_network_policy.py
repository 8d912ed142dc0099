"""NetworkPolicies are enforced in the e2e cluster: kube-router's firewall runs on every
node (e2e/kube-router.yaml, applied by e2e/kind_cluster.py), so the policies the operator
creates are tested against a cluster that obeys them.

A TCP server pod and four client pods, all ordinary pods (an enforcer leaves hostNetwork
pods and the node itself alone): an allowed client (label ``access=yes``) and an outsider
on another worker, and the same pair on the server's worker. A policy admits only
``access=yes`` pods to the server's port. The enforcer applies rules asynchronously, after
it sees the pods and the policy, so each verdict is polled for with a deadline. The
allowed clients must keep their access while the outsiders lose it (a dead enforcer, or
one that cuts everything, cannot pass), the server's readiness probe (from its node) must
never fail, and once the policy is deleted the outsiders get in again.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import pytest
import yaml

from e2e.kind_cluster import ClusterError, KindCluster
from waiting import wait_until

NAMESPACE = "e2e-network-policy"
PORT = 8080
SERVER = "server"
GREETING = "reached"
# The server answers each connection with GREETING; a client prints what it read.
SERVER_PROGRAM = f"""
import signal, socketserver, sys
signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
class Greet(socketserver.BaseRequestHandler):
    def handle(self):
        self.request.sendall(b"{GREETING}\\n")
socketserver.ThreadingTCPServer.allow_reuse_address = True
socketserver.ThreadingTCPServer(("", {PORT}), Greet).serve_forever()
"""
CLIENT_PROGRAM = f"""
import socket, sys
with socket.create_connection((sys.argv[1], {PORT}), timeout=3) as connection:
    print(connection.recv(64).decode().strip())
"""
IDLE = ["sh", "-c", "trap 'exit 0' TERM; sleep infinity & wait"]
# Client pod → (on the server's node, labelled access=yes).
CLIENTS = {
    "allowed-remote": (False, True),
    "outsider-remote": (False, False),
    "allowed-local": (True, True),
    "outsider-local": (True, False),
}
EVERYONE_IN = dict.fromkeys(CLIENTS, True)
ONLY_ALLOWED_IN = {client: allowed for client, (_, allowed) in CLIENTS.items()}
VERDICT_TIMEOUT_S = 60

POLICY = {
    "apiVersion": "networking.k8s.io/v1",
    "kind": "NetworkPolicy",
    "metadata": {"name": "server-from-access-yes"},
    "spec": {
        "podSelector": {"matchLabels": {"app": SERVER}},
        "policyTypes": ["Ingress"],
        "ingress": [
            {
                "from": [{"podSelector": {"matchLabels": {"access": "yes"}}}],
                "ports": [{"protocol": "TCP", "port": PORT}],
            }
        ],
    },
}


def pod(name: str, node: str, image: str, labels: dict[str, str], command: list[str]) -> dict:
    """An ordinary pod of ``image`` running ``command`` on ``node``."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "nodeSelector": {"kubernetes.io/hostname": node},
            "terminationGracePeriodSeconds": 1,
            "containers": [
                {"name": name, "image": image, "imagePullPolicy": "Never", "command": command}
            ],
        },
    }


class PolicyPods:
    """The server and its clients in ``namespace`` (the attribute the e2e fixture reads to
    save their logs when a test fails)."""

    def __init__(self, cluster: KindCluster, namespace: str):
        self.cluster = cluster
        self.namespace = namespace

    def kubectl(self, *args: str, **options) -> str:
        return self.cluster.kubectl("--namespace", self.namespace, *args, **options)

    def deploy(self, image: str, server_node: str, other_node: str) -> None:
        """The namespace, the server on ``server_node`` (Ready once it listens) and the
        clients on either node; returns when all are Ready."""
        readiness = {"tcpSocket": {"port": PORT}, "periodSeconds": 1, "failureThreshold": 1}
        server = pod(SERVER, server_node, image, {"app": SERVER}, ["python3", "-c", SERVER_PROGRAM])
        server["spec"]["containers"][0]["readinessProbe"] = readiness
        pods = [server]
        for name, (local, allowed) in CLIENTS.items():
            labels = {"access": "yes"} if allowed else {}
            node = server_node if local else other_node
            pods.append(pod(name, node, image, labels, IDLE))
        self.cluster.kubectl("create", "namespace", self.namespace)
        self.apply(pods)
        self.kubectl("wait", "--for=condition=Ready", "pod", "--all", "--timeout=120s", timeout=130)

    def apply(self, documents: list[dict]) -> None:
        self.kubectl("apply", "--filename", "-", input=yaml.safe_dump_all(documents))

    def remove(self) -> None:
        self.cluster.kubectl(
            "delete", "namespace", self.namespace, "--ignore-not-found", "--wait=true", timeout=180
        )

    def server_ready_since(self) -> str:
        """When the server's Ready condition last turned true."""
        status = self.cluster.get("pod", SERVER, "--namespace", self.namespace)["status"]
        (ready,) = [c for c in status["conditions"] if c["type"] == "Ready"]
        assert ready["status"] == "True", f"the server is not ready: {ready}"
        return ready["lastTransitionTime"]

    def reaches_server(self, client: str, address: str) -> bool:
        """Whether ``client`` opens a connection to the server and reads its greeting."""
        answer = self.kubectl(
            "exec", client, "--", "python3", "-c", CLIENT_PROGRAM, address, timeout=30, check=False
        )
        return answer.strip() == GREETING

    def verdicts(self, address: str) -> dict[str, bool]:
        """Which clients reach the server, all asked at once."""
        with ThreadPoolExecutor(len(CLIENTS)) as pool:
            answers = pool.map(lambda client: self.reaches_server(client, address), CLIENTS)
            return dict(zip(CLIENTS, answers, strict=True))

    def wait_for_verdicts(self, address: str, expected: dict[str, bool], what: str) -> None:
        def settled() -> bool:
            seen = self.verdicts(address)
            assert seen == expected, seen
            return True

        wait_until(settled, what, VERDICT_TIMEOUT_S, interval=0.5)


def ready_workers(cluster: KindCluster) -> list[str]:
    """The workers whose Node is Ready, by name."""
    nodes = cluster.get("nodes")["items"]
    return sorted(
        node["metadata"]["name"]
        for node in nodes
        if "node-role.kubernetes.io/control-plane" not in node["metadata"]["labels"]
        and any(
            c["type"] == "Ready" and c["status"] == "True" for c in node["status"]["conditions"]
        )
    )


@pytest.fixture
def policy_pods(kind_cluster: KindCluster) -> Iterator[PolicyPods]:
    image = os.environ.get("TIDELOG_BROKER_IMAGE")
    if not image:
        raise ClusterError("$TIDELOG_BROKER_IMAGE is unset: run the e2e tests through `make e2e`")
    workers = ready_workers(kind_cluster)
    assert len(workers) >= 2, f"two ready workers needed, found {workers}"
    pods = PolicyPods(kind_cluster, NAMESPACE)
    try:
        pods.deploy(image, server_node=workers[0], other_node=workers[1])
        yield pods
    finally:
        pods.remove()


def test_a_network_policy_admits_only_the_pods_it_allows_from_any_node(
    policy_pods: PolicyPods,
) -> None:
    server = policy_pods.cluster.get("pod", SERVER, "--namespace", policy_pods.namespace)
    address = server["status"]["podIP"]
    policy_pods.wait_for_verdicts(address, EVERYONE_IN, "every client reaches the server")
    ready_since = policy_pods.server_ready_since()

    policy_pods.apply([POLICY])
    policy_pods.wait_for_verdicts(
        address, ONLY_ALLOWED_IN, "only access=yes clients reach the server, from either node"
    )
    # The kubelet probes the server from its node: the policy must not cut that.
    assert policy_pods.server_ready_since() == ready_since, "the server's readiness probe failed"

    policy_pods.kubectl("delete", "networkpolicy", POLICY["metadata"]["name"])
    policy_pods.wait_for_verdicts(
        address, EVERYONE_IN, "every client reaches the server again without the policy"
    )
    assert policy_pods.server_ready_since() == ready_since, "the server's readiness probe failed"
