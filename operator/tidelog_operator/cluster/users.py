"""The Users of a Cluster as one pass observes them: each User whose ``clusterRef``
names the Cluster, with its Secret and the password Secret it refers to, and what the
brokers hold for all of them (every ACL, every user's quotas and SCRAM credentials: three
requests, however many Users).

Pure views: ``user_step`` decides from them, ``user_commands`` acts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog.admin import AdminClient
from tidelog.admin.security import DEFAULT_SCRAM_MECHANISM, USER
from tidelog.security.acls import AclBinding
from tidelog_operator import kube
from tidelog_operator.names import GROUP, VERSION
from tidelog_operator.spec import ClusterSpec

__all__ = ["BrokerUsers", "ObservedUser", "ask_users", "observe_users"]


@dataclass(frozen=True)
class ObservedUser:
    """A User object and what it refers to: its own Secret (``secret``: data and
    labels; None when absent) and the Secret its password comes from (None when it names
    none or that Secret is absent)."""

    body: Mapping[str, Any] = field(repr=False)
    secret: client.V1Secret | None = field(default=None, repr=False)
    password_secret: client.V1Secret | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return self.body["metadata"]["name"]

    @property
    def deleting(self) -> bool:
        return bool(self.body["metadata"].get("deletionTimestamp"))


@dataclass(frozen=True)
class BrokerUsers:
    """What the brokers hold: ACLs by principal, quota values by user name (the user's
    own entity), and the users with a SCRAM-SHA-512 credential."""

    acls: Mapping[str, frozenset[AclBinding]] = field(default_factory=dict)
    quotas: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    scram: frozenset[str] = frozenset()


def observe_users(api: client.ApiClient, spec: ClusterSpec) -> tuple[ObservedUser, ...]:
    """The Cluster's Users (deleting ones too, whose credentials must go), by name;
    none where the User resource is not installed (the chart's CRDs not upgraded)."""
    try:
        listed = client.CustomObjectsApi(api).list_namespaced_custom_object(
            GROUP, VERSION, spec.namespace, "users"
        )
    except ApiException as error:
        if error.status == 404:
            return ()
        raise
    core = client.CoreV1Api(api)
    found = []
    for body in sorted(listed.get("items", []), key=lambda u: u["metadata"]["name"]):
        if (body.get("spec") or {}).get("clusterRef") != spec.name:
            continue
        name = body["metadata"]["name"]
        secret = kube.found(core.read_namespaced_secret, name, spec.namespace)
        reference = (
            ((body["spec"].get("authentication") or {}).get("password") or {}).get("valueFrom")
            or {}
        ).get("secretKeyRef")
        password_secret = None
        if reference:
            password_secret = kube.found(
                core.read_namespaced_secret, reference["name"], spec.namespace
            )
        found.append(ObservedUser(body, secret, password_secret))
    return tuple(found)


def ask_users(admin: AdminClient, *, authorizer: bool) -> BrokerUsers:
    """Every ACL (none asked for without an ``authorizer``: the brokers answer
    SECURITY_DISABLED), every user's own quotas and the SCRAM-SHA-512 credentials, from
    the brokers; raises what the client raises when they do not answer."""
    acls: dict[str, set[AclBinding]] = {}
    for binding in admin.describe_acls() if authorizer else ():
        acls.setdefault(binding.entry.principal, set()).add(binding)
    quotas = {}
    for entity, values in admin.describe_client_quotas().items():
        parts = dict(entity.parts)
        if set(parts) == {USER} and parts[USER] is not None:
            quotas[parts[USER]] = dict(values)
    scram = frozenset(
        user
        for user, credentials in admin.describe_scram_credentials().items()
        if any(c.mechanism == DEFAULT_SCRAM_MECHANISM for c in credentials)
    )
    return BrokerUsers({p: frozenset(b) for p, b in acls.items()}, quotas, scram)
