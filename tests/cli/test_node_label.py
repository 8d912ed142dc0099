"""``tidelog-node-label`` against the real API server of the test control plane, as a
broker's init container runs it with its service account: the label's value written,
and one line and exit 1 for a node without the label or an account that may not read
nodes."""

from __future__ import annotations

import base64
import subprocess
import sys
import uuid

import pytest
import yaml
from kubernetes import client

from kubeapi.control_plane import ControlPlane


@pytest.fixture
def node(kube_api: client.ApiClient):
    name = f"node-{uuid.uuid4().hex[:8]}"
    core = client.CoreV1Api(kube_api)
    body = client.V1Node(
        metadata=client.V1ObjectMeta(name=name, labels={"topology.kubernetes.io/zone": "zone-a"})
    )
    core.create_node(body)
    yield name
    core.delete_node(name)


def account_token(plane: ControlPlane, kube_api, namespace: str, may_read_nodes: bool) -> str:
    name = f"reader-{uuid.uuid4().hex[:8]}"
    core, rbac = client.CoreV1Api(kube_api), client.RbacAuthorizationV1Api(kube_api)
    core.create_namespaced_service_account(
        namespace, client.V1ServiceAccount(metadata=client.V1ObjectMeta(name=name))
    )
    if may_read_nodes:
        rbac.create_cluster_role(
            client.V1ClusterRole(
                metadata=client.V1ObjectMeta(name=name),
                rules=[client.V1PolicyRule(api_groups=[""], resources=["nodes"], verbs=["get"])],
            )
        )
        rbac.create_cluster_role_binding(
            client.V1ClusterRoleBinding(
                metadata=client.V1ObjectMeta(name=name),
                role_ref=client.V1RoleRef(
                    api_group="rbac.authorization.k8s.io", kind="ClusterRole", name=name
                ),
                subjects=[
                    client.RbacV1Subject(kind="ServiceAccount", name=name, namespace=namespace)
                ],
            )
        )
    created = plane.kubectl("create", "token", name, "--namespace", namespace)
    assert created.returncode == 0, created.stderr
    return created.stdout.strip()


def run(plane: ControlPlane, tmp_path, token: str, node: str, label: str):
    config = yaml.safe_load(plane.kubeconfig.read_text())
    ca = tmp_path / "ca.crt"
    ca.write_bytes(base64.b64decode(config["clusters"][0]["cluster"]["certificate-authority-data"]))
    token_file = tmp_path / "token"
    token_file.write_text(token)
    output = tmp_path / "rack"
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "tidelog.cli.node_label",
            "--node",
            node,
            "--label",
            label,
            "--output",
            str(output),
            "--api-server",
            plane.server,
            "--token-file",
            str(token_file),
            "--ca-file",
            str(ca),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return result, output


def test_the_label_of_the_node_is_written(
    kube_control_plane, kube_api, kube_namespace, node, tmp_path
):
    token = account_token(kube_control_plane, kube_api, kube_namespace, may_read_nodes=True)
    result, output = run(kube_control_plane, tmp_path, token, node, "topology.kubernetes.io/zone")
    assert result.returncode == 0, result.stderr
    assert output.read_text() == "zone-a"
    assert result.stdout == "topology.kubernetes.io/zone=zone-a\n"
    missing, _ = run(kube_control_plane, tmp_path, token, node, "rack")
    assert missing.returncode == 1
    assert missing.stderr == f"tidelog-node-label: node {node} has no label rack\n"


def test_an_account_that_may_not_read_nodes_is_one_line(
    kube_control_plane, kube_api, kube_namespace, node, tmp_path
):
    token = account_token(kube_control_plane, kube_api, kube_namespace, may_read_nodes=False)
    result, output = run(kube_control_plane, tmp_path, token, node, "topology.kubernetes.io/zone")
    assert result.returncode == 1 and not output.exists()
    assert result.stderr == f"tidelog-node-label: reading node {node}: HTTP 403 Forbidden\n"
