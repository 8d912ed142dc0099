"""The certificate step's decisions (pure), from facts of real certificates: what a
Cluster lacks is made, a leaf is issued again when it lacks a name, comes from another CA
or nears its end, and a broker serving another certificate than its Secret's reloads.
During a CA's renewal: the bundles follow the CA Secrets (current and previous), a leaf
Secret of an older CA generation is reissued whole, a paused CA signs nothing, and the
operator's credentials follow the cluster CA's bundle; the pod templates' trust markers
follow the Secrets' generations."""

from __future__ import annotations

import base64
import datetime

from tidelog.security.certificates import CertificateAuthority, CertificateFacts
from tidelog_operator import names
from tidelog_operator.builders.certificates import broker_hosts
from tidelog_operator.builders.zookeeper import zookeeper_hosts
from tidelog_operator.cluster.ca_renewal import RenewalTrigger
from tidelog_operator.cluster.certificate_commands import (
    CaKind,
    IssueBrokerCertificates,
    IssueCa,
    IssueOperatorCredentials,
    IssueZooKeeperCertificates,
    ReloadStores,
    WriteClientsTrust,
    WriteClusterTrust,
    WriteOperatorTrust,
)
from tidelog_operator.cluster.certificate_step import (
    TlsView,
    ca_trust_markers,
    certificate_step,
    tls_view,
    zookeeper_issue,
)
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


RENEWED = CLUSTER_CA.renewed(valid_days=365, now=NOW + datetime.timedelta(days=300))


def fingerprint(authority) -> str:
    return facts(authority.certificate).sha256_fingerprint


def _b64(pem: bytes) -> str:
    return base64.b64encode(pem).decode()


def test_the_view_reads_what_a_renewal_needs_from_the_secrets():
    operator = CLUSTER_CA.issue(names.operator_subject("events"), now=NOW)
    secrets = {
        "events-cluster-ca": {
            "ca.crt": _b64(RENEWED.certificate_pem),
            "ca-previous.crt": _b64(CLUSTER_CA.certificate_pem),
        },
        "events-clients-ca": {"ca.crt": _b64(CLIENTS_CA.certificate_pem)},
        "events-broker-certs": {"events-broker-0.pem": _b64(operator.chain_pem)},
        "events-operator-credentials": {
            "ssl.keystore.certificate.chain": _b64(operator.chain_pem),
            "ssl.truststore.certificates": _b64(CLUSTER_CA.certificate_pem),
        },
    }
    annotations = {
        "events-cluster-ca": {"tidelog.dev/ca-generation": "1"},
        "events-clients-ca": {"tidelog.dev/ca-generation": "0", "tidelog.dev/force-replace": ""},
        "events-broker-certs": {"tidelog.dev/ca-generation": "1"},
        "events-operator-credentials": {"tidelog.dev/ca-generation": "0"},
    }
    view = tls_view(SPEC, secrets, annotations)
    assert view.current(CaKind.CLUSTER) == facts(RENEWED.certificate)
    assert view.previous == {CaKind.CLUSTER: facts(CLUSTER_CA.certificate)}
    assert view.generations == {CaKind.CLUSTER: 1, CaKind.CLIENTS: 0}
    assert view.forces == {CaKind.CLIENTS: RenewalTrigger.FORCE_REPLACE}
    assert (view.broker_generation, view.zookeeper_generation, view.operator_generation) == (
        1,
        0,
        0,
    )
    assert view.operator_trust == {fingerprint(CLUSTER_CA)}
    assert view.bundle(CaKind.CLUSTER) == {fingerprint(RENEWED), fingerprint(CLUSTER_CA)}
    assert view.bundle(CaKind.CLIENTS) == {fingerprint(CLIENTS_CA)}
    # no credentials: their trust is not observed; an unreadable truststore trusts nothing
    assert tls_view(SPEC, {}, {}).operator_trust is None
    secrets["events-operator-credentials"]["ssl.truststore.certificates"] = _b64(b"junk")
    assert tls_view(SPEC, secrets, annotations).operator_trust == frozenset()


