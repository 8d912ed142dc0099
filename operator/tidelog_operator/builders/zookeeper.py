"""The ZooKeeper ensemble a Cluster runs (unless ``spec.zookeeper.connect`` names an
existing one): a StatefulSet of ``tidelog-zookeeper`` servers from the broker image,
each server ``<ordinal + 1>`` of the ensemble with a volume of its own, and the headless
Service through which they find each other and the brokers find them.

The ensemble speaks TLS only (issue 63): clients on :data:`~names.ZOOKEEPER_TLS_PORT`
with a certificate of the cluster CA (the brokers'; ZooKeeper's x509 provider makes
their subject the owner of the znodes they create, ``zookeeper.set.acl``), servers among
themselves with their own certificates (quorum TLS). The plain client port listens on
loopback only, for the readiness probe's ``srvr``. Quorum host name verification is off:
a peer is checked against the cluster CA, and only the ensemble's pods may reach the
quorum ports (the Cluster's NetworkPolicy). ZooKeeper does not notice a Secret's files
swapped under it, so servers restart (a rolling update) when their certificates change.
"""

from __future__ import annotations

from typing import Any

from tidelog_operator import names
from tidelog_operator.builders.certificates import CA_TRUST_ANNOTATION
from tidelog_operator.builders.common import spread_over_nodes
from tidelog_operator.builders.listeners import CA_FILE, CLUSTER_CA_DIR
from tidelog_operator.spec import ClusterSpec

__all__ = [
    "client_keys",
    "connect_string",
    "zookeeper_hosts",
    "zookeeper_service",
    "zookeeper_statefulset",
]

DATA_DIR = "/var/lib/tidelog/zookeeper"
CERTS_DIR = "/etc/tidelog/tls/zookeeper"
CERTIFICATES_ISSUED = "tidelog.dev/certificates-issued"
# How long a server waits at start for the others, which may take a while to be
# scheduled, and the brokers for the ensemble (``brokers.default_keys``).
START_TIMEOUT_S = 600
CLUSTER_CA_FILE = f"{CLUSTER_CA_DIR}/{CA_FILE}"


def _host(spec: ClusterSpec, ordinal: int) -> str:
    return (
        f"{names.zookeeper_statefulset(spec.name)}-{ordinal}."
        f"{names.zookeeper_service(spec.name)}.{spec.namespace}.svc"
    )


def zookeeper_hosts(spec: ClusterSpec, ordinal: int) -> list[str]:
    """Every name server ``ordinal`` is reached by: its pod's under the headless Service,
    short and qualified (its certificate names them all)."""
    pod = f"{names.zookeeper_statefulset(spec.name)}-{ordinal}"
    base = f"{pod}.{names.zookeeper_service(spec.name)}"
    return [
        base,
        f"{base}.{spec.namespace}",
        f"{base}.{spec.namespace}.svc",
        f"{base}.{spec.namespace}.svc.cluster.local",
    ]


def connect_string(spec: ClusterSpec) -> str:
    """The brokers' ``zookeeper.connect``: the external one, or every server of ours
    (their TLS port)."""
    if spec.zookeeper.external:
        return spec.zookeeper.connect
    return ",".join(
        f"{_host(spec, i)}:{names.ZOOKEEPER_TLS_PORT}" for i in range(spec.zookeeper.replicas)
    )


def client_keys(spec: ClusterSpec) -> dict[str, str]:
    """The brokers' keys for the Cluster's own ensemble: TLS with their own certificate
    (the per-pod ``zookeeper.ssl.keystore.location`` comes at start) and znodes that
    only the brokers' identity may change. None for an external ensemble."""
    if spec.zookeeper.external:
        return {}
    return {
        "zookeeper.ssl.client.enable": "true",
        "zookeeper.clientCnxnSocket": "org.apache.zookeeper.ClientCnxnSocketNetty",
        "zookeeper.ssl.keystore.type": "PEM",
        "zookeeper.ssl.truststore.type": "PEM",
        "zookeeper.ssl.truststore.location": CLUSTER_CA_FILE,
        "zookeeper.set.acl": "true",
    }


