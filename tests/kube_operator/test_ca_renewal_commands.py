"""The CA renewal's commands against a real API server: RenewCa writes the next
generation (the same key, or a new key and subject) with the old certificate kept as
the previous one and removes the users' force annotations (kubectl's, another field
manager's), idempotently; ForgetPreviousCa drops the previous certificate, even one
that another manager also wrote. And the Cluster CRD's ``spec.certificates``: its
defaults, its refusals, and the status record it keeps."""

from __future__ import annotations

import base64
import datetime

import pytest
from cryptography.hazmat.primitives.serialization import Encoding
from kubernetes import client
from kubernetes.client.exceptions import ApiException

from tidelog.security.certificates import CertificateAuthority, certificate_facts, issued_by
from tidelog_operator.cluster.ca_renewal import CaRecord, Renewal, RenewalPhase, RenewalTrigger
from tidelog_operator.cluster.ca_renewal_commands import (
    RENEWAL_HANDLERS,
    ForgetPreviousCa,
    RenewCa,
)
from tidelog_operator.cluster.certificate_commands import TLS_HANDLERS, CaKind, IssueCa
from tidelog_operator.cluster.command_base import Context
from tidelog_operator.spec import parse_cluster

GROUP, VERSION = "tidelog.dev", "v1alpha1"
STORAGE = {"volumes": [{"id": 0, "size": "1Gi"}]}
SPEC = {
    "storage": STORAGE,
    "zookeeper": {"connect": "zookeeper.example:2181"},
    "certificates": {"clusterCa": {"validityDays": 90, "renewalDays": 10}},
}
SECRETS = {CaKind.CLUSTER: "events-cluster-ca", CaKind.CLIENTS: "events-clients-ca"}
FORCE_RENEW, FORCE_REPLACE = "tidelog.dev/force-renew", "tidelog.dev/force-replace"


def _cluster(kube_api, namespace: str, spec: dict) -> dict:
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Cluster",
        "metadata": {"name": "events"},
        "spec": spec,
    }
    return client.CustomObjectsApi(kube_api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "clusters", body
    )


