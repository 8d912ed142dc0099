"""The reference pipeline on kind as a user runs it: ``examples/spark/pipeline.yaml``
applied (the topics ``ticks`` and ``ohlc-1m``, the ConsumerGroup ``bars`` whose Spark
application the operator runs), its checkpoint on a local volume of one worker (the
volume the user makes for it: a directory of that node, a PersistentVolume of the
chart's ``tidelog-local`` class bound to the group's claim, so the driver and its
executor run there whenever they start), ticks sent by ``tidelog-ticks`` from a pod of
the Spark image, and the bars read back with the e2e client.

:meth:`SparkPipeline.remove` deletes the ConsumerGroup (its submitter Jobs, driver,
executors and claim go with it), the topics, the volume and its directory.
"""

from __future__ import annotations

import json

import yaml

from e2e.operator_deployment import EXAMPLES, OperatorDeployment

__all__ = ["SparkPipeline"]

EXAMPLE = EXAMPLES / "spark" / "pipeline.yaml"
GROUP = "bars"
STATE_CLAIM = f"{GROUP}-spark-state"  # the operator's name for the group's claim
STATE_ON_NODE = f"/var/local/tidelog-spark/{GROUP}"
LOCAL_CLASS = "tidelog-local"  # the chart's no-provisioner StorageClass


class SparkPipeline:
    def __init__(self, deployment: OperatorDeployment, image: str, node: str):
        self.deployment = deployment
        self.image = image
        self.node = node

    def _volume(self) -> dict:
        return {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": f"{self.deployment.namespace}-{STATE_CLAIM}"},
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "storageClassName": LOCAL_CLASS,
                "claimRef": {"namespace": self.deployment.namespace, "name": STATE_CLAIM},
                "local": {"path": STATE_ON_NODE},
                "nodeAffinity": {
                    "required": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {
                                        "key": "kubernetes.io/hostname",
                                        "operator": "In",
                                        "values": [self.node],
                                    }
                                ]
                            }
                        ]
                    }
                },
            },
        }

    def install(self) -> None:
        """The volume, then the example with its checkpoint on that volume's class."""
        self.deployment.cluster.node_exec(self.node, "mkdir", "-p", STATE_ON_NODE)
        self.deployment.cluster.kubectl("apply", "-f", "-", input=json.dumps(self._volume()))
        documents = list(yaml.safe_load_all(EXAMPLE.read_text()))
        for document in documents:
            if document["kind"] == "ConsumerGroup":
                document["spec"]["spark"]["checkpoint"]["storageClass"] = LOCAL_CLASS
        self.deployment.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(documents))

    def application(self) -> dict:
        return (
            self.deployment.get(f"consumergroup/{GROUP}").get("status", {}).get("application", {})
        )

    def running(self, submission: int) -> bool:
        found = self.application()
        return found.get("submission") == submission and found.get("state") == "Running"

    def send_ticks(self, seed: int, start_ms: int, count: int, spacing_ms: int) -> None:
        """``tidelog-ticks`` in its count mode with synthetic event times, in a pod of the
        Spark image."""
        self.deployment.kubectl(
            "run",
            f"ticks-{seed}",
            f"--image={self.image}",
            "--restart=Never",
            "--attach",
            "--rm",
            "--quiet",
            "--",
            "tidelog-ticks",
            "--bootstrap-server",
            "events-bootstrap:9092",
            "--rate",
            "0",
            *("--count", str(count), "--seed", str(seed), "--start", str(start_ms)),
            *("--spacing-ms", str(spacing_ms)),
            timeout=300,
        )

    def bars(self) -> list[tuple[str, dict]]:
        """Every record of ``ohlc-1m``, in log order: (key, bar)."""
        records = self.deployment.client("read-all", "--topic", "ohlc-1m")["records"]
        return [(key, json.loads(value)) for key, value in records]

    def driver_log(self, submission: int) -> str:
        return self.deployment.kubectl("logs", f"{GROUP}-driver-{submission}")

    def events(self) -> list[str]:
        """The reasons of the ConsumerGroup's events, oldest first."""
        found = self.deployment.get(
            "events",
            f"--field-selector=involvedObject.kind=ConsumerGroup,involvedObject.name={GROUP}",
        )["items"]
        found.sort(key=lambda e: e.get("eventTime") or e["metadata"]["creationTimestamp"])
        return [e["reason"] for e in found]

    def remove(self) -> None:
        self.deployment.kubectl(
            "delete", "-f", str(EXAMPLE), "--ignore-not-found", "--wait=true", timeout=300
        )
        self.deployment.cluster.kubectl(
            "delete", "persistentvolume", self._volume()["metadata"]["name"], "--ignore-not-found"
        )
        self.deployment.cluster.node_exec(self.node, "rm", "-rf", STATE_ON_NODE)
