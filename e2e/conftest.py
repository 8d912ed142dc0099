"""The e2e session: a kind cluster (e2e/kind.yaml: 1 control plane + 4 workers, three
real disks per worker) with our images loaded, shared by every e2e test.

``make e2e`` runs these tests alone, ``make test`` after the rest. Both build what the
fixture needs first (``make k8s-tools images kind-node-image``); the fixture itself
never skips: a missing piece is an error that says which make target provides it.

Environment:
- ``E2E_KEEP=1`` keeps the cluster and its disks after the session (for debugging with
  ``kubectl --kubeconfig build/e2e/kubeconfig``); the next session of the same checkout
  reuses them. A cluster and disks that a session left without keeping them (it was
  killed, or another checkout kept them) hold state no test expects: they are deleted
  and made anew.
- ``E2E_DISK_SIZE`` (default ``1GiB``) sizes each disk.

When a test fails, the state of the cluster (nodes, pods, events, tidelog's resources, the
logs of the test's pods and of the operator, the kubelet's journal) goes to
``build/e2e/logs/<test>/``, with a copy in
``~/.cache/tidelog/e2e-failures/`` that outlives the checkout (the newest ten), and the
report says so; when the cluster cannot be created, kind's own log export goes there too.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from e2e import disks
from e2e.kind_cluster import ClusterError, KindCluster, run
from e2e.operator_deployment import OperatorDeployment
from e2e.paths import (
    E2E,
    KEPT_FAILURES,
    KEPT_FAILURES_COUNT,
    KIND_CONFIG,
    LOGS,
    MANIFESTS,
    REPO,
    WORKDIR,
)

CLIENT_IMAGE_NAME = "tidelog-e2e-client"
# Written when a session ends with E2E_KEEP=1, removed when the next one starts: the
# cluster it names was left clean on purpose.
KEPT_MARK = WORKDIR / "kept-cluster"
KAFKA_PYTHON_REQUIREMENT = "kafka-python==3.0.12"


def _keep() -> bool:
    return os.environ.get("E2E_KEEP") == "1"


def node_image() -> str:
    """The node image of ``make kind-node-image``; the script returns at once when it is
    up to date and prints its name."""
    script = REPO / "tools" / "kind" / "node-image.sh"
    missing = [
        v for v in ("KUBERNETES_VERSION", "ETCD_VERSION", "COREDNS_VERSION") if v not in os.environ
    ]
    if missing:
        raise ClusterError(f"{', '.join(missing)} unset: run the e2e tests through `make e2e`")
    return run(str(script), timeout=1800).strip()


def broker_image() -> str:
    return _built_image("TIDELOG_BROKER_IMAGE")


def operator_image() -> str:
    return _built_image("TIDELOG_OPERATOR_IMAGE")


def spark_image() -> str:
    return _built_image("TIDELOG_SPARK_IMAGE")


def _built_image(variable: str) -> str:
    """The image the Makefile names in ``variable``, which `make images` built."""
    image = os.environ.get(variable)
    if not image:
        raise ClusterError(f"${variable} is unset: run the e2e tests through `make e2e`")
    try:
        run("docker", "image", "inspect", image)
    except ClusterError:
        raise ClusterError(f"image {image} not found: run `make images`") from None
    return image


def client_image(broker: str) -> str:
    """The client image (e2e/client/) on top of ``broker``, built from a kafka-python wheel
    made here; Docker's cache makes a rebuild of an unchanged one take seconds."""
    version = broker.rpartition(":")[2]
    image = f"{CLIENT_IMAGE_NAME}:{version}"
    context = WORKDIR / "client-image"
    wheels = context / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    for old in wheels.glob("*.whl"):
        old.unlink()
    python = REPO / ".venv" / "bin" / "python"
    run(
        str(python),
        "-m",
        "pip",
        "wheel",
        "--quiet",
        "--no-deps",
        "--disable-pip-version-check",
        "--wheel-dir",
        str(wheels),
        KAFKA_PYTHON_REQUIREMENT,
        timeout=300,
    )
    for name in ("Dockerfile", "e2e_client.py"):
        (context / name).write_bytes((E2E / "client" / name).read_bytes())
    run(
        "docker",
        "build",
        "--quiet",
        "--build-arg",
        f"BROKER_IMAGE={broker}",
        "--tag",
        image,
        str(context),
        timeout=600,
    )
    return image


