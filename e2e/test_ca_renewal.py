"""The Cluster's CAs renewed under the example deployment (e2e/conftest.py) while an
idempotent acks=all producer runs: the cluster CA because its renewal period has come
(``renewalDays`` raised to the whole of its year, so that it is due at once, as it would
be a month before its end), the clients CA at the same time because its Secret carries
``tidelog.dev/force-renew``. The operator is killed (its pod force-deleted, no clean
stop) at each step of the cluster CA's renewal, Trust, Reissue and Drop, and each time
its successor resumes from what it observes. At the end each CA is of generation 1 and
trusted alone, every broker serves the certificate its Secret holds, no partition of
the producer's topic was ever seen below ``min.insync.replicas`` and nothing the
producer sent was lost or written twice."""

from __future__ import annotations

import base64
import json
import threading
from collections.abc import Iterator

import pytest

from e2e.kind_cluster import ClusterError
from e2e.operator_deployment import OperatorDeployment
from e2e.producing import nothing_lost, steady_producer

STEPS = ("Trust", "Reissue", "Drop")
PREFIX = "renewal"
MIN_INSYNC = 2  # examples/topics.yaml: orders
SECURE_PORT = 9093  # examples/cluster.yaml: the secure listener (TLS)


def _certificates(deployment: OperatorDeployment) -> dict:
    return deployment.get("cluster/events").get("status", {}).get("certificates", {})


def _step(deployment: OperatorDeployment, ca: str) -> str | None:
    return _certificates(deployment).get(ca, {}).get("renewal", {}).get("step")


def _finished(deployment: OperatorDeployment, ca: str) -> bool:
    record = _certificates(deployment).get(ca, {})
    return record.get("generation") == 1 and "renewal" not in record


def _kill_operator(deployment: OperatorDeployment) -> None:
    """The operator's pod deleted at once, no grace: its process gets no chance to finish
    what it was doing; its Deployment starts another."""
    deployment.cluster.kubectl(
        "delete", "pods", "--all", "--namespace", deployment.operator_namespace,
        "--grace-period=0", "--force", "--wait=false",
    )  # fmt: skip


class IsrWatch:
    """The smallest ISR of any partition of ``orders`` seen while it runs, polled from
    the toolbox (bounded: stops with the test, or after an hour)."""

    def __init__(self, deployment: OperatorDeployment):
        self.deployment = deployment
        self.smallest: int | None = None
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        for _ in range(3600 // 3):
            if self._stop.wait(3):
                return
            try:
                described = self.deployment.client("describe-topic", "--topic", "orders")
            except (ClusterError, ValueError, IndexError):
                continue  # a broker restarting answered nothing usable: no sample
            sizes = [len(p["isr"]) for p in described["partitions"].values()]
            if sizes:
                self.samples += 1
                low = min(sizes)
                self.smallest = low if self.smallest is None else min(self.smallest, low)

    def __enter__(self) -> IsrWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join(timeout=300)


def _served_certificate(deployment: OperatorDeployment, broker: int) -> str:
    """The certificate broker ``broker`` presents on the secure listener, as PEM."""
    host = f"events-broker-{broker}.events-brokers"
    script = (
        "import ssl, sys; "
        f"print(ssl.get_server_certificate((sys.argv[1], {SECURE_PORT})), end='')"
    )
    return deployment.kubectl("exec", "toolbox", "--", "python", "-c", script, host)


def _secret(deployment: OperatorDeployment, name: str) -> dict:
    return deployment.get(f"secret/{name}")


def _decoded(secret: dict, key: str) -> str:
    return base64.b64decode(secret["data"][key]).decode()


def _cluster_ca_days(deployment: OperatorDeployment, validity: int, renewal: int) -> None:
    days = {"validityDays": validity, "renewalDays": renewal}
    patch = {"spec": {"certificates": {"clusterCa": days}}}
    deployment.kubectl("patch", "cluster/events", "--type=merge", "--patch", json.dumps(patch))


@pytest.fixture
def default_renewal_days_after(deployment: OperatorDeployment) -> Iterator[None]:
    """The cluster CA's days put back to the defaults after the test (the renewed CA,
    valid for a year from now, is then not due)."""
    yield
    _cluster_ca_days(deployment, 365, 30)


def test_both_cas_are_renewed_while_a_producer_runs_and_the_operator_is_killed(
    deployment: OperatorDeployment, default_renewal_days_after: None
) -> None:
    before = {
        name: _decoded(_secret(deployment, name), "ca.crt")
        for name in ("events-cluster-ca", "events-clients-ca")
    }
    producer = steady_producer(deployment, PREFIX, minutes=30)
    with IsrWatch(deployment) as isr:
        deployment.kubectl("annotate", "secret/events-clients-ca", "tidelog.dev/force-renew=true")
        # The CA was made minutes ago for 365 days: a renewal period of 365 days (the
        # renewed one then made for 366, as renewalDays must be less) makes it due now.
        _cluster_ca_days(deployment, 366, 365)
        for step in STEPS:
            deployment.wait_for(
                lambda step=step: _step(deployment, "clusterCa") == step,
                f"the cluster CA's renewal at {step}",
                timeout=900,
            )
            _kill_operator(deployment)
        deployment.wait_for(
            lambda: _finished(deployment, "clusterCa") and _finished(deployment, "clientsCa"),
            "both renewals finished",
            timeout=900,
        )
        deployment.wait_for(
            lambda: deployment.condition("cluster/events", "Ready").get("status") == "True",
            "the Cluster Ready",
            timeout=600,
        )
    nothing_lost(deployment, producer, PREFIX)
    assert isr.samples > 0 and isr.smallest is not None and isr.smallest >= MIN_INSYNC, (
        isr.samples,
        isr.smallest,
    )

    for name, bundle in (
        ("events-cluster-ca", "events-cluster-ca-cert"),
        ("events-clients-ca", "events-clients-ca-cert"),
    ):
        secret = _secret(deployment, name)
        assert secret["metadata"]["annotations"]["tidelog.dev/ca-generation"] == "1", name
        assert "ca-previous.crt" not in secret["data"], name
        assert "tidelog.dev/force-renew" not in secret["metadata"]["annotations"], name
        renewed = _decoded(secret, "ca.crt")
        assert renewed != before[name], name
        trusted = _decoded(_secret(deployment, bundle), "ca.crt")
        assert renewed in trusted and before[name] not in trusted, bundle
    keystores = _secret(deployment, "events-broker-certs")
    for broker in range(3):
        pem = _decoded(keystores, f"events-broker-{broker}.pem")
        assert _served_certificate(deployment, broker).strip() in pem, broker
    said = deployment.kubectl(
        "get", "events", "--field-selector", "involvedObject.name=events,reason=CaRenewal",
        "--output", "jsonpath={.items[*].message}",
    )  # fmt: skip
    for step in (
        "the cluster CA is renewed with the same key (Expiry): generation 1, trusted first",
        "the cluster CA: generation 1 is trusted everywhere; its leaves are reissued",
        "the cluster CA: every leaf is of generation 1; the old CA is dropped",
        "the cluster CA is renewed: generation 1, until",
        "the clients CA is renewed with the same key (ForceRenew): generation 1, trusted first",
        "the clients CA is renewed: generation 1, until",
    ):
        assert step in said, said
