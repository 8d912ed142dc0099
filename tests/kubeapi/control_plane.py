"""A real Kubernetes control plane for tests: etcd, kube-apiserver and
kube-controller-manager as child processes on loopback ports.

No kubelet and no scheduler: Pods stay Pending, but everything the API server and the
controllers do is real (validation against CRD schemas, RBAC, StatefulSets creating Pods
and PVCs, garbage collection through owner references). The binaries come from
``make k8s-tools``, which puts their directories on ``TIDELOG_K8S_PATH``.
"""

from __future__ import annotations

import base64
import os
import shutil
import ssl
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

import yaml
from kubernetes import client, config

from kubeapi.certs import KeyPair, Pki, make_pki
from tidelog.child_process import die_with_parent
from tidelog.server.process import free_port
from waiting import WaitTimeout, wait_until

__all__ = ["ControlPlane", "ControlPlaneError", "find_tool"]

TOOLS_PATH_ENV_VAR = "TIDELOG_K8S_PATH"
_READY_TIMEOUT_S = 60.0
_POLL_INTERVAL_S = 0.1
_LOG_TAIL_LINES = 30


class ControlPlaneError(RuntimeError):
    pass


def find_tool(name: str) -> str:
    """The path of ``name`` (kubectl, helm, kind, etcd, ...) from ``make k8s-tools``."""
    search_path = os.environ.get(TOOLS_PATH_ENV_VAR)
    found = shutil.which(name, path=search_path) if search_path else None
    if not found:
        raise ControlPlaneError(
            f"{name} not found on ${TOOLS_PATH_ENV_VAR} ({search_path or 'unset'}): "
            "run the tests through `make test`, or `make k8s-tools` and export the "
            "variable as `make -s k8s-env` shows"
        )
    return found


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager in ``directory``.

    Use as a context manager. :attr:`kubeconfig` is an admin (system:masters) kubeconfig
    for kubectl, helm, kopf and the kubernetes client.
    """

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.kubeconfig = directory / "admin.kubeconfig"
        self.server = ""
        self._processes: list[tuple[str, subprocess.Popen[bytes], Path]] = []

    def __enter__(self) -> ControlPlane:
        try:
            self.start()
        except BaseException:
            self.stop()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        pki = make_pki(self.directory / "pki")
        etcd_url = self._start_etcd()
        apiserver_port = free_port()
        self.server = f"https://127.0.0.1:{apiserver_port}"
        self._start_apiserver(pki, etcd_url, apiserver_port)
        self._write_kubeconfig(self.kubeconfig, pki.ca, pki.admin)
        self._wait_until_ready(pki)
        kcm_kubeconfig = self.directory / "controller-manager.kubeconfig"
        self._write_kubeconfig(kcm_kubeconfig, pki.ca, pki.controller_manager)
        self._start_controller_manager(pki, kcm_kubeconfig)
        self._wait_for_controllers()

    def stop(self) -> None:
        for _, process, _ in reversed(self._processes):
            if process.poll() is None:
                process.terminate()
        for _, process, _ in reversed(self._processes):
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._processes.clear()

    def api_client(self) -> client.ApiClient:
        """A kubernetes client logged in as the admin."""
        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def kubectl(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
        """kubectl as the admin, its output captured as text; the caller checks the exit."""
        return subprocess.run(
            [find_tool("kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
            input=stdin,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )

    # -- processes -------------------------------------------------------------------

    def _spawn(self, name: str, args: list[str]) -> None:
        log_path = self.directory / f"{name}.log"
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                [find_tool(name), *args],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                preexec_fn=die_with_parent(),
            )
        self._processes.append((name, process, log_path))

    def _start_etcd(self) -> str:
        client_url = f"http://127.0.0.1:{free_port()}"
        peer_url = f"http://127.0.0.1:{free_port()}"
        self._spawn(
            "etcd",
            [
                f"--data-dir={self.directory / 'etcd'}",
                f"--listen-client-urls={client_url}",
                f"--advertise-client-urls={client_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=default={peer_url}",
                # A throw-away store: durability buys nothing and costs every write a sync.
                "--unsafe-no-fsync=true",
                "--log-level=warn",
            ],
        )
        return client_url

    def _start_apiserver(self, pki: Pki, etcd_url: str, port: int) -> None:
        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={self.directory / 'apiserver-certs'}",
                f"--tls-cert-file={pki.apiserver.cert}",
                f"--tls-private-key-file={pki.apiserver.key}",
                f"--client-ca-file={pki.ca.cert}",
                "--service-account-issuer=https://kubernetes.default.svc.cluster.local",
                f"--service-account-key-file={pki.service_account_public_key}",
                f"--service-account-signing-key-file={pki.service_account_key}",
                "--service-cluster-ip-range=10.96.0.0/16",
                "--authorization-mode=Node,RBAC",
                "--allow-privileged=true",
                # No Pod can reach a loopback address: publish no endpoints for the
                # `kubernetes` Service rather than have them rejected every few seconds.
                "--endpoint-reconciler-type=none",
            ],
        )

    def _start_controller_manager(self, pki: Pki, kubeconfig: Path) -> None:
        self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                f"--cert-dir={self.directory / 'controller-manager-certs'}",
                "--leader-elect=false",
                # Each controller acts as its own service account, as in a real cluster.
                "--use-service-account-credentials=true",
                f"--service-account-private-key-file={pki.service_account_key}",
                f"--root-ca-file={pki.ca.cert}",
                f"--cluster-signing-cert-file={pki.ca.cert}",
                f"--cluster-signing-key-file={pki.ca.key}",
            ],
        )

    # -- readiness -------------------------------------------------------------------

    def _wait_until_ready(self, pki: Pki) -> None:
        context = ssl.create_default_context(cafile=str(pki.ca.cert))
        context.load_cert_chain(str(pki.admin.cert), str(pki.admin.key))
        last_error = ""

        def ready() -> bool:
            nonlocal last_error
            try:
                with urllib.request.urlopen(
                    f"{self.server}/readyz", context=context, timeout=2
                ) as response:
                    return response.status == 200
            except (urllib.error.URLError, OSError) as error:
                last_error = str(error)
                return False

        self._wait("kube-apiserver /readyz", ready, lambda: last_error)

    def _wait_for_controllers(self) -> None:
        """The controllers work once the service-account controller has created the
        ``default`` ServiceAccount, which Pods need before they can be admitted."""
        with self.api_client() as api:
            core = client.CoreV1Api(api)

            def default_service_account() -> bool:
                accounts = core.list_namespaced_service_account("default").items
                return any(account.metadata.name == "default" for account in accounts)

            self._wait("the default ServiceAccount", default_service_account, lambda: "")

    def _wait(
        self, what: str, condition: Callable[[], bool], last_error: Callable[[], str]
    ) -> None:
        """``wait_until`` ``condition``, failing at once (ControlPlaneError) when one of
        the processes exits, and with their logs' tails when the time runs out."""

        def still_running_and(condition: Callable[[], bool]) -> bool:
            for name, process, log_path in self._processes:
                if process.poll() is not None:
                    raise ControlPlaneError(
                        f"{name} exited with {process.returncode} while waiting for {what}"
                        f"\n{_tail(log_path)}"
                    )
            return condition()

        try:
            wait_until(
                lambda: still_running_and(condition),
                what,
                _READY_TIMEOUT_S,
                interval=_POLL_INTERVAL_S,
                retry_on=(),
            )
        except WaitTimeout:
            logs = "\n".join(f"--- {name}\n{_tail(log)}" for name, _, log in self._processes)
            raise ControlPlaneError(
                f"no {what} after {_READY_TIMEOUT_S:.0f} s ({last_error()})\n{logs}"
            ) from None

    def _write_kubeconfig(self, path: Path, ca: KeyPair, user: KeyPair) -> None:
        def encoded(file: Path) -> str:
            return base64.b64encode(file.read_bytes()).decode("ascii")

        document = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "tidelog-test",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority-data": encoded(ca.cert),
                    },
                }
            ],
            "users": [
                {
                    "name": "user",
                    "user": {
                        "client-certificate-data": encoded(user.cert),
                        "client-key-data": encoded(user.key),
                    },
                }
            ],
            "contexts": [
                {"name": "tidelog-test", "context": {"cluster": "tidelog-test", "user": "user"}}
            ],
            "current-context": "tidelog-test",
        }
        path.write_text(yaml.safe_dump(document, sort_keys=False))
        path.chmod(0o600)


def _tail(log_path: Path) -> str:
    lines = log_path.read_text(errors="replace").splitlines()
    return "\n".join(lines[-_LOG_TAIL_LINES:])
