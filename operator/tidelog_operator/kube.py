"""The operator's writes to Kubernetes: server-side apply of the objects the builders
make (the operator owns the fields it sets; what others set stays), the one status
patch helper, and deletions that tolerate what is gone already.

``patch_status`` is the only way a status changes: it reads the object, lets a pure
function compute the new status, skips the write when nothing changes, and writes with
the object's resourceVersion, reading again and retrying on a conflict.
"""

from __future__ import annotations

import base64
import copy
import functools
import logging
import os
from collections.abc import Callable
from typing import Any

from kubernetes import client, config
from kubernetes.client.exceptions import ApiException

from tidelog_operator.names import GROUP, VERSION

__all__ = [
    "FIELD_MANAGER",
    "api",
    "apply",
    "delete",
    "found",
    "patch_status",
    "remove_annotation",
    "secret_data",
]

logger = logging.getLogger(__name__)

FIELD_MANAGER = "tidelog-operator"
_CONFLICT_RETRIES = 5

# (apiVersion, kind) → (API path prefix, plural, namespaced)
_RESOURCES = {
    ("v1", "ConfigMap"): ("/api/v1", "configmaps", True),
    ("v1", "Secret"): ("/api/v1", "secrets", True),
    ("v1", "Service"): ("/api/v1", "services", True),
    ("v1", "Pod"): ("/api/v1", "pods", True),
    ("v1", "ServiceAccount"): ("/api/v1", "serviceaccounts", True),
    ("batch/v1", "Job"): ("/apis/batch/v1", "jobs", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): (
        "/apis/rbac.authorization.k8s.io/v1",
        "rolebindings",
        True,
    ),
    ("v1", "PersistentVolume"): ("/api/v1", "persistentvolumes", False),
    ("v1", "PersistentVolumeClaim"): ("/api/v1", "persistentvolumeclaims", True),
    ("apps/v1", "StatefulSet"): ("/apis/apps/v1", "statefulsets", True),
    ("policy/v1", "PodDisruptionBudget"): ("/apis/policy/v1", "poddisruptionbudgets", True),
    ("networking.k8s.io/v1", "NetworkPolicy"): (
        "/apis/networking.k8s.io/v1",
        "networkpolicies",
        True,
    ),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): (
        "/apis/rbac.authorization.k8s.io/v1",
        "clusterrolebindings",
        False,
    ),
}


@functools.cache
def api() -> client.ApiClient:
    """The operator's API client: its service account inside a pod, else the
    kubeconfig (``KUBECONFIG``, ``~/.kube/config``)."""
    try:
        config.load_incluster_config()
    except config.ConfigException:
        config.load_kube_config(config_file=os.environ.get("KUBECONFIG"))
    return client.ApiClient()


def _path(api_version: str, kind: str, name: str, namespace: str | None) -> str:
    prefix, plural, namespaced = _RESOURCES[(api_version, kind)]
    scope = f"/namespaces/{namespace}" if namespaced else ""
    return f"{prefix}{scope}/{plural}/{name}"


def _patch(
    api: client.ApiClient, path: str, content_type: str, body: dict[str, Any], force: bool
) -> dict[str, Any]:
    return api.call_api(
        path,
        "PATCH",
        query_params=[("fieldManager", FIELD_MANAGER), *([("force", "true")] if force else [])],
        header_params={"Content-Type": content_type, "Accept": "application/json"},
        body=body,
        response_type="object",
        auth_settings=["BearerToken"],
        _return_http_data_only=True,
    )


def apply(api: client.ApiClient, obj: dict[str, Any]) -> dict[str, Any]:
    """Server-side apply of ``obj`` as the operator (conflicting fields are taken)."""
    meta = obj["metadata"]
    path = _path(obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace"))
    return _patch(api, path, "application/apply-patch+yaml", obj, force=True)


def merge_patch(
    api: client.ApiClient,
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None,
    body: dict[str, Any],
) -> dict[str, Any]:
    """A JSON merge patch of one object (``None`` values remove their key): for keys
    that server-side apply would not remove because another manager owns them too."""
    path = _path(api_version, kind, name, namespace)
    return _patch(api, path, "application/merge-patch+json", body, force=False)


def found(read: Callable[..., Any], *args: Any) -> Any | None:
    """What ``read(*args)`` (a read of the kubernetes client) returns; None when the
    object is not there."""
    try:
        return read(*args)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def secret_with_annotations(
    api: client.ApiClient, namespace: str, name: str
) -> tuple[dict[str, bytes], dict[str, str]]:
    """The entries of Secret ``name``, decoded, and its annotations; both empty when it
    is not there."""
    secret = found(client.CoreV1Api(api).read_namespaced_secret, name, namespace)
    if secret is None:
        return {}, {}
    data = {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}
    return data, dict(secret.metadata.annotations or {})


def secret_data(api: client.ApiClient, namespace: str, name: str) -> dict[str, bytes]:
    """The entries of Secret ``name``, decoded; empty when it is not there."""
    return secret_with_annotations(api, namespace, name)[0]


def delete(
    api: client.ApiClient,
    api_version: str,
    kind: str,
    name: str,
    namespace: str | None,
    *,
    propagation: str | None = None,
) -> bool:
    """Delete an object; False when it was gone already. ``propagation`` "Orphan" leaves
    its dependents (a StatefulSet's pods) running, their owner reference removed;
    "Background" deletes them after it (a Job's pods, which the API orphans otherwise)."""
    body = {"propagationPolicy": propagation} if propagation else None
    try:
        api.call_api(
            _path(api_version, kind, name, namespace),
            "DELETE",
            header_params={"Accept": "application/json", "Content-Type": "application/json"},
            body=body,
            response_type="object",
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
    except ApiException as error:
        if error.status == 404:
            return False
        raise
    return True


def remove_annotation(
    api: client.ApiClient, plural: str, namespace: str, name: str, key: str
) -> None:
    """Remove annotation ``key`` of a custom resource (a merge patch; gone is fine)."""
    try:
        client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, name, {"metadata": {"annotations": {key: None}}}
        )
    except ApiException as error:
        if error.status != 404:
            raise


def patch_status(
    api: client.ApiClient,
    plural: str,
    namespace: str,
    name: str,
    change: Callable[[dict[str, Any]], dict[str, Any]],
) -> bool:
    """Set a custom resource's status to ``change(current status)``; False when that
    changes nothing (no write) or the object is gone. Conflicts are retried."""
    objects = client.CustomObjectsApi(api)
    for _ in range(_CONFLICT_RETRIES):
        try:
            current = objects.get_namespaced_custom_object(GROUP, VERSION, namespace, plural, name)
        except ApiException as error:
            if error.status == 404:
                return False
            raise
        status = current.get("status") or {}
        updated = change(copy.deepcopy(status))
        if updated == status:
            return False
        try:
            objects.replace_namespaced_custom_object_status(
                GROUP, VERSION, namespace, plural, name, {**current, "status": updated}
            )
        except ApiException as error:
            if error.status == 409:
                logger.debug("%s/%s: status conflict, reading again", plural, name)
                continue
            if error.status == 404:
                return False
            raise
        return True
    raise RuntimeError(f"{plural}/{name}: status kept conflicting after {_CONFLICT_RETRIES} tries")
