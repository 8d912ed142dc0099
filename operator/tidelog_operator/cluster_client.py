"""The admin client of the Cluster a Topic or ConsumerGroup names: its brokers, at the
bootstrap address the Cluster's status reports."""

from __future__ import annotations

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog.admin import AdminClient
from tidelog_operator import kube
from tidelog_operator.names import GROUP, VERSION

__all__ = ["ADMIN_TIMEOUT_S", "cluster_admin"]

ADMIN_TIMEOUT_S = 10.0


def cluster_admin(namespace: str, cluster_name: str) -> AdminClient:
    """LookupError while the Cluster is missing or reports no bootstrap address."""
    try:
        cluster = client.CustomObjectsApi(kube.api()).get_namespaced_custom_object(
            GROUP, VERSION, namespace, "clusters", cluster_name
        )
    except ApiException as error:
        if error.status == 404:
            raise LookupError(f"Cluster {cluster_name} not found in {namespace}") from None
        raise
    bootstrap = (cluster.get("status") or {}).get("bootstrap")
    if not bootstrap:
        raise LookupError(f"Cluster {cluster_name} reports no bootstrap address yet")
    return AdminClient(bootstrap, timeout=ADMIN_TIMEOUT_S)
