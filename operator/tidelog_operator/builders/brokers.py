"""The objects of a Cluster's brokers, built from its spec: the configuration
(ConfigMap), the headless Service that names each broker, the bootstrap Service, the
PodDisruptionBudget and the StatefulSet with one claim per JBOD volume. The listeners'
part of each is :mod:`tidelog_operator.builders.listeners`.

Each pod works out its own keys when it starts: ``broker.id`` is its ordinal, its
listeners' advertised addresses and its keystore are its own (``listeners``), and
``broker.rack`` is the label ``spec.brokers.rack.topologyKey`` of its node, which an init
container reads (as Strimzi does). Updates are ``OnDelete``: the operator restarts
brokers itself, one at a time (``rolling.py``).
"""

from __future__ import annotations

from typing import Any

from tidelog_operator import names
from tidelog_operator.builders import listeners, zookeeper
from tidelog_operator.builders.certificates import CA_TRUST_ANNOTATION
from tidelog_operator.builders.common import spread_over_nodes
from tidelog_operator.spec import ClusterSpec

__all__ = [
    "CONFIG_DIR",
    "bootstrap_service",
    "broker_config_map",
    "broker_keys",
    "brokers_service",
    "default_keys",
    "node_reader_binding",
    "operator_keys",
    "pod_disruption_budget",
    "service_account",
    "statefulset",
]

CONFIG_DIR = "/etc/tidelog/config"
# the broker's health check, with the arguments its entrypoint recorded for it
HEALTHCHECK = ("tidelog-healthcheck", "@/tmp/tidelog-healthcheck.args")
RACK_DIR = "/etc/tidelog/rack"
CONFIG_HASH = "tidelog.dev/config-hash"


def operator_keys(spec: ClusterSpec, zookeeper_connect: str) -> dict[str, str]:
    """The keys the operator sets for every broker (the per-pod ones come at start)."""
    return {
        **listeners.listener_keys(spec),
        **zookeeper.client_keys(spec),
        "log.dirs": ",".join(v.path for v in spec.volumes),
        "zookeeper.connect": zookeeper_connect,
    }


def default_keys(spec: ClusterSpec) -> dict[str, str]:
    """The keys the operator sets unless ``spec.brokers.config`` does.

    - Beside the Cluster's own ensemble, brokers start while its servers may still be
      electing a leader: they wait for it as long as the servers wait for each other,
      rather than give up after Kafka's default (the session timeout) and go through the
      kubelet's crash-loop back-off (10 s, 20 s, 40 s ... before each next start).
    - Brokers with a CPU limit do not poll for work before they sleep
      (``socket.idle.poll.us=0``): polling spends the container's CPU quota, and a
      broker that has used up its quota stalls every client until the next period.
    """
    keys = {}
    if not spec.zookeeper.external:
        keys["zookeeper.connection.timeout.ms"] = str(zookeeper.START_TIMEOUT_S * 1000)
    if "cpu" in (spec.brokers.resources.get("limits") or {}):
        keys["socket.idle.poll.us"] = "0"
    return keys


def broker_keys(spec: ClusterSpec, zookeeper_connect: str, broker_id: int) -> dict[str, str]:
    """Every key the operator sets, as broker ``broker_id`` ends up with them (what a
    check of the whole configuration needs; the pods work theirs out at start)."""
    pod = names.broker_pod(spec.name, broker_id)
    host = f"{pod}.{names.brokers_service(spec.name)}.{spec.namespace}.svc"
    advertised = listeners.advertised_listeners(spec, host, broker_id)
    keystore = f"{listeners.BROKER_CERTS_DIR}/{pod}.pem"
    keys = {
        **operator_keys(spec, zookeeper_connect),
        "broker.id": str(broker_id),
        "advertised.listeners": advertised,
        "ssl.keystore.location": keystore,
    }
    if not spec.zookeeper.external:
        keys["zookeeper.ssl.keystore.location"] = keystore
    return keys


def _meta(name: str, spec: ClusterSpec, **extra: Any) -> dict[str, Any]:
    return {
        "name": name,
        "namespace": spec.namespace,
        "labels": names.broker_labels(spec.name),
        **extra,
    }