@pytest.fixture
def context(tidelog_crds, kube_api, kube_namespace) -> Context:
    """The context of a pass over Cluster ``events``, whose two CAs are made."""
    cluster = _cluster(kube_api, kube_namespace, SPEC)
    owner = {
        "apiVersion": cluster["apiVersion"],
        "kind": cluster["kind"],
        "name": "events",
        "uid": cluster["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": True,
    }
    made = Context(
        kube_api,
        kube_namespace,
        "events",
        lambda: pytest.fail("no broker is asked"),
        parse_cluster("events", kube_namespace, cluster["spec"]),
        owner,
    )
    for kind in CaKind:
        TLS_HANDLERS[IssueCa](IssueCa(kind), made)
    return made


def carry_out(command, context: Context) -> None:
    RENEWAL_HANDLERS[type(command)](command, context)


def read(context: Context, kind: CaKind) -> client.V1Secret:
    return client.CoreV1Api(context.api).read_namespaced_secret(SECRETS[kind], context.namespace)


def data(secret: client.V1Secret) -> dict[str, bytes]:
    return {key: base64.b64decode(value) for key, value in (secret.data or {}).items()}


def annotate(context: Context, kind: CaKind, annotations: dict[str, str | None]) -> None:
    """Annotations set as ``kubectl annotate`` sets them: another field manager's."""
    client.CoreV1Api(context.api).patch_namespaced_secret(
        SECRETS[kind],
        context.namespace,
        {"metadata": {"annotations": annotations}},
        field_manager="kubectl-annotate",
    )


def leaf_of(secret: client.V1Secret) -> bytes:
    """A certificate the CA of ``secret`` issues now, as PEM."""
    held = data(secret)
    authority = CertificateAuthority.from_pem(held["ca.crt"], held["ca.key"])
    return authority.issue("CN=events-broker,O=tidelog.dev").certificate.public_bytes(Encoding.PEM)


def test_renew_ca_makes_the_next_generation_with_the_same_key(context):
    before = read(context, CaKind.CLUSTER)
    leaf = leaf_of(before)
    annotate(context, CaKind.CLUSTER, {FORCE_RENEW: "true", "example.com/keep": "yes"})
    carry_out(RenewCa(CaKind.CLUSTER, 1, replace_key=False), context)
    after = read(context, CaKind.CLUSTER)
    old, new = data(before), data(after)
    assert set(new) == {"ca.crt", "ca.key", "ca-previous.crt"}
    assert new["ca.key"] == old["ca.key"] and new["ca-previous.crt"] == old["ca.crt"]
    was, now = certificate_facts(old["ca.crt"]), certificate_facts(new["ca.crt"])
    assert now.subject == was.subject == "CN=events-cluster-ca v0,O=tidelog.dev"
    assert now.subject_key_id == was.subject_key_id and now.serial != was.serial
    lasts = now.not_after - datetime.datetime.now(datetime.UTC)
    assert datetime.timedelta(days=89) < lasts <= datetime.timedelta(days=90)  # validityDays
    assert issued_by(leaf, new["ca.crt"])  # the leaves of the old verify under the new
    annotations = after.metadata.annotations
    assert annotations["tidelog.dev/ca-generation"] == "1"
    assert FORCE_RENEW not in annotations and annotations["example.com/keep"] == "yes"
    assert [o.uid for o in after.metadata.owner_references] == [context.owner["uid"]]

    carry_out(RenewCa(CaKind.CLUSTER, 1, replace_key=False), context)
    assert read(context, CaKind.CLUSTER).metadata.resource_version == (
        after.metadata.resource_version
    )


def test_renew_ca_replacing_the_key_makes_a_new_ca_with_its_generation_in_its_name(context):
    before = read(context, CaKind.CLIENTS)
    leaf = leaf_of(before)
    annotate(context, CaKind.CLIENTS, {FORCE_REPLACE: "true"})
    carry_out(RenewCa(CaKind.CLIENTS, 1, replace_key=True), context)
    after = read(context, CaKind.CLIENTS)
    old, new = data(before), data(after)
    assert new["ca.key"] != old["ca.key"] and new["ca-previous.crt"] == old["ca.crt"]
    facts = certificate_facts(new["ca.crt"])
    assert facts.subject == "CN=events-clients-ca v1,O=tidelog.dev"
    lasts = facts.not_after - datetime.datetime.now(datetime.UTC)
    assert lasts > datetime.timedelta(days=364)  # the clients CA's default validity
    assert not issued_by(leaf, new["ca.crt"])
    assert issued_by(leaf_of(after), new["ca.crt"])
    assert FORCE_REPLACE not in (after.metadata.annotations or {})


def test_renew_ca_given_again_only_removes_a_force_annotation_left_behind(context):
    carry_out(RenewCa(CaKind.CLUSTER, 1, replace_key=True), context)
    renewed = data(read(context, CaKind.CLUSTER))
    annotate(context, CaKind.CLUSTER, {FORCE_RENEW: "true", FORCE_REPLACE: "true"})
    carry_out(RenewCa(CaKind.CLUSTER, 1, replace_key=True), context)
    after = read(context, CaKind.CLUSTER)
    assert data(after) == renewed
    assert not {FORCE_RENEW, FORCE_REPLACE} & set(after.metadata.annotations)
    assert after.metadata.annotations["tidelog.dev/ca-generation"] == "1"


def test_forget_previous_ca_drops_the_previous_certificate_alone(context):
    carry_out(RenewCa(CaKind.CLUSTER, 1, replace_key=False), context)
    renewed = data(read(context, CaKind.CLUSTER))
    # another manager writes the same previous certificate (a restore of the Secret):
    # it owns the entry too, which an apply that leaves it out would keep
    client.CoreV1Api(context.api).patch_namespaced_secret(
        SECRETS[CaKind.CLUSTER],
        context.namespace,
        {"data": {"ca-previous.crt": base64.b64encode(renewed["ca-previous.crt"]).decode()}},
        field_manager="restore",
    )
    carry_out(ForgetPreviousCa(CaKind.CLUSTER), context)
    after = read(context, CaKind.CLUSTER)
    assert data(after) == {"ca.crt": renewed["ca.crt"], "ca.key": renewed["ca.key"]}
    assert after.metadata.annotations["tidelog.dev/ca-generation"] == "1"
    carry_out(ForgetPreviousCa(CaKind.CLUSTER), context)
    assert read(context, CaKind.CLUSTER).metadata.resource_version == (
        after.metadata.resource_version
    )


def test_the_crd_defaults_the_certificates_and_keeps_their_status_record(
    tidelog_crds, kube_api, kube_namespace
):
    objects = client.CustomObjectsApi(kube_api)
    made = _cluster(kube_api, kube_namespace, {"storage": STORAGE})
    ca = {"validityDays": 365, "renewalDays": 30}
    assert made["spec"]["certificates"] == {"clusterCa": ca, "clientsCa": ca}
    moment = datetime.datetime(2026, 3, 2, 2, 30, tzinfo=datetime.UTC)
    renewal = Renewal(2, RenewalPhase.DROP, True, RenewalTrigger.FORCE_REPLACE, moment)
    record = CaRecord(1, moment + datetime.timedelta(days=9), renewal)
    made["status"] = {"certificates": {"clusterCa": record.as_status()}}
    objects.replace_namespaced_custom_object_status(
        GROUP, VERSION, kube_namespace, "clusters", "events", made
    )
    stored = objects.get_namespaced_custom_object(
        GROUP, VERSION, kube_namespace, "clusters", "events"
    )
    assert CaRecord.from_status(stored["status"]["certificates"]["clusterCa"]) == record


@pytest.mark.parametrize(
    ("certificates", "message"),
    [
        ({"clusterCa": {"renewalDays": 365}}, "renewalDays must be less than validityDays"),
        (
            {"clientsCa": {"validityDays": 20, "renewalDays": 30}},
            "renewalDays must be less than validityDays",
        ),
        ({"maintenanceWindows": ["0 2 * *"]}, "spec.certificates.maintenanceWindows[0]"),
        ({"maintenanceWindows": ["0 2 * * SUN"]}, "spec.certificates.maintenanceWindows[0]"),
    ],
)
def test_the_crd_refuses_a_renewal_period_past_the_validity_and_odd_windows(
    tidelog_crds, kube_api, kube_namespace, certificates, message
):
    with pytest.raises(ApiException) as refused:
        _cluster(kube_api, kube_namespace, {"storage": STORAGE, "certificates": certificates})
    assert refused.value.status == 422 and message in refused.value.body
