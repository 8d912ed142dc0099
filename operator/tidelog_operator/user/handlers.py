"""kopf handlers of User: each runs its Cluster's pass (``cluster.passes``), which
decides and carries out every User of that Cluster and writes their statuses (DESIGN §8:
Users add a decider to the pass, not a loop of their own). The Cluster's daemon passes
every few seconds anyway: these make a change take effect at once.

A User being deleted keeps its finalizer until the pass has removed its ACLs, quotas and
credential from the brokers (its Secret, which it owns, goes with it); a Cluster that is
gone takes its users with it.
"""

from __future__ import annotations

from typing import Any

import kopf

from tidelog.admin import AdminError
from tidelog.protocol.errors import ProtocolError
from tidelog_operator.cluster.passes import run_pass
from tidelog_operator.cluster.users import ask_users
from tidelog_operator.cluster_client import NoCredentials, cluster_admin
from tidelog_operator.names import GROUP, VERSION
from tidelog_operator.user.spec import principal

__all__ = ["RETRY_S"]

RETRY_S = 5


@kopf.on.resume(GROUP, VERSION, "users")
@kopf.on.create(GROUP, VERSION, "users")
@kopf.on.update(GROUP, VERSION, "users", field="spec")
def reconcile_user(spec: dict[str, Any], namespace: str, **_: Any) -> None:
    run_pass(namespace, spec["clusterRef"])


@kopf.on.delete(GROUP, VERSION, "users")
def delete_user(name: str, spec: dict[str, Any], namespace: str, **_: Any) -> None:
    run_pass(namespace, spec["clusterRef"])
    try:
        held = ask_users(cluster_admin(namespace, spec["clusterRef"]))
    except NoCredentials:
        return  # no Cluster, no brokers: nothing is left of the user
    except (OSError, AdminError, ProtocolError) as error:
        raise kopf.TemporaryError(f"the brokers do not answer: {error}", delay=RETRY_S) from None
    if principal(name) in held.acls or name in held.quotas or name in held.scram:
        raise kopf.TemporaryError("the user's ACLs, quotas or credential remain", delay=RETRY_S)
