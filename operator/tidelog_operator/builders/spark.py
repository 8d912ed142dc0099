"""The Kubernetes objects of a ConsumerGroup's Spark application (DESIGN §3, §4): a
service account bound to the chart's Spark driver role, the checkpoint's volume claim,
the pod templates of driver and executors, and the submitter Job that runs
``spark-submit --master k8s://... --deploy-mode cluster`` with the Spark image.

The submitter returns once the driver pod exists
(``spark.kubernetes.submission.waitAppCompletion=false``); the operator then follows
the driver pod of that submission, ``<group>-driver-<n>``. The driver and executors
mount the claim at ``STATE_DIR``; executors are placed on their driver's node, where a
ReadWriteOnce claim can be mounted by both. The application finds the cluster, its
group and its state directory in ``TIDELOG_BOOTSTRAP_SERVERS``, ``TIDELOG_GROUP_ID``
and ``TIDELOG_STATE_DIR``. The driver pod is owned by the ConsumerGroup (its
executors by the driver), so deleting the ConsumerGroup stops the application.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import yaml

from tidelog_operator import names

__all__ = [
    "STATE_DIR",
    "application_resource",
    "pod_templates",
    "role_binding",
    "service_account",
    "state_claim",
    "submit_arguments",
    "submitter_job",
]

STATE_DIR = "/var/lib/tidelog/state"
APPS_IN_IMAGE = "/opt/tidelog/apps"  # tidelog_spark's modules in the Spark image
USER_APP_DIR = "/opt/tidelog/user-app"  # where a user's file from a ConfigMap is mounted
TEMPLATES_DIR = "/etc/tidelog-spark"
KUBERNETES_API = "k8s://https://kubernetes.default.svc"
SPARK_UID = 1001  # the Spark image's user
DRIVER_CONTAINER = "spark-kubernetes-driver"
EXECUTOR_CONTAINER = "spark-kubernetes-executor"
STATE_VOLUME = "state"
USER_APP_VOLUME = "user-app"


def _meta(name: str, namespace: str, group: str) -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "labels": names.consumer_group_labels(group)}


def _security_context() -> dict[str, Any]:
    """The Spark image's user; the checkpoint volume is made writable for it."""
    return {
        "runAsNonRoot": True,
        "runAsUser": SPARK_UID,
        "runAsGroup": SPARK_UID,
        "fsGroup": SPARK_UID,
    }


def service_account(group: str, namespace: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": _meta(names.spark_service_account(group), namespace, group),
    }


def role_binding(group: str, namespace: str, driver_role: str) -> dict[str, Any]:
    """The account's rights in its namespace: the chart's ClusterRole ``driver_role``
    (what spark-submit and the driver do: pods, services, config maps)."""
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": _meta(names.spark_service_account(group), namespace, group),
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": driver_role,
        },
        "subjects": [
            {
                "kind": "ServiceAccount",
                "name": names.spark_service_account(group),
                "namespace": namespace,
            }
        ],
    }


def state_claim(group: str, namespace: str, spark: Mapping[str, Any]) -> dict[str, Any]:
    """The checkpoint's claim (``spec.spark.checkpoint``; the default StorageClass when
    it names none)."""
    checkpoint = spark.get("checkpoint") or {}
    spec: dict[str, Any] = {
        "accessModes": ["ReadWriteOnce"],
        "resources": {"requests": {"storage": checkpoint.get("size", "1Gi")}},
    }
    if checkpoint.get("storageClass"):
        spec["storageClassName"] = checkpoint["storageClass"]
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": _meta(names.spark_state_claim(group), namespace, group),
        "spec": spec,
    }


def _driver_template(group: str, spark: Mapping[str, Any], owner: Mapping[str, Any]) -> dict:
    container: dict[str, Any] = {
        "name": DRIVER_CONTAINER,
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    pod_spec: dict[str, Any] = {"securityContext": _security_context()}
    config_map = (spark.get("application") or {}).get("configMap")
    if config_map:
        container["volumeMounts"] = [{"name": USER_APP_VOLUME, "mountPath": USER_APP_DIR}]
        pod_spec["volumes"] = [{"name": USER_APP_VOLUME, "configMap": {"name": config_map["name"]}}]
    pod_spec["containers"] = [container]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "labels": names.consumer_group_labels(group),
            "ownerReferences": [
                {
                    "apiVersion": owner["apiVersion"],
                    "kind": owner["kind"],
                    "name": owner["metadata"]["name"],
                    "uid": owner["metadata"]["uid"],
                }
            ],
        },
        "spec": pod_spec,
    }


def _executor_template(group: str) -> dict:
    """On the driver's node (the checkpoint's ReadWriteOnce volume is mounted there)."""
    driver = {**names.consumer_group_labels(group), names.SPARK_ROLE_LABEL: "driver"}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"labels": names.consumer_group_labels(group)},
        "spec": {
            "securityContext": _security_context(),
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "topologyKey": "kubernetes.io/hostname",
                            "labelSelector": {"matchLabels": driver},
                        }
                    ]
                }
            },
            "containers": [
                {"name": EXECUTOR_CONTAINER, "terminationMessagePolicy": "FallbackToLogsOnError"}
            ],
        },
    }


