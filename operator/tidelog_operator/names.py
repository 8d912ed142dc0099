"""The names of everything the operator makes for a Cluster and for a ConsumerGroup's
Spark application, and the labels that find them. One place, so that builders,
handlers and tests agree."""

from __future__ import annotations

__all__ = [
    "BROKER_PORT",
    "GROUP",
    "VERSION",
    "ZOOKEEPER_CLIENT_PORT",
    "ZOOKEEPER_TLS_PORT",
    "bootstrap_service",
    "broker_certs_secret",
    "broker_config_map",
    "broker_labels",
    "broker_pod",
    "broker_service",
    "broker_service_account",
    "broker_subject",
    "brokers_service",
    "brokers_statefulset",
    "clients_ca_cert_secret",
    "clients_ca_secret",
    "cluster_ca_cert_secret",
    "cluster_ca_secret",
    "cluster_labels",
    "consumer_group_labels",
    "node_reader_binding_name",
    "operator_credentials_secret",
    "operator_subject",
    "spark_driver_pod",
    "spark_service_account",
    "spark_state_claim",
    "spark_submitter_job",
    "spark_templates_config_map",
    "zookeeper_certs_secret",
    "zookeeper_labels",
    "zookeeper_service",
    "zookeeper_statefulset",
    "zookeeper_subject",
]

GROUP = "tidelog.dev"
VERSION = "v1alpha1"
BROKER_PORT = 9092
ZOOKEEPER_CLIENT_PORT = 2181
ZOOKEEPER_TLS_PORT = 2182
ZOOKEEPER_PEER_PORT = 2888
ZOOKEEPER_ELECTION_PORT = 3888
CLUSTER_LABEL = "tidelog.dev/cluster"
COMPONENT_LABEL = "app.kubernetes.io/component"
CONSUMER_GROUP_LABEL = "tidelog.dev/consumer-group"
SPARK_ROLE_LABEL = "spark-role"  # Spark's own, on the pods it makes: "driver" or "executor"
# The driver pods of every ConsumerGroup's Spark application: the only pods the operator
# watches (the API server filters them).
SPARK_DRIVERS_SELECTOR = f"{CONSUMER_GROUP_LABEL},{SPARK_ROLE_LABEL}=driver"


def cluster_labels(cluster: str) -> dict[str, str]:
    """What every object of a Cluster carries."""
    return {
        "app.kubernetes.io/name": "tidelog",
        "app.kubernetes.io/instance": cluster,
        "app.kubernetes.io/managed-by": "tidelog-operator",
        CLUSTER_LABEL: cluster,
    }


def broker_labels(cluster: str) -> dict[str, str]:
    return {**cluster_labels(cluster), COMPONENT_LABEL: "broker"}


def zookeeper_labels(cluster: str) -> dict[str, str]:
    return {**cluster_labels(cluster), COMPONENT_LABEL: "zookeeper"}


def brokers_statefulset(cluster: str) -> str:
    return f"{cluster}-broker"


def broker_pod(cluster: str, broker_id: int) -> str:
    """Broker ``broker_id`` is the pod of that ordinal."""
    return f"{brokers_statefulset(cluster)}-{broker_id}"


def brokers_service(cluster: str) -> str:
    """The headless Service that gives each broker its stable name."""
    return f"{cluster}-brokers"


def bootstrap_service(cluster: str) -> str:
    return f"{cluster}-bootstrap"


def broker_service(cluster: str, broker_id: int, listener: str) -> str:
    """A broker's own NodePort Service of ``listener`` (access from outside)."""
    return f"{broker_pod(cluster, broker_id)}-{listener}"


def cluster_ca_secret(cluster: str) -> str:
    """The cluster CA's key and certificate (Strimzi's name): the operator's alone."""
    return f"{cluster}-cluster-ca"


def cluster_ca_cert_secret(cluster: str) -> str:
    """The certificates that brokers, ZooKeeper and clients trust (``ca.crt``)."""
    return f"{cluster}-cluster-ca-cert"


def clients_ca_secret(cluster: str) -> str:
    """The clients CA's key and certificate: it signs the users' certificates."""
    return f"{cluster}-clients-ca"


def clients_ca_cert_secret(cluster: str) -> str:
    """The certificates the brokers trust for users' certificates (``ca.crt``)."""
    return f"{cluster}-clients-ca-cert"


def broker_certs_secret(cluster: str) -> str:
    """Each broker's key and certificate chain (``<pod>.pem``)."""
    return f"{cluster}-broker-certs"


def zookeeper_certs_secret(cluster: str) -> str:
    """Each ZooKeeper server's key and certificate chain (``<pod>.pem``)."""
    return f"{cluster}-zookeeper-certs"


def zookeeper_subject(cluster: str) -> str:
    """The subject of every ZooKeeper server certificate of the Cluster (RFC 4514)."""
    return f"CN={cluster}-zookeeper,O={GROUP}"


def operator_credentials_secret(cluster: str) -> str:
    """The operator's Kafka client properties for the Cluster (its admin connection)."""
    return f"{cluster}-operator-credentials"


def broker_subject(cluster: str) -> str:
    """The subject of every broker certificate of the Cluster (RFC 4514)."""
    return f"CN={cluster}-broker,O={GROUP}"


def operator_subject(cluster: str) -> str:
    return f"CN={cluster}-operator,O={GROUP}"


def broker_service_account(cluster: str) -> str:
    return f"{cluster}-broker"


def node_reader_binding_name(namespace: str, cluster: str) -> str:
    """The ClusterRoleBinding that lets a Cluster's brokers read their nodes' racks."""
    return f"tidelog-{namespace}-{cluster}-broker-nodes"


def broker_config_map(cluster: str) -> str:
    return f"{cluster}-broker-config"


def zookeeper_statefulset(cluster: str) -> str:
    return f"{cluster}-zookeeper"


def zookeeper_service(cluster: str) -> str:
    """The headless Service of the ensemble (peers and clients)."""
    return f"{cluster}-zookeeper"


def consumer_group_labels(group: str) -> dict[str, str]:
    """What every object of a ConsumerGroup's Spark application carries (the driver and
    executor pods too: Spark copies it onto them)."""
    return {
        "app.kubernetes.io/name": "tidelog-spark",
        "app.kubernetes.io/instance": group,
        "app.kubernetes.io/managed-by": "tidelog-operator",
        CONSUMER_GROUP_LABEL: group,
    }


def spark_service_account(group: str) -> str:
    """The account of a ConsumerGroup's submitter Job and Spark driver."""
    return f"{group}-spark"


def spark_state_claim(group: str) -> str:
    """The volume of the application's checkpoint, shared by its driver and executors."""
    return f"{group}-spark-state"


def spark_templates_config_map(group: str) -> str:
    """The driver's and executors' pod templates, mounted in the submitter Job."""
    return f"{group}-spark-templates"


def spark_submitter_job(group: str, submission: int) -> str:
    return f"{group}-submit-{submission}"


def spark_driver_pod(group: str, submission: int) -> str:
    """The driver pod of submission ``submission`` (1, 2, ...): the operator follows it."""
    return f"{group}-driver-{submission}"
