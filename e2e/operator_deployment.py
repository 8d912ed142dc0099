"""The operator on the kind cluster as a user installs it: ``helm install`` of
``charts/tidelog-operator``, then ``kubectl apply -f examples/`` in a namespace of its
own, and a toolbox pod there (the e2e client) to produce and consume with.

:meth:`OperatorDeployment.remove` deletes the Cluster and its namespace, uninstalls the
chart, deletes the local volumes the Cluster kept (its claims are retained, and so are
the volumes) and wipes the disks, leaving them as the next user of the cluster expects.
"""

from __future__ import annotations

import json
import subprocess

from e2e.kind_cluster import ClusterError, KindCluster, run
from e2e.paths import MANIFESTS, REPO
from kubeapi.control_plane import find_tool

__all__ = ["OperatorDeployment"]

CHART = REPO / "charts" / "tidelog-operator"
EXAMPLES = REPO / "examples"
_CLIENT = ["python", "/opt/e2e/e2e_client.py"]


class OperatorDeployment:
    def __init__(self, cluster: KindCluster, namespace: str, release: str = "tidelog"):
        self.cluster = cluster
        self.namespace = namespace
        self.release = release
        self.operator_namespace = "tidelog-system"
        # the chart's full name, <release>-<chart>: its Deployment, roles and bindings
        self.operator_name = f"{release}-tidelog-operator"
        self.removed = False

    # -- set-up and removal --------------------------------------------------------------

    def helm(self, *args: str, timeout: float = 300) -> str:
        return run(
            find_tool("helm"), "--kubeconfig", str(self.cluster.kubeconfig), *args, timeout=timeout
        )

    def install(self, operator_image: str) -> None:
        """The CRDs applied first, as a user upgrading does: Helm installs a chart's CRDs
        only when they are missing, and a kept cluster has those of an earlier session
        (whose API server would drop the fields added since)."""
        repository, _, tag = operator_image.rpartition(":")
        self.cluster.kubectl(
            "apply", "--server-side", "--force-conflicts", "--filename", str(CHART / "crds")
        )
        self.helm(
            "install",
            self.release,
            str(CHART),
            "--namespace",
            self.operator_namespace,
            "--create-namespace",
            "--set",
            f"image.repository={repository}",
            "--set",
            f"image.tag={tag}",
            "--wait",
            "--timeout",
            "180s",
        )
        self.cluster.kubectl("create", "namespace", self.namespace)
        self.kubectl("apply", "--filename", str(EXAMPLES))
        self.kubectl("apply", "--filename", str(MANIFESTS / "toolbox.yaml"))

    def wait_ready(self, timeout: float = 600) -> None:
        """Until the example Cluster is Ready, and the toolbox too."""
        self.kubectl(
            "wait",
            "--for=condition=Ready",
            "cluster/events",
            f"--timeout={int(timeout)}s",
            timeout=timeout + 10,
        )
        self.kubectl("wait", "--for=condition=Ready", "pod/toolbox", "--timeout=120s", timeout=130)

    def remove(self) -> None:
        """The namespace first, while the operator runs to finish the Topics' and
        ConsumerGroups' deletion (their finalizers), then the release. Once: a second
        call (the session's end after the test that removes it) does nothing."""
        if self.removed:
            return
        self.kubectl("delete", "cluster/events", "--ignore-not-found", "--wait=true", timeout=300)
        self.cluster.kubectl("delete", "namespace", self.namespace, "--wait=true", timeout=300)
        self.helm(
            "uninstall",
            self.release,
            "--namespace",
            self.operator_namespace,
            "--wait",
            "--ignore-not-found",
        )
        self.cluster.kubectl(
            "delete",
            "persistentvolumes",
            "--selector",
            "tidelog.dev/cluster=events",
            "--wait=true",
            timeout=120,
        )
        self.cluster.kubectl(
            "delete",
            "namespace",
            self.operator_namespace,
            "--ignore-not-found",
            "--wait=true",
            timeout=300,
        )
        self.cluster.wipe_disks()
        self.removed = True

    # -- what the cluster says -------------------------------------------------------------

    def kubectl(self, *args: str, **options) -> str:
        return self.cluster.kubectl("--namespace", self.namespace, *args, **options)

    def get(self, *args: str) -> dict:
        return json.loads(self.kubectl("get", *args, "--output", "json"))

    def condition(self, kind_name: str, type_: str) -> dict:
        conditions = self.get(kind_name).get("status", {}).get("conditions", [])
        return next((c for c in conditions if c["type"] == type_), {})

    def wait_for(self, check, what: str, timeout: float = 180) -> None:
        self.cluster.wait_for(check, what, timeout=timeout)

    def wait_for_reason(
        self, kind_name: str, type_: str, reason: str, what: str, timeout: float = 180
    ) -> dict:
        """Wait until the resource's condition ``type_`` has ``reason``; that condition."""
        self.wait_for(
            lambda: self.condition(kind_name, type_).get("reason") == reason, what, timeout
        )
        return self.condition(kind_name, type_)

    def _client_command(self, command: str, *args: str, stdin: bool = False) -> list[str]:
        """kubectl exec of an e2e client command in the toolbox pod against the Cluster
        (``stdin``: ours is passed on)."""
        return [
            "exec",
            *(["--stdin"] if stdin else []),
            "toolbox",
            "--",
            *_CLIENT,
            command,
            "--bootstrap",
            "events-bootstrap:9092",
            *args,
        ]

    def producer_started(self, *args: str) -> subprocess.Popen:
        """A steady ``produce`` (``--per-second``) running while the test goes on, returned
        once its first record is acknowledged: what the test then breaks meets a producer
        that has found the cluster, not one still bootstrapping. It stops at its
        ``--count`` or at :meth:`producer_stopped`, whichever comes first."""
        kubectl = [
            self.cluster.kubectl_path,
            "--kubeconfig",
            str(self.cluster.kubeconfig),
            "--namespace",
            self.namespace,
        ]
        command = self._client_command("produce", *args, "--until-stdin-closes", stdin=True)
        process = subprocess.Popen(
            [*kubectl, *command],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        said = []  # kafka-python's warnings (a broker not reachable yet) may come first
        for line in process.stderr:
            if line.strip() == "producing":
                return process
            said.append(line)
        process.kill()
        _, err = process.communicate()
        raise ClusterError(f"the producer did not start: {''.join(said)}{err}")

    def producer_stopped(self, process: subprocess.Popen) -> dict:
        """Stop a producer from :meth:`producer_started` (``communicate`` closes its
        stdin); its result once every record it sent is acknowledged or failed."""
        return self.client_result(process)

    @staticmethod
    def client_result(process: subprocess.Popen, timeout: float = 600) -> dict:
        out, err = process.communicate(timeout=timeout)
        if not out.strip():
            raise ClusterError(f"the client printed nothing (exit {process.returncode}): {err}")
        return json.loads(out.strip().splitlines()[-1])

    def client(self, command: str, *args: str, check: bool = True) -> dict:
        """Run an e2e client command and wait for its result."""
        output = self.kubectl(*self._client_command(command, *args), timeout=240, check=check)
        return json.loads(output.strip().splitlines()[-1])