def pod_templates(
    group: str, namespace: str, spark: Mapping[str, Any], owner: Mapping[str, Any]
) -> dict[str, Any]:
    """The ConfigMap of the pod templates (``driver.yaml``, ``executor.yaml``) that the
    submitter hands to spark-submit; ``owner`` is the ConsumerGroup."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": _meta(names.spark_templates_config_map(group), namespace, group),
        "data": {
            "driver.yaml": yaml.safe_dump(_driver_template(group, spark, owner), sort_keys=False),
            "executor.yaml": yaml.safe_dump(_executor_template(group), sort_keys=False),
        },
    }


def application_resource(spark: Mapping[str, Any]) -> str:
    """spark-submit's primary resource: a module of tidelog_spark in the image, or the
    user's file from a ConfigMap."""
    application = spark["application"]
    if application.get("module"):
        return f"local://{APPS_IN_IMAGE}/{application['module']}.py"
    return f"local://{USER_APP_DIR}/{application['configMap']['key']}"


def _resource_conf(spark: Mapping[str, Any]) -> dict[str, str]:
    driver = spark.get("driver") or {}
    executor = spark.get("executor") or {}
    return {
        "spark.driver.cores": str(driver.get("cores", 1)),
        "spark.driver.memory": driver.get("memory", "512m"),
        "spark.kubernetes.driver.request.cores": driver.get("cpuRequest", "250m"),
        "spark.executor.instances": str(executor.get("instances", 1)),
        "spark.executor.cores": str(executor.get("cores", 1)),
        "spark.executor.memory": executor.get("memory", "512m"),
        "spark.kubernetes.executor.request.cores": executor.get("cpuRequest", "250m"),
    }


def _state_volume_conf(group: str) -> dict[str, str]:
    conf = {}
    for role in ("driver", "executor"):
        prefix = f"spark.kubernetes.{role}.volumes.persistentVolumeClaim.{STATE_VOLUME}"
        conf[f"{prefix}.options.claimName"] = names.spark_state_claim(group)
        conf[f"{prefix}.mount.path"] = STATE_DIR
    return conf


def submit_arguments(
    group: str,
    namespace: str,
    spark: Mapping[str, Any],
    *,
    group_id: str,
    bootstrap: str,
    image: str,
    submission: int,
) -> list[str]:
    """The arguments of the Spark image's ``submit`` role for submission ``submission``:
    spark-submit in cluster mode, ours first and ``spec.spark.conf`` after (so a user
    may override any), then the application and its arguments."""
    label = names.CONSUMER_GROUP_LABEL
    conf = {
        "spark.kubernetes.namespace": namespace,
        "spark.kubernetes.container.image": image,
        "spark.kubernetes.authenticate.driver.serviceAccountName": names.spark_service_account(
            group
        ),
        "spark.kubernetes.driver.pod.name": names.spark_driver_pod(group, submission),
        "spark.kubernetes.executor.podNamePrefix": f"{group}-{submission}",
        "spark.kubernetes.submission.waitAppCompletion": "false",
        f"spark.kubernetes.driver.label.{label}": group,
        f"spark.kubernetes.executor.label.{label}": group,
        "spark.kubernetes.driver.podTemplateFile": f"{TEMPLATES_DIR}/driver.yaml",
        "spark.kubernetes.driver.podTemplateContainerName": DRIVER_CONTAINER,
        "spark.kubernetes.executor.podTemplateFile": f"{TEMPLATES_DIR}/executor.yaml",
        "spark.kubernetes.executor.podTemplateContainerName": EXECUTOR_CONTAINER,
        "spark.kubernetes.driverEnv.TIDELOG_BOOTSTRAP_SERVERS": bootstrap,
        "spark.kubernetes.driverEnv.TIDELOG_GROUP_ID": group_id,
        "spark.kubernetes.driverEnv.TIDELOG_STATE_DIR": STATE_DIR,
        **_state_volume_conf(group),
        **_resource_conf(spark),
        **{str(k): str(v) for k, v in (spark.get("conf") or {}).items()},
    }
    arguments = ["submit", "--master", KUBERNETES_API, "--deploy-mode", "cluster"]
    arguments += ["--name", group]
    for key, value in conf.items():
        arguments += ["--conf", f"{key}={value}"]
    return [*arguments, application_resource(spark), *map(str, spark.get("arguments") or [])]


def submitter_job(
    group: str, namespace: str, submission: int, image: str, arguments: list[str]
) -> dict[str, Any]:
    """The Job that submits once: no retries of its own (the operator restarts a failed
    application with its back-off); a failure's last log lines become its termination
    message."""
    labels = names.consumer_group_labels(group)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": _meta(names.spark_submitter_job(group, submission), namespace, group),
        "spec": {
            "backoffLimit": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "serviceAccountName": names.spark_service_account(group),
                    "restartPolicy": "Never",
                    "securityContext": _security_context(),
                    "containers": [
                        {
                            "name": "submit",
                            "image": image,
                            "args": arguments,
                            "terminationMessagePolicy": "FallbackToLogsOnError",
                            "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}},
                            "volumeMounts": [{"name": "templates", "mountPath": TEMPLATES_DIR}],
                        }
                    ],
                    "volumes": [
                        {
                            "name": "templates",
                            "configMap": {"name": names.spark_templates_config_map(group)},
                        }
                    ],
                },
            },
        },
    }
