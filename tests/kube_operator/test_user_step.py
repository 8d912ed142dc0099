"""A User's decision in its Cluster's pass (pure): ACLs need the Cluster's authorizer,
and a Cluster without one says so on the User instead of failing every ACL request."""

from __future__ import annotations

import datetime

from tidelog.security.certificates import CertificateAuthority, CertificateFacts
from tidelog_operator.cluster.certificate_step import TlsView
from tidelog_operator.cluster.user_commands import SyncUser, WriteScramSecret
from tidelog_operator.cluster.user_step import user_step
from tidelog_operator.cluster.users import BrokerUsers, ObservedUser
from tidelog_operator.conditions import Reason
from tidelog_operator.spec import parse_cluster

NOW = datetime.datetime(2026, 12, 7, tzinfo=datetime.UTC)
STORAGE = {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}}
CLUSTER_CA = CertificateAuthority("CN=events-cluster-ca v0,O=tidelog.dev", now=NOW)
CLIENTS_CA = CertificateAuthority("CN=events-clients-ca v0,O=tidelog.dev", now=NOW)
TLS = TlsView(
    cluster_ca=CertificateFacts.of(CLUSTER_CA.certificate),
    clients_ca=CertificateFacts.of(CLIENTS_CA.certificate),
    cluster_trust=frozenset({CertificateFacts.of(CLUSTER_CA.certificate).sha256_fingerprint}),
)
ALICE = {
    "apiVersion": "tidelog.dev/v1alpha1",
    "kind": "User",
    "metadata": {"name": "alice", "uid": "u-1"},
    "spec": {
        "clusterRef": "events",
        "authentication": {"type": "scram-sha-512"},
        "authorization": {
            "acls": [{"resource": {"type": "topic", "name": "orders"}, "operations": ["Write"]}]
        },
    },
}


def test_acls_need_the_clusters_authorizer():
    without = parse_cluster("events", "prod", STORAGE)
    (decision,) = user_step(without, (ObservedUser(ALICE),), BrokerUsers(), TLS, NOW)
    assert decision.commands == ()
    assert decision.problem.reason == Reason.AUTHORIZATION_NOT_ENABLED

    with_authorizer = parse_cluster(
        "events", "prod", {**STORAGE, "authorization": {"type": "simple"}}
    )
    (decision,) = user_step(with_authorizer, (ObservedUser(ALICE),), BrokerUsers(), TLS, NOW)
    assert decision.problem is None
    assert [type(c) for c in decision.commands] == [SyncUser, WriteScramSecret]
    assert (
        len(decision.commands[0].plan.create_acls) == 1 and decision.commands[0].plan.upsert_scram
    )
