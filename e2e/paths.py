"""Where the e2e suite keeps things: its inputs in e2e/, its outputs in build/e2e/."""

from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
E2E = REPO / "e2e"
MANIFESTS = E2E / "manifests"
KIND_CONFIG = E2E / "kind.yaml"
# The kubeconfig of the cluster, the client image's build context, and logs.
WORKDIR = REPO / "build" / "e2e"
# The cluster's state after a failure, one directory per failure.
LOGS = WORKDIR / "logs"
