"""The operator's admin client of a Cluster: the Kafka client properties of the Secret
``<cluster>-operator-credentials`` (its bootstrap address, mutual TLS with the operator's
own certificate to the brokers' REPLICATION listener), which the Cluster's pass writes
(``cluster.certificate_commands``)."""

from __future__ import annotations

from kubernetes import client

from tidelog.admin import AdminClient
from tidelog.security.client_security import ClientSecurity
from tidelog_operator import kube, names

__all__ = ["ADMIN_TIMEOUT_S", "NoCredentials", "cluster_admin"]

ADMIN_TIMEOUT_S = 10.0


class NoCredentials(LookupError):
    """The Cluster has no credentials for the operator (yet)."""


def cluster_admin(
    namespace: str, cluster_name: str, api: client.ApiClient | None = None
) -> AdminClient:
    """:class:`NoCredentials` while the Cluster has none for the operator yet (it is
    missing, or its first pass has not made them)."""
    data = kube.secret_data(
        api or kube.api(), namespace, names.operator_credentials_secret(cluster_name)
    )
    if not data:
        raise NoCredentials(f"Cluster {cluster_name} has no operator credentials yet")
    properties = {key: value.decode() for key, value in data.items()}
    bootstrap = properties.pop("bootstrap.servers", None)
    if not bootstrap:
        raise NoCredentials(f"Cluster {cluster_name}'s operator credentials name no brokers")
    security = ClientSecurity.from_properties(properties)
    return AdminClient(bootstrap, timeout=ADMIN_TIMEOUT_S, security=security)
