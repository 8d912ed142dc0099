"""What a pass observes of its CAs for their renewal (pure, from snapshots built by
hand): the brokers and ZooKeeper rolled only once they run, ready, the template that
carries the current trust marker; leaves current only once every leaf Secret (and every
TLS User's) is of the CA's generation; served only once every live broker serves its
Secret's certificate; the clients CA's trust without the cluster CA's; and TLS Users'
certificates reissued from a renewed clients CA, unless its signing is paused."""

from __future__ import annotations

import base64
import datetime

import pytest
from kubernetes import client

from tidelog.security.certificates import CertificateAuthority, CertificateFacts
from tidelog_operator import names
from tidelog_operator.cluster.ca_observe import (
    brokers_rolled,
    ca_observed,
    served_current,
    users_current,
    zookeeper_rolled,
)
from tidelog_operator.cluster.ca_renewal import CaRecord, RenewalTrigger
from tidelog_operator.cluster.certificate_commands import CaKind
from tidelog_operator.cluster.certificate_step import TlsView
from tidelog_operator.cluster.snapshot import (
    BrokerPod,
    BrokersView,
    ClusterSnapshot,
    StatefulSetView,
    ZooKeeperView,
)
from tidelog_operator.cluster.user_commands import IssueUserCertificate
from tidelog_operator.cluster.user_step import user_step
from tidelog_operator.cluster.users import BrokerUsers, ObservedUser
from tidelog_operator.spec import parse_cluster
from tidelog_operator.user.secret import user_labels

SPEC = parse_cluster("events", "prod", {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}})
EXTERNAL = parse_cluster(
    "events",
    "prod",
    {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}, "zookeeper": {"connect": "zk:2181"}},
)
NOW = datetime.datetime(2026, 12, 7, tzinfo=datetime.UTC)
MARKER = "cluster=1+0,clients=0"
CLUSTER_CA = CertificateAuthority("CN=events-cluster-ca v0,O=tidelog.dev", now=NOW)
CLIENTS_CA = CertificateAuthority("CN=events-clients-ca v0,O=tidelog.dev", now=NOW)


def facts(authority) -> CertificateFacts:
    return CertificateFacts.of(authority.certificate)


def pod(broker: int, revision: str = "r2", ready: bool = True, going: bool = False) -> BrokerPod:
    return BrokerPod(
        broker, f"events-broker-{broker}", None, ready, True, True, revision, {}, going
    )


def statefulset(marker: str = MARKER, observed: int = 4, revision: str = "r2") -> StatefulSetView:
    return StatefulSetView(
        replicas=3,
        update_revision=revision,
        volumes={},
        made_for=1,
        resource_version="1",
        generation=4,
        template_annotations={"tidelog.dev/ca-trust": marker},
        observed_generation=observed,
    )


PODS = (pod(0), pod(1), pod(2))


@pytest.mark.parametrize(
    ("live", "pods", "rolled"),
    [
        (statefulset(), PODS, True),
        (statefulset(marker="cluster=0,clients=0"), PODS, False),  # template not applied yet
        (statefulset(observed=3), PODS, False),  # its controller has not seen the spec
        (statefulset(), (pod(0), pod(1, revision="r1"), pod(2)), False),  # not restarted
        (statefulset(), (pod(0), pod(1, ready=False), pod(2)), False),
        (statefulset(), (pod(0), pod(1, going=True), pod(2)), False),
        (statefulset(), (pod(0), pod(2)), False),  # a pod missing
        (None, PODS, False),
    ],
    ids=[
        "rolled",
        "old-marker",
        "unseen-spec",
        "stale-pod",
        "unready",
        "going",
        "missing",
        "no-statefulset",
    ],
)
def test_the_brokers_are_rolled_once_every_pod_runs_the_marked_template_ready(live, pods, rolled):
    assert brokers_rolled(ClusterSnapshot(live, pods, True), MARKER) is rolled


def ensemble(marker: str = "cluster=1+0", current: str = "z2", ready: int = 3) -> ZooKeeperView:
    return ZooKeeperView({"tidelog.dev/ca-trust": marker}, 3, ready, current, "z2", 2, 2)


@pytest.mark.parametrize(
    ("spec", "view", "rolled"),
    [
        (SPEC, ensemble(), True),
        (SPEC, ensemble(marker="cluster=1"), False),
        (SPEC, ensemble(current="z1"), False),  # the rolling update is under way
        (SPEC, ensemble(ready=2), False),
        (SPEC, None, False),
        (EXTERNAL, None, True),  # nothing of ours to roll
    ],
)
def test_zookeeper_is_rolled_once_its_rolling_update_of_the_marked_template_is_done(
    spec, view, rolled
):
    snapshot = ClusterSnapshot(None, (), True, zookeeper=view)
    assert zookeeper_rolled(spec, snapshot, "cluster=1+0") is rolled


def leaf() -> CertificateFacts:
    return CertificateFacts.of(
        CLUSTER_CA.issue(names.broker_subject("events"), now=NOW).certificate
    )


LEAVES = {f"events-broker-{i}": leaf() for i in range(2)}


def brokers_view(served: dict[int, str]) -> BrokersView:
    return BrokersView({0: None, 1: None}, 0, (), {}, {}, served=served)


def test_the_brokers_serve_current_certificates_once_each_serves_its_secrets():
    tls = TlsView(brokers=LEAVES)
    fingerprints = {i: LEAVES[f"events-broker-{i}"].sha256_fingerprint for i in range(2)}
    serving = ClusterSnapshot(None, (), True, brokers=brokers_view(fingerprints), tls=tls)
    assert served_current(SPEC, serving)
    older = brokers_view({**fingerprints, 1: "an older one"})
    assert not served_current(SPEC, ClusterSnapshot(None, (), True, brokers=older, tls=tls))
    unprobed = brokers_view({0: fingerprints[0]})
    assert not served_current(SPEC, ClusterSnapshot(None, (), True, brokers=unprobed, tls=tls))
    assert not served_current(SPEC, ClusterSnapshot(None, (), True, tls=tls))  # no answer


