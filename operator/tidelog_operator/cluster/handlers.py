"""kopf handlers of Cluster: a few lines each over ``passes.run_pass``.

Every handler runs the same pass (observe → decide → act → status, ``passes.py``) under
the Cluster's one lock: create, spec update and resume at once, and a daemon every
``STEP_INTERVAL_S`` while a roll, a drain or a scaling is under way (so that each step
follows the last within seconds), every ``OBSERVE_INTERVAL_S`` otherwise. So the
brokers' StatefulSet has one writer, and no write undoes another.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import kopf

from tidelog_operator import kube
from tidelog_operator.cluster.passes import run_pass
from tidelog_operator.names import GROUP, VERSION, node_reader_binding_name

__all__ = ["OBSERVE_INTERVAL_S", "STEP_INTERVAL_S"]

logger = logging.getLogger(__name__)

OBSERVE_INTERVAL_S = 10.0
STEP_INTERVAL_S = 2.0


@kopf.on.resume(GROUP, VERSION, "clusters")
@kopf.on.create(GROUP, VERSION, "clusters")
@kopf.on.update(GROUP, VERSION, "clusters", field="spec")
def reconcile_cluster(name: str, namespace: str, **_: Any) -> None:
    run_pass(namespace, name)


@kopf.daemon(
    GROUP, VERSION, "clusters", initial_delay=1, cancellation_backoff=30, cancellation_timeout=5
)
async def watch_cluster(name: str, namespace: str, stopped: kopf.DaemonStopped, **_: Any) -> None:
    """Passes in a worker thread, one at a time. A pass that fails (the API server
    unreachable, say) is logged and the next one comes after the long interval. When the
    Cluster goes or the operator exits, a pass under way has 30 s to end before it is
    cancelled."""
    while not stopped:
        try:
            stepping = await asyncio.to_thread(run_pass, namespace, name)
        except Exception:  # the daemon outlives any one failed pass
            logger.exception("cluster %s/%s: the pass failed", namespace, name)
            stepping = False
        await stopped.wait(STEP_INTERVAL_S if stepping else OBSERVE_INTERVAL_S)


@kopf.on.delete(GROUP, VERSION, "clusters")
def forget_cluster(name: str, namespace: str, **_: Any) -> None:
    """What the Cluster cannot own, being cluster-scoped: its brokers' node-reading
    binding (its local volumes stay, as claimRetention says of its data)."""
    kube.delete(
        kube.api(),
        "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding",
        node_reader_binding_name(namespace, name),
        None,
    )
