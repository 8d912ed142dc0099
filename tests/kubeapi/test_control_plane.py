"""The test control plane does what the operator's tests will rely on: kubectl applies a
CRD whose schema the API server enforces, and the controllers turn a StatefulSet into
Pods and PersistentVolumeClaims and collect them again through owner references."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from kubeapi.control_plane import ControlPlane, find_tool
from waiting import wait_until

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.smoke.tidelog.dev"},
    "spec": {
        "group": "smoke.tidelog.dev",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "required": ["replicas"],
                                "properties": {
                                    "replicas": {"type": "integer", "minimum": 1},
                                    "size": {"type": "string", "pattern": "^[0-9]+Gi$"},
                                },
                            }
                        },
                    }
                },
            }
        ],
    },
}


def kubectl(plane: ControlPlane, *args: str, stdin: str | None = None) -> str:
    result = plane.kubectl(*args, stdin=stdin)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_kubectl_applies_a_crd_whose_schema_the_api_server_enforces(
    kube_control_plane: ControlPlane, kube_api: client.ApiClient, kube_namespace: str
) -> None:
    kubectl(kube_control_plane, "apply", "-f", "-", stdin=yaml.safe_dump(WIDGET_CRD))
    kubectl(
        kube_control_plane,
        "wait",
        "--for=condition=Established",
        "crd/widgets.smoke.tidelog.dev",
        "--timeout=30s",
    )
    objects = client.CustomObjectsApi(kube_api)

    def create(name: str, spec: dict) -> dict:
        body = {
            "apiVersion": "smoke.tidelog.dev/v1",
            "kind": "Widget",
            "metadata": {"name": name},
            "spec": spec,
        }
        return objects.create_namespaced_custom_object(
            "smoke.tidelog.dev", "v1", kube_namespace, "widgets", body
        )

    created = create("good", {"replicas": 3, "size": "10Gi"})
    assert created["metadata"]["generation"] == 1
    listed = kubectl(kube_control_plane, "get", "widgets", "-n", kube_namespace, "-o", "name")
    assert listed.split() == ["widget.smoke.tidelog.dev/good"]

    for name, spec, field in [
        ("zero", {"replicas": 0}, "spec.replicas"),
        ("wrong-type", {"replicas": "three"}, "spec.replicas"),
        ("bad-size", {"replicas": 1, "size": "ten"}, "spec.size"),
        ("missing", {"size": "1Gi"}, "spec.replicas"),
    ]:
        with pytest.raises(ApiException) as rejected:
            create(name, spec)
        assert rejected.value.status == 422, name
        assert field in rejected.value.body, (name, rejected.value.body)


def volume_claim(name: str) -> client.V1PersistentVolumeClaim:
    return client.V1PersistentVolumeClaim(
        metadata=client.V1ObjectMeta(name=name),
        spec=client.V1PersistentVolumeClaimSpec(
            access_modes=["ReadWriteOnce"],
            resources=client.V1VolumeResourceRequirements(requests={"storage": "1Gi"}),
        ),
    )


def test_a_statefulset_gets_pods_and_claims_and_its_pods_are_collected(
    kube_api: client.ApiClient, kube_namespace: str
) -> None:
    apps = client.AppsV1Api(kube_api)
    core = client.CoreV1Api(kube_api)
    labels = {"app": "brokers"}
    statefulset = client.V1StatefulSet(
        metadata=client.V1ObjectMeta(name="brokers"),
        spec=client.V1StatefulSetSpec(
            replicas=2,
            service_name="brokers",
            # No scheduler runs, so no Pod becomes Ready: create both at once.
            pod_management_policy="Parallel",
            selector=client.V1LabelSelector(match_labels=labels),
            template=client.V1PodTemplateSpec(
                metadata=client.V1ObjectMeta(labels=labels),
                spec=client.V1PodSpec(
                    containers=[
                        client.V1Container(
                            name="broker",
                            image="tidelog-broker:test",
                            volume_mounts=[
                                client.V1VolumeMount(name=f"data-{n}", mount_path=f"/data-{n}")
                                for n in range(2)
                            ],
                        )
                    ]
                ),
            ),
            volume_claim_templates=[volume_claim("data-0"), volume_claim("data-1")],
        ),
    )
    apps.create_namespaced_stateful_set(kube_namespace, statefulset)

    def pods() -> list[client.V1Pod]:
        return core.list_namespaced_pod(kube_namespace, label_selector="app=brokers").items

    def claims() -> list[str]:
        found = core.list_namespaced_persistent_volume_claim(kube_namespace).items
        return sorted(item.metadata.name for item in found)

    wait_until(lambda: len(pods()) == 2, "the StatefulSet's two Pods")
    assert sorted(pod.metadata.name for pod in pods()) == ["brokers-0", "brokers-1"]
    for pod in pods():
        (owner,) = pod.metadata.owner_references
        assert (owner.kind, owner.name, owner.controller) == ("StatefulSet", "brokers", True)
        assert {volume.name for volume in pod.spec.volumes} >= {"data-0", "data-1"}
    expected_claims = [f"data-{v}-brokers-{p}" for v in range(2) for p in range(2)]
    wait_until(lambda: claims() == expected_claims, "one claim per template and Pod")

    apps.delete_namespaced_stateful_set("brokers", kube_namespace, propagation_policy="Background")
    wait_until(lambda: not pods(), "the garbage collector to delete the Pods")
    # Claims outlive their StatefulSet (the default retention policy): broker data stays.
    assert claims() == expected_claims


def test_helm_installs_and_uninstalls_a_chart(
    kube_control_plane: ControlPlane,
    kube_api: client.ApiClient,
    kube_namespace: str,
    tmp_path: Path,
) -> None:
    chart = tmp_path / "smoke"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: smoke\nversion: 0.1.0\n")
    (chart / "values.yaml").write_text("greeting: hello\n")
    (chart / "templates" / "configmap.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-settings\n"
        "data:\n  greeting: {{ .Values.greeting | quote }}\n"
    )
    core = client.CoreV1Api(kube_api)

    def helm(*args: str) -> None:
        result = subprocess.run(
            [find_tool("helm"), "--kubeconfig", str(kube_control_plane.kubeconfig), *args],
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert result.returncode == 0, result.stderr

    helm("install", "demo", str(chart), "-n", kube_namespace, "--set", "greeting=hi")
    settings = core.read_namespaced_config_map("demo-settings", kube_namespace)
    assert settings.data == {"greeting": "hi"}
    helm("uninstall", "demo", "-n", kube_namespace, "--wait")
    names = [item.metadata.name for item in core.list_namespaced_config_map(kube_namespace).items]
    assert "demo-settings" not in names


def test_kind_is_available() -> None:
    result = subprocess.run([find_tool("kind"), "version"], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("kind v0."), result.stdout
