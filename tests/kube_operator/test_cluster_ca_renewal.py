"""A CA's renewal carried out by real Cluster passes against a real API server, asked
for with the force-renew annotation on the CA's Secret:

- the clients CA: Trust (its bundle trusts the old and the new certificate, the
  brokers' pod template changes and the renewal waits for their roll), Reissue, Drop
  (the bundle trusts the new one alone, the brokers roll again), finished; each step in
  ``status.certificates`` and an event;
- the cluster CA, as far as it goes without brokers that answer: Trust (its bundle and
  the operator's trust of old and new, no leaf signed meanwhile), then Reissue (every
  leaf Secret issued again and marked with the new generation), where it waits for the
  brokers to serve their new certificates, which only brokers that answer can tell;
- a spec whose maintenance window is not a cron expression is said in ConfigValid, and
  the pass makes nothing.

No kubelet runs and no broker answers: broker pods are marked ready through the API, and
their roll is done as the StatefulSet controller and a kubelet would have it, by giving
the pod the StatefulSet's update revision (its ``controller-revision-hash``) once the
controller has seen the new template. The pass's admin client says the brokers do not
answer.
"""

from __future__ import annotations

import base64

import pytest
from kubernetes import client

from kube_operator.pass_helpers import create_cluster, mark_broker_ready
from tidelog.security.certificates import CertificateFacts, certificates_in
from tidelog_operator import names
from tidelog_operator.cluster import passes
from waiting import wait_until

GROUP, VERSION = "tidelog.dev", "v1alpha1"
pytestmark = pytest.mark.timeout(300)


def _no_brokers(spec):
    raise OSError("no broker answers in this test")


class World:
    """The Cluster ``events`` with one broker, and what the passes over it said."""

    def __init__(self, kube_api, namespace: str):
        self.api, self.ns = kube_api, namespace
        self.core = client.CoreV1Api(kube_api)
        self.apps = client.AppsV1Api(kube_api)
        self.objects = client.CustomObjectsApi(kube_api)
        self.events: list[passes.Event] = []

    def run(self) -> None:
        passes.run_pass(
            self.ns,
            "events",
            api=self.api,
            admin=_no_brokers,
            tell=lambda obj, event: self.events.append(event),
        )

    def status(self) -> dict:
        found = self.objects.get_namespaced_custom_object(
            GROUP, VERSION, self.ns, "clusters", "events"
        )
        return found.get("status") or {}

    def step(self, key: str) -> str | None:
        record = (self.status().get("certificates") or {}).get(key) or {}
        return (record.get("renewal") or {}).get("step")

    def secret(self, name: str):
        return self.core.read_namespaced_secret(name, self.ns)

    def subjects(self, name: str, key: str = "ca.crt") -> list[tuple[str, int]]:
        pem = base64.b64decode(self.secret(name).data[key])
        return [
            (facts.subject, facts.serial)
            for facts in (CertificateFacts.of(c) for c in certificates_in(pem))
        ]

    def ca(self, name: str) -> tuple[str, int]:
        (found,) = self.subjects(name)
        return found

    def template_trust(self) -> str:
        live = self.apps.read_namespaced_stateful_set("events-broker", self.ns)
        return live.spec.template.metadata.annotations["tidelog.dev/ca-trust"]

    def roll(self) -> None:
        """Broker 0 restarted on the StatefulSet's current template, ready again."""
        name = names.brokers_statefulset("events")

        def revision() -> str | None:
            live = self.apps.read_namespaced_stateful_set(name, self.ns)
            seen = live.status.observed_generation == live.metadata.generation
            return live.status.update_revision if seen else None

        target = wait_until(revision, "the StatefulSet controller saw the template", 60)
        self.core.patch_namespaced_pod(
            "events-broker-0",
            self.ns,
            {"metadata": {"labels": {"controller-revision-hash": target}}},
        )
        mark_broker_ready(self.core, self.ns, "events", 0)


@pytest.fixture
def world(tidelog_crds, kube_api, kube_namespace) -> World:
    """The Cluster made by a first pass, its broker pod ready, and a second pass."""
    create_cluster(kube_api, kube_namespace)
    made = World(kube_api, kube_namespace)
    made.run()
    assert made.template_trust() == "cluster=0,clients=0"
    made.roll()  # the pod as the controller made it, marked ready
    made.run()
    for record in made.status()["certificates"].values():
        assert record["generation"] == 0 and "renewal" not in record
    made.events.clear()
    return made


def _force_renew(world: World, secret: str) -> None:
    world.core.patch_namespaced_secret(
        secret, world.ns, {"metadata": {"annotations": {"tidelog.dev/force-renew": "true"}}}
    )