def zookeeper_service(spec: ClusterSpec) -> dict[str, Any]:
    """Headless, naming servers that are not ready yet: they elect a leader before any
    of them serves."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": names.zookeeper_service(spec.name),
            "namespace": spec.namespace,
            "labels": names.zookeeper_labels(spec.name),
        },
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": names.zookeeper_labels(spec.name),
            "ports": [
                {"name": "client-tls", "port": names.ZOOKEEPER_TLS_PORT},
                {"name": "peer", "port": names.ZOOKEEPER_PEER_PORT},
                {"name": "election", "port": names.ZOOKEEPER_ELECTION_PORT},
            ],
        },
    }


def _command(spec: ClusterSpec) -> list[str]:
    servers = " ".join(
        f"--server {i + 1}={_host(spec, i)}:{names.ZOOKEEPER_PEER_PORT}:"
        f"{names.ZOOKEEPER_ELECTION_PORT}"
        for i in range(spec.zookeeper.replicas)
    )
    ensemble = (
        f" {servers} --my-id $(( ${{HOSTNAME##*-}} + 1 ))" if spec.zookeeper.replicas > 1 else ""
    )
    tls = (
        f" --host 127.0.0.1 --secure-port {names.ZOOKEEPER_TLS_PORT} --secure-host 0.0.0.0"
        f' --tls-keystore "{CERTS_DIR}/$HOSTNAME.pem" --tls-truststore {CLUSTER_CA_FILE}'
        " --client-auth need"
    )
    if spec.zookeeper.replicas > 1:
        tls += " --quorum-tls --no-quorum-hostname-verification"
    return [
        "sh",
        "-c",
        "exec tidelog-entrypoint tidelog-zookeeper"
        f" --start-timeout {START_TIMEOUT_S}{ensemble}{tls}",
    ]


def zookeeper_statefulset(
    spec: ClusterSpec, image: str, certificates_issued: int = 0, ca_trust: str | None = None
) -> dict[str, Any] | None:
    """The ensemble's servers; None when the Cluster uses an external ensemble. The pod
    template carries how many times their certificates were issued
    (``certificates_issued``) and the cluster CA generations their bundle trusts
    (``ca_trust``): a change of either restarts the servers, one at a time."""
    if spec.zookeeper.external:
        return None
    labels = names.zookeeper_labels(spec.name)
    annotations = {CERTIFICATES_ISSUED: str(certificates_issued)}
    if ca_trust is not None:
        annotations[CA_TRUST_ANNOTATION] = ca_trust
    claim: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": spec.zookeeper.size}},
    }
    if spec.zookeeper.storage_class:
        claim["storageClassName"] = spec.zookeeper.storage_class
    built = {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": {
            "name": names.zookeeper_statefulset(spec.name),
            "namespace": spec.namespace,
            "labels": labels,
        },
        "spec": {
            "serviceName": names.zookeeper_service(spec.name),
            "replicas": spec.zookeeper.replicas,
            "podManagementPolicy": "Parallel",
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {
                    "labels": labels,
                    "annotations": annotations,
                },
                "spec": {
                    "securityContext": {"runAsNonRoot": True, "fsGroup": 1001},
                    "affinity": spread_over_nodes(labels),
                    "containers": [
                        {
                            "name": "zookeeper",
                            "image": image,
                            "imagePullPolicy": "IfNotPresent",
                            "command": _command(spec),
                            "ports": [
                                {"name": "client-tls", "containerPort": names.ZOOKEEPER_TLS_PORT},
                                {"name": "peer", "containerPort": names.ZOOKEEPER_PEER_PORT},
                                {
                                    "name": "election",
                                    "containerPort": names.ZOOKEEPER_ELECTION_PORT,
                                },
                            ],
                            "readinessProbe": {
                                "exec": {
                                    "command": [
                                        "tidelog-healthcheck",
                                        "--zookeeper",
                                        f"127.0.0.1:{names.ZOOKEEPER_CLIENT_PORT}",
                                    ]
                                },
                                "periodSeconds": 5,
                                # the check is a Python process: Kubernetes' default of
                                # a second is not enough on a busy node, and servers
                                # flapping NotReady turn the Cluster not Ready
                                # (ZooKeeperNotReady) while the ensemble serves
                                "timeoutSeconds": 5,
                            },
                            "volumeMounts": [
                                {"name": "data", "mountPath": DATA_DIR},
                                {"name": "certs", "mountPath": CERTS_DIR, "readOnly": True},
                                {
                                    "name": "cluster-ca",
                                    "mountPath": CLUSTER_CA_DIR,
                                    "readOnly": True,
                                },
                            ],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "certs",
                            "secret": {"secretName": names.zookeeper_certs_secret(spec.name)},
                        },
                        {
                            "name": "cluster-ca",
                            "secret": {"secretName": names.cluster_ca_cert_secret(spec.name)},
                        },
                    ],
                },
            },
            "volumeClaimTemplates": [
                {"metadata": {"name": "data", "labels": labels}, "spec": claim}
            ],
        },
    }
    if spec.zookeeper.ephemeral:
        del built["spec"]["volumeClaimTemplates"]
        built["spec"]["template"]["spec"]["volumes"].append({"name": "data", "emptyDir": {}})
    return built
