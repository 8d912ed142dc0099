"""The brokers' listeners, built from ``spec.listeners`` and ``spec.authorization``: the
keys of ``server.properties`` that say what each listener serves and how it is secured,
the lines of the start script that advertise each one for its own pod, the ports of the
Services and of the container, and a NodePort Service per broker and ``nodeport``
listener.

Every broker also has the ``REPLICATION`` listener (:data:`REPLICATION_PORT`), mutual TLS
with the cluster CA: the brokers' connections to each other go there (it is the
inter-broker listener) and so does the operator's admin connection; both present
certificates the cluster CA signed, whose subjects are super users. TLS material is
mounted from the Cluster's Secrets (:mod:`tidelog_operator.builders.certificates`):
``ssl.keystore.location`` is each pod's own PEM file (key and chain), set at start, and
the truststores are the CA bundles, so that a renewed CA reaches the brokers by a
keystore reload rather than a restart.

Principals: on REPLICATION Kafka's default (the certificate's whole subject); on a user
listener with ``authentication: tls`` a certificate ``CN=<name>`` is ``User:<name>``, the
same principal a SCRAM user ``<name>`` gets, so that one User's ACLs hold on either.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tidelog_operator import names
from tidelog_operator.spec import ClusterSpec
from tidelog_operator.spec_security import (
    AUTHENTICATION_SCRAM,
    AUTHENTICATION_TLS,
    REPLICATION_LISTENER,
    REPLICATION_PORT,
    ListenerSpec,
)

__all__ = [
    "BROKER_CERTS_DIR",
    "CLIENTS_CA_DIR",
    "CLUSTER_CA_DIR",
    "advertised_listeners",
    "advertised_script",
    "bootstrap_address",
    "bootstrap_ports",
    "broker_principal",
    "client_bootstrap",
    "container_ports",
    "headless_ports",
    "listener_keys",
    "listener_status",
    "node_port_services",
    "operator_principal",
    "store_keys",
    "tls_mounts",
    "tls_volumes",
]

TLS_DIR = "/etc/tidelog/tls"
CLUSTER_CA_DIR = f"{TLS_DIR}/cluster-ca"
CLIENTS_CA_DIR = f"{TLS_DIR}/clients-ca"
BROKER_CERTS_DIR = f"{TLS_DIR}/broker"
CA_FILE = "ca.crt"
AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
SCRAM = "SCRAM-SHA-512"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
# A user's certificate CN=<name> is the principal User:<name> (as a SCRAM user <name>).
CN_RULE = "RULE:^CN=([^,]+)$/$1/,DEFAULT"


def broker_principal(spec: ClusterSpec) -> str:
    """The principal of every broker of the Cluster (one certificate subject, so that
    ZooKeeper's x509 ACLs own the znodes as one identity)."""
    return f"User:{names.broker_subject(spec.name)}"


def operator_principal(spec: ClusterSpec) -> str:
    return f"User:{names.operator_subject(spec.name)}"


def _all(spec: ClusterSpec) -> list[tuple[str, int, str]]:
    """(Kafka listener name, port, security protocol) of every listener, REPLICATION first."""
    return [(REPLICATION_LISTENER, REPLICATION_PORT, "SSL")] + [
        (listener.kafka_name, listener.port, listener.security_protocol)
        for listener in spec.listeners
    ]


def _prefix(listener: str) -> str:
    return f"listener.name.{listener.lower()}."


def _user_listener_keys(listener: ListenerSpec) -> dict[str, str]:
    prefix = _prefix(listener.kafka_name)
    keys = {}
    if listener.authentication == AUTHENTICATION_SCRAM:
        keys[prefix + "sasl.enabled.mechanisms"] = SCRAM
        # the server side of SCRAM needs its login module (the credentials are ZooKeeper's)
        keys[prefix + f"{SCRAM.lower()}.sasl.jaas.config"] = f"{SCRAM_LOGIN_MODULE} required;"
    if listener.authentication == AUTHENTICATION_TLS:
        keys[prefix + "ssl.client.auth"] = "required"
        keys[prefix + "ssl.truststore.location"] = f"{CLIENTS_CA_DIR}/{CA_FILE}"
        keys[prefix + "ssl.principal.mapping.rules"] = CN_RULE
    return keys


def listener_keys(spec: ClusterSpec) -> dict[str, str]:
    """The keys of every listener and of the authorizer, the same for every broker (each
    pod adds its keystore and advertised addresses, :func:`advertised_script`)."""
    listeners = _all(spec)
    keys = {
        "listeners": ",".join(f"{name}://0.0.0.0:{port}" for name, port, _ in listeners),
        "listener.security.protocol.map": ",".join(
            f"{name}:{protocol}" for name, _, protocol in listeners
        ),
        "inter.broker.listener.name": REPLICATION_LISTENER,
        "ssl.keystore.type": "PEM",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": f"{CLUSTER_CA_DIR}/{CA_FILE}",
        _prefix(REPLICATION_LISTENER) + "ssl.client.auth": "required",
    }
    for listener in spec.listeners:
        keys.update(_user_listener_keys(listener))
    if spec.authorization.enabled:
        keys["authorizer.class.name"] = AUTHORIZER
        keys["super.users"] = ";".join(
            [broker_principal(spec), operator_principal(spec), *spec.authorization.super_users]
        )
    return keys


def _advertised(spec: ClusterSpec, pod_host: str, node_port: Callable[[ListenerSpec], str]) -> str:
    parts = [f"{REPLICATION_LISTENER}://{pod_host}:{REPLICATION_PORT}"]
    for listener in spec.listeners:
        address = node_port(listener) if listener.node_port else f"{pod_host}:{listener.port}"
        parts.append(f"{listener.kafka_name}://{address}")
    return ",".join(parts)


def advertised_listeners(spec: ClusterSpec, pod_host: str, broker_id: int) -> str:
    """Broker ``broker_id``'s ``advertised.listeners`` (a node port listener without a
    host stands for the node by a placeholder name: the pod learns its node at start)."""
    return _advertised(
        spec,
        pod_host,
        lambda listener: f"{listener.host or 'node.invalid'}:{listener.node_port_base + broker_id}",
    )


def store_keys(spec: ClusterSpec, broker_id: int) -> dict[str, str]:
    """For each TLS listener of broker ``broker_id``, its keystore's and truststore's
    locations under the listener's prefix: set dynamically (to the paths they already
    have), they make the broker read the files again, as Kafka's dynamic
    ``ssl.keystore.*`` does, so a certificate renewed in its Secret is served without a
    restart."""
    keystore = f"{BROKER_CERTS_DIR}/{names.broker_pod(spec.name, broker_id)}.pem"
    cluster_trust = f"{CLUSTER_CA_DIR}/{CA_FILE}"
    stores = {REPLICATION_LISTENER: cluster_trust}
    for listener in spec.listeners:
        if listener.tls:
            tls_users = listener.authentication == AUTHENTICATION_TLS
            stores[listener.kafka_name] = (
                f"{CLIENTS_CA_DIR}/{CA_FILE}" if tls_users else cluster_trust
            )
    keys = {}
    for name, truststore in stores.items():
        keys[_prefix(name) + "ssl.keystore.location"] = keystore
        keys[_prefix(name) + "ssl.truststore.location"] = truststore
    return keys


def advertised_script(spec: ClusterSpec) -> list[str]:
    """Shell lines that set ``$advertised`` to this pod's ``advertised.listeners`` and
    ``$keystore`` to its own key and certificate (``$id`` is its broker id)."""
    advertised = _advertised(
        spec,
        "${POD_NAME}.${BROKERS_SERVICE}.${POD_NAMESPACE}.svc",
        lambda listener: f"{listener.host or '${NODE_IP}'}:$(({listener.node_port_base} + id))",
    )
    return [f'advertised="{advertised}"', f'keystore="{BROKER_CERTS_DIR}/${{POD_NAME}}.pem"']


def _service_port(name: str, port: int) -> dict[str, Any]:
    return {"name": name.lower(), "port": port, "targetPort": port}


def headless_ports(spec: ClusterSpec) -> list[dict[str, Any]]:
    """Every listener's port: brokers and the operator reach a broker by its pod's name."""
    return [_service_port(name, port) for name, port, _ in _all(spec)]


def bootstrap_ports(spec: ClusterSpec) -> list[dict[str, Any]]:
    """The bootstrap Service's ports: REPLICATION's (the operator's) and each internal
    listener's."""
    return [_service_port(REPLICATION_LISTENER, REPLICATION_PORT)] + [
        _service_port(listener.kafka_name, listener.port)
        for listener in spec.listeners
        if listener.internal
    ]


def container_ports(spec: ClusterSpec) -> list[dict[str, Any]]:
    return [{"name": name.lower(), "containerPort": port} for name, port, _ in _all(spec)]


def bootstrap_address(spec: ClusterSpec, port: int = REPLICATION_PORT) -> str:
    """The bootstrap Service's address for ``port`` (by default the operator's own)."""
    return f"{names.bootstrap_service(spec.name)}.{spec.namespace}.svc:{port}"


def client_bootstrap(spec: ClusterSpec) -> str:
    """Where applications bootstrap from (``status.bootstrap``): the first internal
    listener's bootstrap address, else the first listener's."""
    internal = [listener for listener in spec.listeners if listener.internal]
    chosen = (internal or list(spec.listeners))[0]
    if chosen.internal:
        return bootstrap_address(spec, chosen.port)
    return f"{chosen.host or 'node address'}:{chosen.node_port_base}"


def _meta(name: str, spec: ClusterSpec) -> dict[str, Any]:
    return {"name": name, "namespace": spec.namespace, "labels": names.broker_labels(spec.name)}


def node_port_services(spec: ClusterSpec) -> list[dict[str, Any]]:
    """For each ``nodeport`` listener, a NodePort Service per broker: broker ``i`` at
    node port ``nodePortBase + i``."""
    services = []
    for listener in spec.listeners:
        if not listener.node_port:
            continue
        for broker_id in range(spec.brokers.replicas):
            pod = names.broker_pod(spec.name, broker_id)
            services.append(
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": _meta(
                        names.broker_service(spec.name, broker_id, listener.name), spec
                    ),
                    "spec": {
                        "type": "NodePort",
                        "externalTrafficPolicy": "Local",
                        "selector": {
                            **names.broker_labels(spec.name),
                            "statefulset.kubernetes.io/pod-name": pod,
                        },
                        "ports": [
                            {
                                "name": listener.name,
                                "port": listener.port,
                                "targetPort": listener.port,
                                "nodePort": listener.node_port_base + broker_id,
                            }
                        ],
                    },
                }
            )
    return services