def test_the_clients_ca_is_renewed_trusted_first_then_alone(world):
    old = world.ca("events-clients-ca")
    cluster = world.ca("events-cluster-ca")
    _force_renew(world, "events-clients-ca")
    world.run()  # started: the new certificate, the old one kept as the previous
    assert world.step("clientsCa") == "Trust"
    new = world.ca("events-clients-ca")
    assert new[0] == old[0] and new[1] != old[1]  # the same subject (and key), renewed
    assert world.subjects("events-clients-ca", "ca-previous.crt") == [old]
    annotations = world.secret("events-clients-ca").metadata.annotations
    assert "tidelog.dev/force-renew" not in annotations
    assert annotations["tidelog.dev/ca-generation"] == "1"

    world.run()  # the bundle trusts both; the brokers' template changes
    assert world.subjects("events-clients-ca-cert") == [new, old, cluster]
    assert world.template_trust() == "cluster=0,clients=1+0"
    world.run()
    assert world.step("clientsCa") == "Trust"  # waiting for the brokers to roll
    world.roll()
    world.run()
    assert world.step("clientsCa") == "Reissue"
    world.run()  # no TLS User to reissue: the old certificate is dropped
    assert world.step("clientsCa") == "Drop"
    assert "ca-previous.crt" not in world.secret("events-clients-ca").data
    world.run()
    assert world.subjects("events-clients-ca-cert") == [new, cluster]
    assert world.template_trust() == "cluster=0,clients=1"
    world.run()
    assert world.step("clientsCa") == "Drop"  # waiting for the second roll
    world.roll()
    world.run()
    record = world.status()["certificates"]["clientsCa"]
    assert record["generation"] == 1 and "renewal" not in record
    assert [e.reason for e in world.events].count("CaRenewal") == 4  # start, 2 steps, end
    # the cluster CA was left alone all along
    assert world.ca("events-cluster-ca") == cluster
    assert world.status()["certificates"]["clusterCa"]["generation"] == 0


def _generation(world: World, secret: str) -> str | None:
    return (world.secret(secret).metadata.annotations or {}).get("tidelog.dev/ca-generation")


def test_the_cluster_ca_is_trusted_first_then_its_leaves_are_reissued(world):
    old = world.ca("events-cluster-ca")
    keystore = world.secret("events-broker-certs").data
    _force_renew(world, "events-cluster-ca")
    world.run()
    assert world.step("clusterCa") == "Trust"
    new = world.ca("events-cluster-ca")
    world.run()  # every bundle and the operator trust both; no leaf issued yet
    assert world.subjects("events-cluster-ca-cert") == [new, old]
    clients = world.ca("events-clients-ca")
    assert world.subjects("events-clients-ca-cert") == [clients, new, old]
    trusted = world.subjects("events-operator-credentials", "ssl.truststore.certificates")
    assert trusted == [new, old]
    assert world.secret("events-broker-certs").data == keystore
    assert world.template_trust() == "cluster=1+0,clients=0"
    world.roll()
    world.run()  # trusted everywhere: every leaf Secret issued again, of generation 1
    assert world.step("clusterCa") == "Reissue"
    assert world.secret("events-broker-certs").data != keystore
    for secret in ("events-broker-certs", "events-operator-credentials"):
        assert _generation(world, secret) == "1", secret
    world.run()
    assert world.step("clusterCa") == "Reissue"  # the brokers' certificates unconfirmed
    message = [e.message for e in world.events if e.reason == "CaRenewal"][-1]
    assert "generation 1 is trusted everywhere" in message


def test_a_maintenance_window_that_is_no_cron_expression_is_said_in_config_valid(
    tidelog_crds, kube_api, kube_namespace
):
    create_cluster(kube_api, kube_namespace, certificates={"maintenanceWindows": ["* 25 * * *"]})
    world = World(kube_api, kube_namespace)
    world.run()
    (valid,) = [c for c in world.status()["conditions"] if c["type"] == "ConfigValid"]
    assert (valid["status"], valid["reason"]) == ("False", "InvalidConfig")
    assert "spec.certificates.maintenanceWindows[0]: hour 25 is out of 0-23" in valid["message"]
    assert [e.reason for e in world.events] == ["InvalidConfig"]
    made = world.core.list_namespaced_secret(kube_namespace, label_selector="tidelog.dev/cluster")
    assert made.items == []  # nothing decided on a spec that cannot be read
    world.run()  # said once
    assert [e.reason for e in world.events] == ["InvalidConfig"]
