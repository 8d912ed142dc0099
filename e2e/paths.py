"""Where the e2e suite keeps things: its inputs in e2e/, its outputs in build/e2e/."""

import os
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
E2E = REPO / "e2e"
MANIFESTS = E2E / "manifests"
KIND_CONFIG = E2E / "kind.yaml"
# The kubeconfig of the cluster, the client image's build context, and logs.
WORKDIR = REPO / "build" / "e2e"
# The cluster's state after a failure, one directory per failure.
LOGS = WORKDIR / "logs"
# A copy of the latest failures' state, outside the checkout: a clone that CI deletes
# after its run leaves it behind.
KEPT_FAILURES = (
    Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "tidelog" / "e2e-failures"
)
KEPT_FAILURES_COUNT = 10