def manifest_images() -> set[str]:
    """Every image the manifests of e2e/manifests name."""
    found = set()
    for path in MANIFESTS.glob("*.yaml"):
        found.update(re.findall(r"^\s*image:\s*(\S+)", path.read_text(), re.MULTILINE))
    return found


def disk_mount_points() -> list[Path]:
    """The host paths that kind.yaml maps to /mnt/disks/<n> in the workers."""
    config = yaml.safe_load(KIND_CONFIG.read_text())
    return [
        Path(mount["hostPath"])
        for node in config["nodes"]
        for mount in node.get("extraMounts", [])
        if mount["containerPath"].startswith("/mnt/disks/")
    ]


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "removes_deployment: the e2e test that removes the example deployment"
    )


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """An e2e test may create the cluster (minutes) before it runs: each gets 20 minutes.
    The tests of the example deployment run together: those of other modules first, then
    those of the module whose test removes it (so that its module fixtures are made
    once), that test last; then the e2e tests that need no deployment.
    The deployment is one for the session, not one per module."""
    e2e = [i for i, item in enumerate(items) if Path(item.path).is_relative_to(E2E)]
    for i in e2e:
        items[i].add_marker(pytest.mark.timeout(1200))
    removal = {items[i].path for i in e2e if items[i].get_closest_marker("removes_deployment")}

    def group(item: pytest.Item) -> int:
        if item.get_closest_marker("removes_deployment"):
            return 2
        if "deployment" not in getattr(item, "fixturenames", ()):
            return 3
        return 1 if item.path in removal else 0

    ordered = sorted((items[i] for i in e2e), key=group)
    for i, item in zip(e2e, ordered, strict=True):
        items[i] = item


@pytest.fixture(scope="session")
def deployment(kind_cluster: KindCluster, pytestconfig) -> Iterator[OperatorDeployment]:
    """The chart installed and the examples applied (``operator_deployment``), until the
    test marked ``removes_deployment`` removes them (or the session ends)."""
    deployed = OperatorDeployment(kind_cluster, "e2e-operator")
    progress = Progress(pytestconfig)
    try:
        deployed.install(operator_image())
        progress.done("helm install of the chart, kubectl apply of the examples")
        deployed.wait_ready()
        progress.done("the example Cluster Ready")
    except ClusterError:
        namespaces = [deployed.namespace, deployed.operator_namespace]
        kind_cluster.save_state(LOGS / "operator-deploy", namespaces)
        deployed.remove()
        raise
    yield deployed
    deployed.remove()


class Progress:
    """One line on the terminal per finished step of the session's set-up, with its time:
    pytest shows nothing else while the cluster is being made."""

    def __init__(self, config: pytest.Config):
        self.reporter = config.pluginmanager.get_plugin("terminalreporter")
        self.capture = config.pluginmanager.get_plugin("capturemanager")
        # An xdist worker's (``pytest --numprocesses N``) reporter writes nowhere; its
        # stderr is the terminal's.
        self.in_worker = hasattr(config, "workerinput")
        self.started = time.monotonic()

    def begin(self) -> None:
        """The next step starts now (what happened since is not set-up)."""
        self.started = time.monotonic()

    def done(self, what: str) -> None:
        now = time.monotonic()
        line = f"e2e: {what} ({now - self.started:.1f} s)"
        if self.reporter is not None and self.capture is not None:
            # Output is captured while fixtures run; this line is for the terminal.
            with self.capture.global_and_fixture_disabled():
                if self.in_worker:
                    print(f"\n{line}", file=sys.stderr, flush=True)
                else:
                    self.reporter.write_line(line)
        self.started = now


