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

from tidelog.admin import AdminClient, AdminError
from tidelog.protocol.errors import ErrorCode, ProtocolError
from tidelog_operator.cluster.passes import run_pass
from tidelog_operator.cluster.users import BrokerUsers, ask_users
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
        admin = cluster_admin(namespace, spec["clusterRef"])
    except NoCredentials:
        return  # no Cluster, no brokers: nothing is left of the user
    try:
        held = _held(admin)
    except (OSError, AdminError, ProtocolError) as error:
        raise kopf.TemporaryError(f"the brokers did not say: {error}", delay=RETRY_S) from None
    if principal(name) in held.acls or name in held.quotas or name in held.scram:
        raise kopf.TemporaryError("the user's ACLs, quotas or credential remain", delay=RETRY_S)


def _held(admin: AdminClient) -> BrokerUsers:
    """What the brokers hold of users; no ACLs where they run no authorizer."""
    try:
        return ask_users(admin, authorizer=True)
    except AdminError as error:
        if error.code != ErrorCode.SECURITY_DISABLED:
            raise
        return ask_users(admin, authorizer=False)