def renewing(**changes) -> TlsView:
    """A complete Cluster whose cluster CA Secret holds generation 1 (same key) beside
    the previous certificate, its bundle and leaves still of generation 0."""
    view = complete()
    return TlsView(
        **{
            **vars(view),
            "cluster_ca": facts(RENEWED.certificate),
            "previous": {CaKind.CLUSTER: facts(CLUSTER_CA.certificate)},
            "generations": {CaKind.CLUSTER: 1},
            "operator_trust": frozenset({fingerprint(CLUSTER_CA)}),
            **changes,
        }
    )


def test_the_bundles_and_the_operators_trust_follow_the_ca_secrets():
    both = frozenset({fingerprint(RENEWED), fingerprint(CLUSTER_CA)})
    paused = frozenset({CaKind.CLUSTER})
    assert certificate_step(SPEC, renewing(), 3, NOW, paused=paused) == (
        WriteClusterTrust(),
        WriteClientsTrust(),
        WriteOperatorTrust(),
    )
    trusted = renewing(
        cluster_trust=both,
        clients_trust=both | {fingerprint(CLIENTS_CA)},
        operator_trust=both,
    )
    assert certificate_step(SPEC, trusted, 3, NOW, paused=paused) == ()
    # the previous certificate dropped: the bundles trust the current one alone
    dropped = renewing(cluster_trust=both, previous={}, broker_generation=1)
    assert certificate_step(SPEC, dropped, 1, NOW, paused=paused) == (
        WriteClusterTrust(),
        WriteClientsTrust(),
        WriteOperatorTrust(),
    )


def test_leaves_of_an_older_generation_are_reissued_once_signing_goes_on():
    both = frozenset({fingerprint(RENEWED), fingerprint(CLUSTER_CA)})
    view = renewing(
        cluster_trust=both, clients_trust=both | {fingerprint(CLIENTS_CA)}, operator_trust=both
    )
    # the same key: the leaves are the CA's still, only their Secrets' generation is older
    assert certificate_step(SPEC, view, 2, NOW) == (
        IssueBrokerCertificates((0, 1, 2)),  # broker 2's entry too: the whole Secret
        IssueZooKeeperCertificates((0, 1, 2)),
        IssueOperatorCredentials(),
    )
    current = renewing(
        cluster_trust=both,
        clients_trust=both | {fingerprint(CLIENTS_CA)},
        operator_trust=both,
        broker_generation=1,
        zookeeper_generation=1,
        operator_generation=1,
    )
    assert certificate_step(SPEC, current, 3, NOW) == ()


def test_a_paused_ca_signs_no_leaf_and_its_brokers_reload_nothing_meanwhile():
    replaced = CertificateAuthority("CN=events-cluster-ca v1,O=tidelog.dev", now=NOW)
    both = frozenset({fingerprint(replaced), fingerprint(CLUSTER_CA)})
    view = renewing(
        cluster_ca=facts(replaced.certificate),
        cluster_trust=both,
        clients_trust=both | {fingerprint(CLIENTS_CA)},
        operator_trust=both,
    )
    served = {i: leaf.sha256_fingerprint for i, leaf in enumerate(view.brokers.values())}
    assert certificate_step(SPEC, view, 3, NOW, served, frozenset({CaKind.CLUSTER})) == ()
    # but a new broker, or credentials gone, get theirs: a pod cannot start without one,
    # and the renewal waits for every pod
    gone = TlsView(**{**vars(view), "operator": None})
    assert certificate_step(SPEC, gone, 4, NOW, served, frozenset({CaKind.CLUSTER})) == (
        IssueBrokerCertificates((3,)),
        IssueOperatorCredentials(),
    )
    # the clients CA paused does not hold the cluster CA's leaves
    assert certificate_step(SPEC, view, 3, NOW, served, frozenset({CaKind.CLIENTS})) == (
        IssueBrokerCertificates((0, 1, 2)),
        IssueZooKeeperCertificates((0, 1, 2)),
        IssueOperatorCredentials(),
    )


def test_the_trust_markers_follow_the_generations_in_the_secrets():
    assert ca_trust_markers(TlsView()) == ("cluster=0,clients=0", "cluster=0")
    assert ca_trust_markers(complete()) == ("cluster=0,clients=0", "cluster=0")
    renewal = renewing(generations={CaKind.CLUSTER: 3, CaKind.CLIENTS: 1})
    assert ca_trust_markers(renewal) == ("cluster=3+2,clients=1", "cluster=3+2")
    assert ca_trust_markers(renewing(previous={})) == ("cluster=1,clients=0", "cluster=1")