def tls_volumes(spec: ClusterSpec) -> list[dict[str, Any]]:
    """The pod's volumes of TLS material: the cluster CA's certificates, the brokers'
    keys and certificates and, when a listener authenticates clients by certificate,
    the clients CA's certificates."""
    volumes = [
        {"name": "cluster-ca", "secret": {"secretName": names.cluster_ca_cert_secret(spec.name)}},
        {"name": "broker-certs", "secret": {"secretName": names.broker_certs_secret(spec.name)}},
    ]
    if any(listener.authentication == AUTHENTICATION_TLS for listener in spec.listeners):
        secret = names.clients_ca_cert_secret(spec.name)
        volumes.append({"name": "clients-ca", "secret": {"secretName": secret}})
    return volumes


def tls_mounts(spec: ClusterSpec) -> list[dict[str, Any]]:
    paths = {
        "cluster-ca": CLUSTER_CA_DIR,
        "broker-certs": BROKER_CERTS_DIR,
        "clients-ca": CLIENTS_CA_DIR,
    }
    return [
        {"name": volume["name"], "mountPath": paths[volume["name"]], "readOnly": True}
        for volume in tls_volumes(spec)
    ]


def listener_status(spec: ClusterSpec) -> list[dict[str, Any]]:
    """``status.listeners``: how clients reach each listener and which Secret holds the
    CA certificate that they trust."""
    entries = []
    for listener in spec.listeners:
        entry: dict[str, Any] = {
            "name": listener.name,
            "type": listener.type,
            "port": listener.port,
            "tls": listener.tls,
            "authentication": listener.authentication,
        }
        if listener.internal:
            entry["bootstrapServers"] = bootstrap_address(spec, listener.port)
        elif listener.host:
            entry["bootstrapServers"] = f"{listener.host}:{listener.node_port_base}"
        if listener.tls:
            entry["caSecret"] = names.cluster_ca_cert_secret(spec.name)
        entries.append(entry)
    return entries
