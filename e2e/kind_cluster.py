"""A kind cluster for the e2e suite, driven through the ``kind``, ``kubectl`` and
``docker`` command lines as a user drives them.

The cluster is described by ``e2e/kind.yaml`` and created from the node image of
``make kind-node-image`` (tools/kind/node-image.sh). A cluster that already exists under
the same name, kept on purpose by an earlier session (``E2E_KEEP=1``), is reused when
its nodes become Ready; otherwise it is deleted and created anew (e2e/conftest.py).
Either way NetworkPolicies are enforced in it: kube-router's firewall runs on every node
(``e2e/kube-router.yaml``), since neither our pod network nor a registry-less machine
offers an enforcer of its own.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from kubeapi.control_plane import find_tool
from waiting import WaitTimeout, wait_until

__all__ = ["ClusterError", "KindCluster"]

_CREATE_TIMEOUT_S = 600
_READY_TIMEOUT_S = 300
# The NetworkPolicy enforcer, and the variable that names its image (the Makefile sets it).
_ENFORCER_MANIFEST = Path(__file__).with_name("kube-router.yaml")
_ENFORCER_IMAGE_VARIABLE = "TIDELOG_KUBE_ROUTER_IMAGE"


class ClusterError(RuntimeError):
    """A command against the cluster failed; the message carries its output."""


def run(*command: str, input: str | None = None, timeout: float = 120, check: bool = True) -> str:
    """Run a command; its stdout, or :class:`ClusterError` with its output when it fails."""
    try:
        result = subprocess.run(
            command, input=input, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired as expired:
        raise ClusterError(f"{' '.join(command)}: no result within {timeout} s") from expired
    if check and result.returncode != 0:
        output = (result.stdout.strip() + "\n" + result.stderr.strip()).strip()
        raise ClusterError(f"{' '.join(command)} failed ({result.returncode}): {output[-3000:]}")
    return result.stdout


class KindCluster:
    """The cluster ``config`` names, with its kubeconfig in ``workdir``."""

    def __init__(self, config: Path, node_image: str, workdir: Path):
        self.config = config
        self.node_image = node_image
        self.name = yaml.safe_load(config.read_text())["name"]
        self.kubeconfig = workdir / "kubeconfig"
        self.kind = find_tool("kind")
        self.kubectl_path = find_tool("kubectl")

    # -- life cycle --------------------------------------------------------------------

    def exists(self) -> bool:
        return self.name in run(self.kind, "get", "clusters").split()

    def create(self) -> None:
        """Create the cluster and wait until every node and CoreDNS are ready. On failure
        the nodes are kept for :meth:`export_logs` (``--retain``); the caller deletes."""
        run(
            self.kind,
            "create",
            "cluster",
            "--config",
            str(self.config),
            "--image",
            self.node_image,
            "--kubeconfig",
            str(self.kubeconfig),
            "--retain",
            timeout=_CREATE_TIMEOUT_S,
        )
        self.spread_dns()
        self.wait_until_ready()
        self.enforce_network_policies()

    def spread_dns(self) -> None:
        """CoreDNS's two replicas on two nodes: kubeadm lets both land on one, and a test
        that loses that node would lose the cluster's names with it, until Kubernetes
        reschedules them (a minute and more), whatever the system under test does."""
        anti_affinity = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"k8s-app": "kube-dns"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
        patch = {"spec": {"template": {"spec": {"affinity": {"podAntiAffinity": anti_affinity}}}}}
        self.kubectl(
            "--namespace",
            "kube-system",
            "patch",
            "deployment",
            "coredns",
            "--patch",
            json.dumps(patch),
        )

    def reuse(self) -> None:
        """Take over the existing cluster: its kubeconfig, then ready nodes and DNS, and
        the NetworkPolicy enforcer as :meth:`create` leaves it (a no-op when it is)."""
        self.kubeconfig.write_text(run(self.kind, "get", "kubeconfig", "--name", self.name))
        self.wait_until_ready()
        self.enforce_network_policies()

    def wait_until_ready(self, timeout: float = _READY_TIMEOUT_S) -> None:
        self.kubectl(
            "wait",
            "--for=condition=Ready",
            "nodes",
            "--all",
            f"--timeout={timeout}s",
            timeout=timeout + 10,
        )
        self.kubectl(
            "--namespace",
            "kube-system",
            "rollout",
            "status",
            "deployment/coredns",
            f"--timeout={timeout}s",
            timeout=timeout + 10,
        )

    def enforce_network_policies(self, timeout: float = _READY_TIMEOUT_S) -> None:
        """kube-router's firewall on every node (``e2e/kube-router.yaml``): the image of
        ``make kube-router-image`` loaded into each node, the manifest applied with that
        image, then wait until its DaemonSet is ready on every node. kubectl apply and
        `kind load` change nothing that is already so."""
        image = os.environ.get(_ENFORCER_IMAGE_VARIABLE)
        if not image:
            raise ClusterError(
                f"${_ENFORCER_IMAGE_VARIABLE} is unset: run the e2e tests through `make e2e`"
            )
        try:
            run("docker", "image", "inspect", image)
        except ClusterError:
            raise ClusterError(f"image {image} not found: run `make kube-router-image`") from None
        self.load(image, nodes=self.nodes())
        documents = list(yaml.safe_load_all(_ENFORCER_MANIFEST.read_text()))
        for document in documents:
            if document["kind"] == "DaemonSet":
                for container in document["spec"]["template"]["spec"]["containers"]:
                    container["image"] = image
        self.kubectl("apply", "--filename", "-", input=yaml.safe_dump_all(documents))
        self.kubectl(
            "--namespace",
            "kube-system",
            "rollout",
            "status",
            "daemonset/kube-router",
            f"--timeout={timeout}s",
            timeout=timeout + 10,
        )

    def delete(self) -> None:
        """Delete the nodes, then kind's Docker network when no container uses it any
        more (kind keeps it for the clusters to come)."""
        run(self.kind, "delete", "cluster", "--name", self.name, timeout=180)
        attached = run(
            "docker", "network", "inspect", "kind", "--format", "{{len .Containers}}", check=False
        ).strip()
        if attached == "0":
            run("docker", "network", "rm", "kind", check=False)

    def export_logs(self, directory: Path) -> None:
        """kind's own log export (journals, container logs, node files) into directory."""
        run(
            self.kind,
            "export",
            "logs",
            str(directory),
            "--name",
            self.name,
            timeout=300,
            check=False,
        )

    def save_state(self, directory: Path, namespaces: list[str]) -> None:
        """What explains a failure, as files in ``directory``: nodes, pods, volumes,
        events, NetworkPolicies and tidelog's custom resources of the whole cluster, the
        logs of every pod in ``namespaces`` (with their previous containers') and of the
        NetworkPolicy enforcer, and each node's kubelet, containerd and pod-network
        journal."""
        directory.mkdir(parents=True, exist_ok=True)
        listings = {
            "nodes-and-pods.txt": ("get", "nodes,pods,pvc,pv", "--all-namespaces", "-o", "wide"),
            "events.txt": ("get", "events", "--all-namespaces", "--sort-by=.lastTimestamp"),
            "network-policies.yaml": ("get", "networkpolicies", "--all-namespaces", "-o", "yaml"),
            "kube-router.log": (
                "logs",
                "--namespace",
                "kube-system",
                "--selector",
                "k8s-app=kube-router",
                "--prefix",
                "--max-log-requests=10",
                "--tail=300",
            ),
            "resources.yaml": (
                "get",
                "clusters,topics,consumergroups",
                "--all-namespaces",
                "-o",
                "yaml",
            ),
        }
        for name, args in listings.items():
            (directory / name).write_text(self.kubectl(*args, check=False))
        for namespace in namespaces:
            for pod in self.kubectl(
                "get", "pods", "-n", namespace, "-o", "name", check=False
            ).split():
                logs = [
                    self.kubectl(
                        "logs",
                        "-n",
                        namespace,
                        pod,
                        "--all-containers",
                        "--tail=2000",
                        *previous,
                        check=False,
                    )
                    for previous in ((), ("--previous",))
                ]
                text = logs[0] + ("\n--- previous container ---\n" + logs[1] if logs[1] else "")
                (directory / f"{namespace}-{pod.replace('/', '-')}.log").write_text(text)
        units = ("kubelet", "containerd", "tidelog-pod-network")
        for node in self.nodes():
            journal = self.node_exec(
                node,
                "journalctl",
                "--no-pager",
                "-n",
                "300",
                *(f"--unit={unit}" for unit in units),
                check=False,
            )
            (directory / f"{node}.journal").write_text(journal)

    # -- nodes ---------------------------------------------------------------------------

    def nodes(self) -> list[str]:
        return sorted(run(self.kind, "get", "nodes", "--name", self.name).split())

    def workers(self) -> list[str]:
        return [node for node in self.nodes() if not node.endswith("-control-plane")]

    def load(self, *images: str, nodes: list[str] | None = None) -> None:
        """Put local Docker images into the containerd of ``nodes`` (every worker by
        default) (`kind load`)."""
        run(
            self.kind,
            "load",
            "docker-image",
            *images,
            "--name",
            self.name,
            "--nodes",
            ",".join(nodes or self.workers()),
            timeout=600,
        )

    def node_exec(self, node: str, *command: str, check: bool = True) -> str:
        """Run a command in a node container (as `docker exec`)."""
        return run("docker", "exec", node, *command, check=check)

    def wipe_disks(self) -> None:
        """Empty every worker's disks (/mnt/disks/*) but lost+found, as the next user of
        the cluster expects them."""
        for node in self.workers():
            self.node_exec(
                node,
                "sh",
                "-c",
                "find /mnt/disks/* -mindepth 1 -maxdepth 1 ! -name lost+found -exec rm -rf {} +",
            )

    def restart_node(self, node: str) -> None:
        run("docker", "restart", node, timeout=180)

    def stop_node(self, node: str) -> None:
        """The node's machine off (its container stopped), its disks with it."""
        run("docker", "stop", node, timeout=180)

    def start_node(self, node: str) -> None:
        """The node's container started again: its kubelet registers the Node anew."""
        run("docker", "start", node, timeout=180)

    # -- the API ---------------------------------------------------------------------------

    def kubectl(
        self, *args: str, input: str | None = None, timeout: float = 120, check: bool = True
    ) -> str:
        return run(
            self.kubectl_path,
            "--kubeconfig",
            str(self.kubeconfig),
            *args,
            input=input,
            timeout=timeout,
            check=check,
        )

    def get(self, *args: str) -> dict:
        """``kubectl get ... -o json``, parsed."""
        return json.loads(self.kubectl("get", *args, "--output", "json"))

    def wait_for(self, condition, what: str, timeout: float = 120, interval: float = 2) -> None:
        """``wait_until`` ``condition`` (a ClusterError from it counts as not yet); a
        ClusterError naming ``what`` and the last answer or error when the time runs out."""
        try:
            wait_until(condition, what, timeout, interval=interval, retry_on=(ClusterError,))
        except WaitTimeout as timeout_error:
            raise ClusterError(
                f"{what}: not so within {timeout} s (last: {timeout_error.last!r})"
            ) from None
