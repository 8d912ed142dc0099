"""Security on kind, with the example deployment (e2e/conftest.py): Users made with
``kubectl apply``, applications that mount their Secrets, real clients (kafka-python).

- A SCRAM-SHA-512 User's application produces and consumes over TLS on the example's
  ``secure`` listener with what its Secret holds, and may not write a topic its ACLs do
  not name (the example runs Kafka's ACL authorizer); a wrong password and no
  credentials at all are refused.
- A TLS User's application gets in on the ``mtls`` listener with its certificate; a
  client without one is refused.
- ACLs changed behind the operator's back (``tidelog-acls``, Kafka's options) are put
  back to the User's spec.
- The Cluster's NetworkPolicies, enforced by the kind cluster's pod network: a pod that
  is neither a broker nor the operator reaches the application listener but not the
  brokers' REPLICATION listener nor ZooKeeper.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from e2e.operator_deployment import OperatorDeployment

CLIENT = ["python", "/opt/e2e/e2e_client.py"]
TOPIC = "secured"
SECURE = "events-bootstrap:9093"
MTLS = "events-bootstrap:9094"
ALICE_ACLS = [
    {"resource": {"type": "topic", "name": TOPIC}, "operations": ["Write", "Read", "Describe"]},
    {
        "resource": {"type": "group", "name": "alice-", "patternType": "prefix"},
        "operations": ["Read"],
    },
]
BOB_ACLS = [{"resource": {"type": "topic", "name": TOPIC}, "operations": ["Write", "Describe"]}]


def _user(name: str, authentication: str, acls: list[dict]) -> dict:
    return {
        "apiVersion": "tidelog.dev/v1alpha1",
        "kind": "User",
        "metadata": {"name": name},
        "spec": {
            "clusterRef": "events",
            "authentication": {"type": authentication},
            "authorization": {"acls": acls},
        },
    }


def _application(name: str, user: str, image: str) -> dict:
    """A pod that mounts ``user``'s Secret, as an application does."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {
            "containers": [
                {
                    "name": "app",
                    "image": image,
                    "imagePullPolicy": "IfNotPresent",
                    "volumeMounts": [{"name": "user", "mountPath": "/etc/user"}],
                }
            ],
            "volumes": [{"name": "user", "secret": {"secretName": user}}],
        },
    }


def _apply(deployment: OperatorDeployment, *objects: dict) -> None:
    document = {"apiVersion": "v1", "kind": "List", "items": list(objects)}
    deployment.kubectl("apply", "--filename", "-", input=json.dumps(document))


