"""The operator run in this process against the test control plane, with exactly the
handler modules a test names (each run gets a fresh kopf registry, into which those
modules register again)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import kopf
import pytest
from kopf.testing import KopfRunner
from kubernetes import client

from integration.cluster import Cluster
from kubeapi.control_plane import ControlPlane

GROUP, VERSION = "tidelog.dev", "v1alpha1"


@pytest.fixture
def run_operator(
    tidelog_crds: ControlPlane, kube_namespace: str, monkeypatch
) -> Callable[..., object]:
    """``with run_operator("tidelog_operator.topic.handlers"): ...`` runs those handlers,
    and the settings, watching the test's namespace as the admin."""
    monkeypatch.setenv("KUBECONFIG", str(tidelog_crds.kubeconfig))
    from tidelog_operator import kube

    @contextmanager
    def running(*modules: str) -> Iterator[None]:
        registry = kopf.OperatorRegistry()
        previous = kopf.get_default_registry()
        kopf.set_default_registry(registry)
        try:
            for module in ("tidelog_operator.settings", *modules):
                # Registered once: a first import registers, so only a module imported
                # before is reloaded (importing then reloading doubled every handler).
                if module in sys.modules:
                    importlib.reload(sys.modules[module])
                else:
                    importlib.import_module(module)
        finally:
            kopf.set_default_registry(previous)
        kube.api.cache_clear()
        args = ["run", "--standalone", "--namespace", kube_namespace]
        with KopfRunner(args, registry=registry, timeout=60) as runner:
            yield
        kube.api.cache_clear()
        assert runner.exit_code == 0, runner.output

    return running


@pytest.fixture
def brokers(tmp_path, zk_chroot, kube_api, kube_namespace) -> Iterator[Cluster]:
    """Three brokers, a Cluster object whose status names them, and the operator's
    credentials for it (PLAINTEXT to those brokers: what the Cluster's pass would write
    for brokers in Kubernetes is its own test's)."""
    with Cluster(tmp_path, zk_chroot, size=3) as cluster:
        objects = client.CustomObjectsApi(kube_api)
        body = {
            "apiVersion": f"{GROUP}/{VERSION}",
            "kind": "Cluster",
            "metadata": {"name": "local"},
            "spec": {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}},
        }
        created = objects.create_namespaced_custom_object(
            GROUP, VERSION, kube_namespace, "clusters", body
        )
        created["status"] = {"bootstrap": cluster.bootstrap}
        objects.replace_namespaced_custom_object_status(
            GROUP, VERSION, kube_namespace, "clusters", "local", created
        )
        credentials = {"bootstrap.servers": cluster.bootstrap, "security.protocol": "PLAINTEXT"}
        client.CoreV1Api(kube_api).create_namespaced_secret(
            kube_namespace,
            {
                "metadata": {"name": "local-operator-credentials"},
                "stringData": credentials,
            },
        )
        yield cluster
