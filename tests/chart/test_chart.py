"""The Helm chart ``charts/tidelog-operator``: it ships exactly the CRDs of ``crds/``,
lints clean (``--strict``), its schema refuses bad values, its RBAC follows
``watchNamespaces``, it installs on a real API server and uninstalls, and the examples
are valid objects of its CRDs."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from kubeapi.control_plane import ControlPlane, find_tool
from tidelog_operator.operator_identity import parse_labels

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "charts" / "tidelog-operator"


def helm(*args: str, kubeconfig: Path | None = None) -> subprocess.CompletedProcess:
    config = ["--kubeconfig", str(kubeconfig)] if kubeconfig else []
    return subprocess.run(
        [find_tool("helm"), *config, *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def rendered(*args: str) -> list[dict]:
    result = helm("template", "tl", str(CHART), "--namespace", "ops", *args)
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


def test_the_chart_ships_exactly_the_crds():
    ours = {p.name: p.read_bytes() for p in (ROOT / "crds").glob("*.yaml")}
    shipped = {p.name: p.read_bytes() for p in (CHART / "crds").glob("*.yaml")}
    assert shipped == ours, "charts/tidelog-operator/crds/ differs from crds/: copy crds/*.yaml"


@pytest.mark.parametrize("values", [[], ["--set", "watchNamespaces={a,b}"]])
def test_the_chart_lints_clean(values):
    result = helm("lint", "--strict", str(CHART), *values)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize(
    ("values", "message"),
    [
        (["--set", "image.pullPolicy=Sometimes"], "pullPolicy"),
        (["--set", "watchNamespaces={Bad_Name}"], "watchNamespaces"),
        (["--set", "surprise=1"], "surprise"),
    ],
)
def test_bad_values_are_refused_by_the_schema(values, message):
    result = helm("template", "tl", str(CHART), *values)
    assert result.returncode != 0
    assert "values don't meet the specifications of the schema" in result.stderr
    assert message in result.stderr


def test_rbac_follows_watch_namespaces():
    every = {(d["kind"], d["metadata"]["name"]) for d in rendered()}
    assert ("ClusterRole", "tl-tidelog-operator") in every
    assert not any(kind == "Role" for kind, _ in every)
    some = rendered("--set", "watchNamespaces={a,b}")
    roles = sorted(d["metadata"]["namespace"] for d in some if d["kind"] == "Role")
    assert roles == ["a", "b"]
    assert ("ClusterRole", "tl-tidelog-operator") not in {
        (d["kind"], d["metadata"]["name"]) for d in some
    }
    (deployment,) = [d for d in some if d["kind"] == "Deployment"]
    args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
    assert args == ["--standalone", "--namespace=a", "--namespace=b"]
    # only the verbs the operator uses: it never lists Services or edits Nodes
    roles = {d["metadata"]["name"]: d for d in some if d["kind"] == "ClusterRole"}
    scoped = roles["tl-tidelog-operator-cluster-scoped"]["rules"]
    assert {r["resources"][0]: r["verbs"] for r in scoped} == {
        "persistentvolumes": ["get", "list", "create", "patch", "delete"],
        "nodes": ["list"],
        "customresourcedefinitions": ["list", "watch"],
        "clusterrolebindings": ["get", "create", "patch", "delete"],
        "clusterroles": ["bind"],
    }
    assert scoped[-1]["resourceNames"] == [
        "tl-tidelog-operator-node-reader",
        "tl-tidelog-operator-spark-driver",
    ]
    assert roles["tl-tidelog-operator-node-reader"]["rules"] == [
        {"apiGroups": [""], "resources": ["nodes"], "verbs": ["get"]}
    ]
    # what spark-submit and a Spark driver do, bound per ConsumerGroup; nothing else
    spark = roles["tl-tidelog-operator-spark-driver"]["rules"]
    assert {resource for rule in spark for resource in rule["resources"]} == {
        "pods",
        "services",
        "configmaps",
        "persistentvolumeclaims",
    }
    env = {
        e["name"]: e.get("value")
        for e in deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert env["TIDELOG_SPARK_DRIVER_ROLE"] == "tl-tidelog-operator-spark-driver"
    assert env["TIDELOG_SPARK_IMAGE"].startswith("tidelog-spark:")
    # the operator admits its own pods to the brokers and ZooKeeper by these labels
    selector = deployment["spec"]["selector"]["matchLabels"]
    assert parse_labels(env["TIDELOG_OPERATOR_LABELS"]) == selector
    assert selector.items() <= deployment["spec"]["template"]["metadata"]["labels"].items()
    namespaced = {
        r["resources"][0]: r["verbs"] for d in some if d["kind"] == "Role" for r in d["rules"]
    }
    assert namespaced["networkpolicies"] == ["get", "create", "patch"]


def test_the_chart_installs_and_uninstalls(kube_control_plane: ControlPlane, kube_namespace: str):
    config = kube_control_plane.kubeconfig
    installed = helm(
        "install",
        "tl",
        str(CHART),
        "--namespace",
        kube_namespace,
        "--set",
        "storageClass.name=tl-test",
        kubeconfig=config,
    )
    assert installed.returncode == 0, installed.stderr
    assert "The tidelog operator is installed in namespace" in installed.stdout
    got = kube_control_plane.kubectl(
        "get", "deployment,serviceaccount,service", "-n", kube_namespace, "-o", "name"
    )
    assert {"deployment.apps/tl-tidelog-operator", "serviceaccount/tl-tidelog-operator"} <= set(
        got.stdout.split()
    )
    served = kube_control_plane.kubectl("get", "crd", "-o", "name")
    assert "customresourcedefinition.apiextensions.k8s.io/clusters.tidelog.dev" in served.stdout
    examples = kube_control_plane.kubectl(
        "apply",
        "--dry-run=server",
        "-n",
        kube_namespace,
        "--recursive",
        "-f",
        str(ROOT / "examples"),
    )
    assert examples.returncode == 0, examples.stderr
    uninstalled = helm("uninstall", "tl", "--namespace", kube_namespace, kubeconfig=config)
    assert uninstalled.returncode == 0, uninstalled.stderr
    left = kube_control_plane.kubectl(
        "get", "storageclass,clusterrole,clusterrolebinding", "-o", "name"
    )
    assert "tl-test" not in left.stdout and "tl-tidelog-operator" not in left.stdout