@pytest.fixture(scope="session")
def kind_cluster(pytestconfig: pytest.Config) -> Iterator[KindCluster]:
    """The kind cluster, ready, with the broker, client and operator images on its
    workers."""
    progress = Progress(pytestconfig)
    WORKDIR.mkdir(parents=True, exist_ok=True)
    broker = broker_image()
    images = {broker, client_image(broker), operator_image()}
    wrong = manifest_images() - images
    if wrong:
        raise ClusterError(
            f"e2e/manifests name {sorted(wrong)}, but the images are "
            f"{sorted(images)}: update the manifests"
        )
    progress.done(f"images {', '.join(sorted(images))}")
    cluster = KindCluster(KIND_CONFIG, node_image(), WORKDIR)
    progress.done(f"node image {cluster.node_image}")
    kept = _kept_on_purpose(cluster)
    if not kept:
        _remove_leftovers(cluster)
    node_disks = disks.prepare(disk_mount_points(), os.environ.get("E2E_DISK_SIZE", "1GiB"))
    progress.done(f"{len(node_disks)} disks mounted under {disks.ROOT}")
    try:
        progress.done(_create_or_reuse(cluster, kept))
        cluster.load(*sorted(images))
        progress.done(f"images loaded into {', '.join(cluster.workers())}")
        yield cluster
    finally:
        progress.begin()
        if _keep():
            KEPT_MARK.write_text(cluster.name)
            progress.done(f"cluster {cluster.name} and its disks kept (E2E_KEEP=1)")
        else:
            if cluster.exists():
                cluster.delete()
            disks.release(node_disks)
            progress.done(f"cluster {cluster.name} and its disks removed")


def _kept_on_purpose(cluster: KindCluster) -> bool:
    """Whether the last session of this checkout kept ``cluster`` (E2E_KEEP=1) and it is
    still there; the mark is used up either way."""
    marked = KEPT_MARK.exists() and KEPT_MARK.read_text() == cluster.name
    KEPT_MARK.unlink(missing_ok=True)
    return marked and cluster.exists()


def _remove_leftovers(cluster: KindCluster) -> None:
    """Delete the cluster and our disks that a session left without keeping them: it was
    interrupted half-way, and its releases, namespaces and data would meet the tests."""
    if cluster.exists():
        print(f"deleting the cluster {cluster.name} that an unfinished session left")
        cluster.delete()
    disks.discard(disk_mount_points())


def _create_or_reuse(cluster: KindCluster, kept: bool) -> str:
    """The cluster ready to use, created or kept from an earlier session; says which."""
    if kept:
        try:
            cluster.reuse()
            return f"reused the kept cluster {cluster.name}"
        except ClusterError as error:
            print(f"the kept cluster {cluster.name} is not usable ({error}); recreating it")
            cluster.delete()
    try:
        cluster.create()
    except ClusterError:
        cluster.export_logs(LOGS / "create-cluster")
        raise
    return f"created the cluster {cluster.name}: {', '.join(cluster.nodes())}"


# -- what a failed test leaves behind -------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo) -> Iterator[None]:
    outcome = yield
    report = outcome.get_result()
    cluster = item.funcargs.get("kind_cluster") if hasattr(item, "funcargs") else None
    if not report.failed or report.when == "teardown" or cluster is None:
        return
    directory = LOGS / re.sub(r"[^\w.-]+", "_", item.nodeid)
    namespaces = [  # the test's, and the operator's
        namespace
        for value in item.funcargs.values()
        for attribute in ("namespace", "operator_namespace")
        if isinstance(namespace := getattr(value, attribute, None), str)
    ]
    try:
        cluster.save_state(directory, namespaces)
    except (ClusterError, OSError, subprocess.SubprocessError) as error:
        report.sections.append(("e2e state", f"could not collect the cluster's state: {error}"))
        return
    kept = _keep_failure(directory)
    report.sections.append(("e2e state", f"the cluster's state is in {directory} and {kept}"))


def _keep_failure(directory: Path) -> Path:
    """A copy of a failure's state in KEPT_FAILURES (the newest KEPT_FAILURES_COUNT stay)."""
    copy = KEPT_FAILURES / f"{time.strftime('%Y%m%dT%H%M%S')}-{directory.name}"
    shutil.copytree(directory, copy, dirs_exist_ok=True)
    for old in sorted(KEPT_FAILURES.iterdir())[:-KEPT_FAILURES_COUNT]:
        shutil.rmtree(old, ignore_errors=True)
    return copy