def broker_config_map(spec: ClusterSpec, properties: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(names.broker_config_map(spec.name), spec),
        "data": {"server.properties": properties},
    }


def brokers_service(spec: ClusterSpec) -> dict[str, Any]:
    """Headless; names not-ready brokers too, which must find each other to become
    ready (ZooKeeper's registrations carry these names)."""
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.brokers_service(spec.name), spec),
        "spec": {
            "clusterIP": "None",
            "publishNotReadyAddresses": True,
            "selector": names.broker_labels(spec.name),
            "ports": listeners.headless_ports(spec),
        },
    }


def bootstrap_service(spec: ClusterSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta(names.bootstrap_service(spec.name), spec),
        "spec": {
            "selector": names.broker_labels(spec.name),
            "ports": listeners.bootstrap_ports(spec),
        },
    }


def service_account(spec: ClusterSpec) -> dict[str, Any]:
    """The brokers' own ServiceAccount (their init container reads their node's rack)."""
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(names.broker_service_account(spec.name), spec),
    }


def node_reader_binding(spec: ClusterSpec, cluster_role: str) -> dict[str, Any] | None:
    """Binds ``cluster_role`` (get nodes) to the brokers' ServiceAccount, when the
    Cluster is rack-aware; cluster-scoped, so not owned by the Cluster: its deletion
    handler deletes it."""
    if spec.brokers.rack_topology_key is None:
        return None
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {
            "name": names.node_reader_binding_name(spec.namespace, spec.name),
            "labels": {**names.broker_labels(spec.name), "tidelog.dev/namespace": spec.namespace},
        },
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": cluster_role,
        },
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": names.broker_service_account(spec.name),
                "namespace": spec.namespace,
            }
        ],
    }


def pod_disruption_budget(spec: ClusterSpec) -> dict[str, Any]:
    """At most one broker down by choice (a drain), so that replication factor 3 with
    ``min.insync.replicas`` 2 keeps taking writes."""
    return {
        "apiVersion": "policy/v1",
        "kind": "PodDisruptionBudget",
        "metadata": _meta(names.brokers_statefulset(spec.name), spec),
        "spec": {"maxUnavailable": 1, "selector": {"matchLabels": names.broker_labels(spec.name)}},
    }


def _start_script(spec: ClusterSpec) -> str:
    """The container's shell: the per-pod keys as ``--override`` arguments (the
    entrypoint records them for the readiness probe's health check), then the image's
    entrypoint."""
    lines = ["id=${HOSTNAME##*-}", *listeners.advertised_script(spec)]
    lines.append(
        'set -- --override "broker.id=$id" --override "advertised.listeners=$advertised"'
        ' --override "ssl.keystore.location=$keystore"'
    )
    if not spec.zookeeper.external:
        lines.append('set -- "$@" --override "zookeeper.ssl.keystore.location=$keystore"')
    if spec.brokers.rack_topology_key is not None:
        lines.append(f'set -- "$@" --override "broker.rack=$(cat {RACK_DIR}/rack)"')
    lines.append(f'exec tidelog-entrypoint tidelog-server {CONFIG_DIR}/server.properties "$@"')
    return "\n".join(lines)


def _env(spec: ClusterSpec) -> list[dict[str, Any]]:
    def field(name: str, path: str) -> dict[str, Any]:
        return {"name": name, "valueFrom": {"fieldRef": {"fieldPath": path}}}

    return [
        field("POD_NAME", "metadata.name"),
        field("POD_NAMESPACE", "metadata.namespace"),
        field("NODE_IP", "status.hostIP"),
        {"name": "BROKERS_SERVICE", "value": names.brokers_service(spec.name)},
    ]