def observed_user(name: str, auth: str, generation: str | None, deleting=False) -> ObservedUser:
    meta = {"name": name, "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = "2026-12-07T00:00:00Z"
    body = {
        "apiVersion": "tidelog.dev/v1alpha1",
        "kind": "User",
        "metadata": meta,
        "spec": {"clusterRef": "events", "authentication": {"type": auth}},
    }
    annotations = {} if generation is None else {"tidelog.dev/ca-generation": generation}
    secret = client.V1Secret(
        metadata=client.V1ObjectMeta(
            name=name, labels=user_labels("events", name), annotations=annotations
        ),
        data={},
    )
    return ObservedUser(body, secret)


def test_the_clients_leaves_are_current_once_every_tls_users_secret_is():
    users = (
        observed_user("alice", "tls", "2"),
        observed_user("bob", "scram-sha-512", None),  # no certificate of the clients CA
        observed_user("carol", "tls", "1", deleting=True),  # going: not waited for
    )
    assert users_current(SPEC, ClusterSnapshot(None, (), True, users=users), 2)
    older = (*users, observed_user("dave", "tls", "1"))
    assert not users_current(SPEC, ClusterSnapshot(None, (), True, users=older), 2)
    unmarked = (observed_user("erin", "tls", None),)
    assert not users_current(SPEC, ClusterSnapshot(None, (), True, users=unmarked), 1)
    assert users_current(SPEC, ClusterSnapshot(None, (), True, users=unmarked), 0)


def test_each_ca_is_observed_with_its_own_trust_leaves_and_pods():
    renewed = CLUSTER_CA.renewed(valid_days=365, now=NOW)
    cluster = frozenset({facts(renewed).sha256_fingerprint, facts(CLUSTER_CA).sha256_fingerprint})
    clients = facts(CLIENTS_CA).sha256_fingerprint
    tls = TlsView(
        cluster_ca=facts(renewed),
        clients_ca=facts(CLIENTS_CA),
        brokers=LEAVES,
        cluster_trust=cluster,
        clients_trust=cluster | {clients},
        previous={CaKind.CLUSTER: facts(CLUSTER_CA)},
        generations={CaKind.CLUSTER: 1},
        forces={CaKind.CLIENTS: RenewalTrigger.FORCE_RENEW},
        broker_generation=1,
        operator_generation=1,
    )
    served = {i: LEAVES[f"events-broker-{i}"].sha256_fingerprint for i in range(2)}
    snapshot = ClusterSnapshot(statefulset(), PODS, True, brokers=brokers_view(served), tls=tls)
    record = CaRecord(0, NOW)
    found = ca_observed(EXTERNAL, snapshot, {"clusterCa": record.as_status()})
    ours, theirs = found[CaKind.CLUSTER], found[CaKind.CLIENTS]
    assert (ours.generation, ours.previous, ours.trusted) == (1, facts(CLUSTER_CA), cluster)
    assert ours.recorded == CaRecord(0, NOW) and theirs.recorded is None
    assert ours.rolled and ours.leaves_current and ours.served_current and ours.force is None
    assert theirs.trusted == {clients} and theirs.force is RenewalTrigger.FORCE_RENEW
    assert theirs.rolled and theirs.leaves_current and theirs.served_current
    # the Cluster's own ensemble: its servers' Secret is of generation 0, it is not rolled
    own = ca_observed(SPEC, snapshot, {})[CaKind.CLUSTER]
    assert not own.leaves_current and not own.rolled
    # the operator's credentials, or the clients CA's bundle, lag the cluster CA's bundle
    for lagging in (
        {"operator_trust": frozenset({facts(CLUSTER_CA).sha256_fingerprint})},
        {"clients_trust": frozenset({clients, facts(CLUSTER_CA).sha256_fingerprint})},
    ):
        behind = ClusterSnapshot(None, (), True, tls=TlsView(**{**vars(tls), **lagging}))
        assert ca_observed(EXTERNAL, behind, {})[CaKind.CLUSTER].trusted == frozenset()
    agreed = ClusterSnapshot(
        None, (), True, tls=TlsView(**{**vars(tls), "operator_trust": cluster})
    )
    assert ca_observed(EXTERNAL, agreed, {})[CaKind.CLUSTER].trusted == cluster


def test_a_tls_users_certificate_of_an_older_clients_ca_is_reissued_unless_paused():
    issued = CLIENTS_CA.issue("CN=alice", now=NOW)
    bundle = CLUSTER_CA.certificate_pem
    user = observed_user("alice", "tls", "0")
    user.secret.data = {
        "user.crt": base64.b64encode(issued.certificate_pem).decode(),
        "ca.crt": base64.b64encode(bundle).decode(),
    }
    tls = TlsView(
        cluster_ca=facts(CLUSTER_CA),
        clients_ca=facts(CLIENTS_CA),
        cluster_trust=frozenset({facts(CLUSTER_CA).sha256_fingerprint}),
    )
    brokers = BrokerUsers()
    (current,) = user_step(SPEC, (user,), brokers, tls, NOW)
    assert current.commands == ()
    renewed = TlsView(**{**vars(tls), "generations": {CaKind.CLIENTS: 1}})
    (older,) = user_step(SPEC, (user,), brokers, renewed, NOW)
    assert [type(c) for c in older.commands] == [IssueUserCertificate]
    (paused,) = user_step(SPEC, (user,), brokers, renewed, NOW, paused=True)
    assert paused.commands == ()