def client(deployment: OperatorDeployment, pod: str, command: str, *args: str) -> dict:
    """An e2e client command run in ``pod``; its result (a refusal too)."""
    output = deployment.kubectl(
        "exec", pod, "--", *CLIENT, command, *args, timeout=240, check=False
    )
    return json.loads(output.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def applications(deployment: OperatorDeployment) -> Iterator[None]:
    """Users alice (SCRAM) and bob (TLS), Ready, their applications running, and the
    topic they use."""
    image = deployment.get("pod/toolbox")["spec"]["containers"][0]["image"]
    _apply(deployment, _user("alice", "scram-sha-512", ALICE_ACLS), _user("bob", "tls", BOB_ACLS))
    for user in ("alice", "bob"):
        deployment.kubectl(
            "wait", "--for=condition=Ready", f"user/{user}", "--timeout=180s", timeout=190
        )
    _apply(
        deployment, _application("alice-app", "alice", image), _application("bob-app", "bob", image)
    )
    deployment.kubectl(
        "wait",
        "--for=condition=Ready",
        "pod/alice-app",
        "pod/bob-app",
        "--timeout=120s",
        timeout=130,
    )
    created = deployment.client(
        "create-topic", "--topic", TOPIC, "--partitions", "3", "--replication-factor", "3"
    )
    assert created["error_code"] == 0, created
    yield
    deployment.kubectl("delete", "pod/alice-app", "pod/bob-app", "--wait=true", timeout=120)
    deployment.kubectl("delete", "user/alice", "user/bob", "--wait=true", timeout=180)


MOUNTED = ("--secret-dir", "/etc/user")  # where the applications mount their User's Secret


def produce(
    deployment: OperatorDeployment,
    pod: str,
    bootstrap: str,
    count: int,
    prefix: str,
    *extra: str,
    topic: str = TOPIC,
) -> dict:
    """``produce`` of ``count`` records from ``pod``; its result (a refusal too)."""
    return client(
        deployment, pod, "produce", "--bootstrap", bootstrap, "--topic", topic,
        "--count", str(count), "--prefix", prefix, *extra,
    )  # fmt: skip


def test_a_scram_user_produces_and_consumes_over_tls_with_its_secret(deployment, applications):
    produced = produce(deployment, "alice-app", SECURE, 200, "alice", "--idempotent", *MOUNTED)
    assert produced["acknowledged"] == 200, produced
    consumed = client(
        deployment, "alice-app", "consume", "--bootstrap", SECURE, "--topic", TOPIC,
        "--expect", "200", "--prefix", "alice", "--group", "alice-readers", *MOUNTED,
    )  # fmt: skip
    assert consumed["missing_count"] == 0 and consumed["duplicates"] == 0, consumed
    # her ACLs name her topic alone: the example's orders topic is not hers to write
    denied = produce(deployment, "alice-app", SECURE, 1, "alice", *MOUNTED, topic="orders")
    assert "Authorization" in json.dumps(denied), denied
    wrong = produce(
        deployment, "alice-app", SECURE, 1, "wrong", "--password", "not-alices", *MOUNTED
    )
    assert "error" in wrong, wrong
    anonymous = produce(deployment, "toolbox", SECURE, 1, "anonymous")
    assert "error" in anonymous, anonymous


def test_a_tls_user_gets_in_with_its_certificate(deployment, applications):
    produced = produce(deployment, "bob-app", MTLS, 50, "bob", *MOUNTED)
    assert produced["acknowledged"] == 50, produced
    without = produce(deployment, "toolbox", MTLS, 1, "nobody")
    assert "error" in without, without


def _alices_acls(deployment: OperatorDeployment) -> list[str]:
    listed = deployment.kubectl(
        "exec",
        "toolbox",
        "--",
        "tidelog-acls",
        "--bootstrap-server",
        "events-bootstrap:9092",
        "--list",
        "--principal",
        "User:alice",
    )
    return sorted(line.strip() for line in listed.splitlines() if "principal=" in line)


def test_acls_changed_behind_the_operators_back_are_put_back(deployment, applications):
    granted = _alices_acls(deployment)
    assert len(granted) == 4, granted
    tool = ["exec", "toolbox", "--", "tidelog-acls", "--bootstrap-server", "events-bootstrap:9092"]
    deployment.kubectl(
        *tool, "--add", "--allow-principal", "User:alice", "--operation", "Delete", "--topic", TOPIC
    )
    deployment.kubectl(
        *tool,
        "--remove",
        "--force",
        "--allow-principal",
        "User:alice",
        "--operation",
        "Write",
        "--topic",
        TOPIC,
    )
    assert _alices_acls(deployment) != granted
    deployment.wait_for(
        lambda: _alices_acls(deployment) == granted, "alice's ACLs as her spec says", timeout=120
    )


def _connects(deployment: OperatorDeployment, address: str) -> bool:
    return client(deployment, "toolbox", "connect", "--bootstrap", address)["connected"]


def test_only_brokers_and_the_operator_reach_replication_and_zookeeper(deployment):
    """The toolbox is an ordinary pod of the Cluster's namespace: the application
    listener is open to it (no peers named), REPLICATION and ZooKeeper are not. The
    brokers reaching both is the cluster working."""
    broker = "events-broker-0.events-brokers"
    assert _connects(deployment, f"{broker}:9092")
    deployment.wait_for(
        lambda: not _connects(deployment, f"{broker}:9091"), "REPLICATION closed to the toolbox"
    )
    deployment.wait_for(
        lambda: not _connects(deployment, "events-zookeeper-0.events-zookeeper:2182"),
        "ZooKeeper closed to the toolbox",
    )