def _rack_init_container(spec: ClusterSpec) -> dict[str, Any]:
    """Writes the node's rack label to a file the broker reads (``tidelog-node-label``,
    with the pod's service account, which may read nodes)."""
    return {
        "name": "rack",
        "image": spec.brokers.image,
        "imagePullPolicy": spec.brokers.image_pull_policy,
        "command": [
            "tidelog-node-label",
            "--node",
            "$(NODE_NAME)",
            "--label",
            spec.brokers.rack_topology_key,
            "--output",
            f"{RACK_DIR}/rack",
        ],
        "env": [{"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}],
        "volumeMounts": [{"name": "rack", "mountPath": RACK_DIR}],
    }


def _claim(spec: ClusterSpec, volume) -> dict[str, Any]:
    claim: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": volume.size}},
    }
    if volume.storage_class:
        claim["storageClassName"] = volume.storage_class
    if volume.selector:
        claim["selector"] = {"matchLabels": dict(volume.selector)}
    return {
        "metadata": {"name": volume.claim, "labels": names.broker_labels(spec.name)},
        "spec": claim,
    }


def statefulset(spec: ClusterSpec, config_hash: str, ca_trust: str | None = None) -> dict[str, Any]:
    """The brokers. ``config_hash`` (of their server.properties) marks the pod template,
    so that a config change makes the roll restart them; so does ``ca_trust``, the CA
    generations their bundles trust (``certificate_step.ca_trust_markers``), so that a
    CA renewal's change of a bundle rolls them."""
    labels = names.broker_labels(spec.name)
    volume_mounts = [{"name": v.claim, "mountPath": v.path} for v in spec.volumes]
    volume_mounts.append({"name": "config", "mountPath": CONFIG_DIR})
    volume_mounts += listeners.tls_mounts(spec)
    volumes: list[dict[str, Any]] = [
        {"name": "config", "configMap": {"name": names.broker_config_map(spec.name)}},
        *listeners.tls_volumes(spec),
    ]
    init_containers = []
    if spec.brokers.rack_topology_key is not None:
        volumes.append({"name": "rack", "emptyDir": {}})
        volume_mounts.append({"name": "rack", "mountPath": RACK_DIR})
        init_containers.append(_rack_init_container(spec))
    container = {
        "name": "broker",
        "image": spec.brokers.image,
        "imagePullPolicy": spec.brokers.image_pull_policy,
        "command": ["sh", "-c", _start_script(spec)],
        "env": _env(spec),
        "ports": listeners.container_ports(spec),
        # Broker.start() reaches ZooKeeper, then loads (and after an unclean shutdown
        # recovers) every log, and only then opens its listeners: until they answer, the
        # container is not ``started`` and the roller sees the broker recovering, which
        # it never restarts. Up to an hour (360 x 10 s) for a long recovery, then the
        # kubelet restarts the container.
        "startupProbe": {
            "exec": {"command": [*HEALTHCHECK, "--listening"]},
            "periodSeconds": 10,
            "timeoutSeconds": 10,
            "failureThreshold": 360,
        },
        # run once started: also wants the controller's metadata (tidelog-healthcheck)
        "readinessProbe": {
            "exec": {"command": [*HEALTHCHECK]},
            "periodSeconds": 5,
            "timeoutSeconds": 10,
        },
        "volumeMounts": volume_mounts,
    }
    if spec.brokers.resources:
        container["resources"] = dict(spec.brokers.resources)
    pod_spec: dict[str, Any] = {
        "serviceAccountName": names.broker_service_account(spec.name),
        # the image runs as uid 1001; the volumes' files become its group's
        "securityContext": {"runAsNonRoot": True, "fsGroup": 1001},
        "terminationGracePeriodSeconds": spec.brokers.termination_grace_period_seconds,
        "affinity": spread_over_nodes(labels),
        "containers": [container],
        "volumes": volumes,
    }
    if init_containers:
        pod_spec["initContainers"] = init_containers
    annotations = {CONFIG_HASH: config_hash}
    if ca_trust is not None:
        annotations[CA_TRUST_ANNOTATION] = ca_trust
    return {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta(names.brokers_statefulset(spec.name), spec),
        "spec": {
            "serviceName": names.brokers_service(spec.name),
            "replicas": spec.brokers.replicas,
            "podManagementPolicy": "Parallel",
            "updateStrategy": {"type": "OnDelete"},
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels, "annotations": annotations},
                "spec": pod_spec,
            },
            "volumeClaimTemplates": [_claim(spec, v) for v in spec.volumes],
            "persistentVolumeClaimRetentionPolicy": {
                "whenDeleted": spec.claim_retention,
                "whenScaled": spec.claim_retention,
            },
        },
    }
