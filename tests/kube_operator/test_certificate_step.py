"""The certificate step's decisions (pure), from facts of real certificates: what a
Cluster lacks is made, a leaf is issued again when it lacks a name, comes from another CA
or nears its end, and a broker serving another certificate than its Secret's reloads."""

from __future__ import annotations

import datetime

from tidelog.security.certificates import CertificateAuthority, CertificateFacts
from tidelog_operator import names
from tidelog_operator.builders.certificates import broker_hosts
from tidelog_operator.builders.zookeeper import zookeeper_hosts
from tidelog_operator.cluster.certificate_commands import (
    CaKind,
    IssueBrokerCertificates,
    IssueCa,
    IssueOperatorCredentials,
    IssueZooKeeperCertificates,
    ReloadStores,
    WriteClientsTrust,
)
from tidelog_operator.cluster.certificate_step import TlsView, certificate_step, zookeeper_issue
from tidelog_operator.spec import parse_cluster

SPEC = parse_cluster("events", "prod", {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}})
NOW = datetime.datetime(2026, 12, 7, tzinfo=datetime.UTC)
CLUSTER_CA = CertificateAuthority("CN=events-cluster-ca v0,O=tidelog.dev", now=NOW)
CLIENTS_CA = CertificateAuthority("CN=events-clients-ca v0,O=tidelog.dev", now=NOW)


def facts(certificate) -> CertificateFacts:
    return CertificateFacts.of(certificate)


def broker_leaf(broker_id: int, ca=CLUSTER_CA, hosts=None, valid_days=365) -> CertificateFacts:
    hosts = broker_hosts(SPEC, broker_id) if hosts is None else hosts
    issued = ca.issue(names.broker_subject("events"), hosts=hosts, valid_days=valid_days, now=NOW)
    return facts(issued.certificate)


def zookeeper_leaf(ordinal: int, ca=CLUSTER_CA) -> CertificateFacts:
    hosts = zookeeper_hosts(SPEC, ordinal)
    issued = ca.issue(names.zookeeper_subject("events"), hosts=hosts, now=NOW)
    return facts(issued.certificate)


def complete(**changes) -> TlsView:
    """A Cluster of three brokers and three ZooKeeper servers that has everything."""
    operator = CLUSTER_CA.issue(names.operator_subject("events"), now=NOW).certificate
    cluster, clients = facts(CLUSTER_CA.certificate), facts(CLIENTS_CA.certificate)
    view = {
        "cluster_ca": cluster,
        "clients_ca": clients,
        "brokers": {names.broker_pod("events", i): broker_leaf(i) for i in range(3)},
        "operator": facts(operator),
        "zookeeper": {f"events-zookeeper-{i}": zookeeper_leaf(i) for i in range(3)},
        "zookeeper_issued": 1,
        "cluster_trust": frozenset({cluster.sha256_fingerprint}),
        "clients_trust": frozenset({clients.sha256_fingerprint, cluster.sha256_fingerprint}),
    }
    return TlsView(**{**view, **changes})


def test_a_new_cluster_gets_everything_in_its_first_pass():
    assert certificate_step(SPEC, TlsView(), 3, NOW) == (
        IssueCa(CaKind.CLUSTER),
        IssueCa(CaKind.CLIENTS),
        WriteClientsTrust(),
        IssueBrokerCertificates((0, 1, 2)),
        IssueZooKeeperCertificates((0, 1, 2)),
        IssueOperatorCredentials(),
    )


def test_a_cluster_with_everything_needs_nothing():
    assert certificate_step(SPEC, complete(), 3, NOW) == ()


def test_new_zookeeper_certificates_count_as_an_issue_that_restarts_the_servers():
    view = complete()
    assert zookeeper_issue(view, certificate_step(SPEC, view, 3, NOW)) == 1
    ending = {**view.zookeeper, "events-zookeeper-2": None}
    ending = {k: v for k, v in ending.items() if v is not None}
    commands = certificate_step(SPEC, complete(zookeeper=ending), 3, NOW)
    assert commands == (IssueZooKeeperCertificates((2,)),)
    assert zookeeper_issue(view, commands) == 2
    external = parse_cluster(
        "events",
        "prod",
        {"storage": {"volumes": [{"id": 0, "size": "1Gi"}]}, "zookeeper": {"connect": "zk:2181"}},
    )
    assert certificate_step(external, complete(zookeeper={}), 3, NOW) == ()


def test_leaves_are_issued_again_when_missing_misnamed_foreign_or_ending():
    other_ca = CertificateAuthority("CN=events-cluster-ca v0,O=tidelog.dev", now=NOW)
    view = complete()
    brokers = {
        names.broker_pod("events", 0): broker_leaf(0, hosts=["events-broker-0"]),
        names.broker_pod("events", 1): broker_leaf(1, ca=other_ca),
        names.broker_pod("events", 2): broker_leaf(2, valid_days=29),
    }
    assert certificate_step(SPEC, complete(brokers=brokers), 4, NOW) == (
        IssueBrokerCertificates((0, 1, 2, 3)),
    )
    assert certificate_step(SPEC, view, 3, NOW + datetime.timedelta(days=336)) == (
        IssueBrokerCertificates((0, 1, 2)),
        IssueZooKeeperCertificates((0, 1, 2)),
        IssueOperatorCredentials(),
    )


def test_leaves_as_long_as_their_ca_are_not_issued_again_and_again():
    ending = CertificateAuthority("CN=events-cluster-ca v0,O=tidelog.dev", valid_days=20, now=NOW)
    cluster = facts(ending.certificate)
    view = complete(
        cluster_ca=cluster,
        cluster_trust=frozenset({cluster.sha256_fingerprint}),
        clients_trust=frozenset(
            {facts(CLIENTS_CA.certificate).sha256_fingerprint, cluster.sha256_fingerprint}
        ),
        brokers={names.broker_pod("events", i): broker_leaf(i, ca=ending) for i in range(3)},
        zookeeper={f"events-zookeeper-{i}": zookeeper_leaf(i, ca=ending) for i in range(3)},
        operator=facts(ending.issue(names.operator_subject("events"), now=NOW).certificate),
    )
    assert certificate_step(SPEC, view, 3, NOW + datetime.timedelta(days=5)) == ()


def test_the_clients_trust_follows_both_cas():
    assert certificate_step(SPEC, complete(clients_trust=frozenset()), 3, NOW) == (
        WriteClientsTrust(),
    )


def test_a_broker_serving_another_certificate_than_its_secrets_reloads_its_stores():
    view = complete()
    served = {i: leaf.sha256_fingerprint for i, leaf in enumerate(view.brokers.values())}
    assert certificate_step(SPEC, view, 3, NOW, served) == ()
    served[1] = "an older one"
    assert certificate_step(SPEC, view, 3, NOW, served) == (ReloadStores((1,)),)
    # a leaf about to be issued again is reloaded in a later pass, once it is in the Secret
    view = complete(brokers={**view.brokers, "events-broker-1": broker_leaf(1, valid_days=1)})
    assert certificate_step(SPEC, view, 3, NOW, served) == (IssueBrokerCertificates((1,)),)
