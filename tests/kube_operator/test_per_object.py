"""Handlers take turns per object, and each reads the object afresh when its turn comes
(``tidelog_operator.per_object``), against the test control plane: what kopf does when a
Topic's timer fires while its creation handler still runs."""

from __future__ import annotations

import threading

import kopf
import pytest
from kubernetes import client

from kube_operator.conftest import GROUP, VERSION
from waiting import wait_until

pytestmark = pytest.mark.timeout(120)

TOPICS = kopf.Resource(GROUP, VERSION, "topics")
TURN_S = 10.0


@pytest.fixture
def kube(tidelog_crds, monkeypatch):
    """The operator's ``kube`` module, talking to the test control plane."""
    monkeypatch.setenv("KUBECONFIG", str(tidelog_crds.kubeconfig))
    from tidelog_operator import kube

    kube.api.cache_clear()
    yield kube
    kube.api.cache_clear()


def make_topic(kube_api, namespace: str, name: str) -> None:
    spec = {"clusterRef": "local", "partitions": 1, "replicationFactor": 1}
    body = {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "Topic",
        "metadata": {"name": name},
        "spec": spec,
    }
    client.CustomObjectsApi(kube_api).create_namespaced_custom_object(
        GROUP, VERSION, namespace, "topics", body
    )


class CountedLock:
    """A real lock that counts the threads that came to take it: the event that proves an
    invocation reached its turn (and blocks there while another holds it)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.arrivals = 0

    def __enter__(self) -> bool:
        self.arrivals += 1
        return self._lock.__enter__()

    def __exit__(self, *exc_info) -> None:
        self._lock.__exit__(*exc_info)


def test_a_second_invocation_waits_its_turn_and_sees_what_the_first_wrote(
    kube, kube_api, kube_namespace, monkeypatch
):
    from tidelog_operator import per_object
    from tidelog_operator.per_object import one_at_a_time

    turn = CountedLock()
    monkeypatch.setitem(per_object._turns, ("topics", kube_namespace, "orders"), turn)
    make_topic(kube_api, kube_namespace, "orders")
    make_topic(kube_api, kube_namespace, "other")
    seen: list[tuple[str, dict]] = []
    first_inside, release_first = threading.Event(), threading.Event()

    @one_at_a_time
    def handler(name: str, namespace: str, status, **_) -> None:
        seen.append((name, dict(status)))
        if len(seen) == 1:
            kube.patch_status(
                kube.api(), "topics", namespace, name, lambda s: {**s, "topicName": "claimed"}
            )
            first_inside.set()
            release_first.wait(TURN_S)

    def invoke(name: str) -> threading.Thread:
        # As kopf calls a handler: with the status of the body it held when it fired.
        kwargs = {"resource": TOPICS, "namespace": kube_namespace, "name": name}
        stale = {"status": {}, "spec": {}, "meta": {}, "body": {}}
        thread = threading.Thread(target=handler, kwargs={**kwargs, **stale})
        thread.start()
        return thread

    first = invoke("orders")
    assert first_inside.wait(TURN_S)
    second = invoke("orders")
    other = invoke("other")
    other.join(TURN_S)
    assert not other.is_alive()  # another object does not wait
    wait_until(lambda: turn.arrivals == 2, "the second invocation of orders at its turn")
    assert [name for name, _ in seen] == ["orders", "other"]  # "orders" waits its turn
    release_first.set()
    first.join(TURN_S)
    second.join(TURN_S)
    assert [name for name, _ in seen] == ["orders", "other", "orders"]
    assert seen[2][1].get("topicName") == "claimed"  # read afresh, not the stale status


def test_an_object_gone_before_its_turn_is_not_handled(kube, kube_api, kube_namespace):
    from tidelog_operator.per_object import one_at_a_time

    called = []

    @one_at_a_time
    def handler(**kwargs) -> None:
        called.append(kwargs)

    handler(resource=TOPICS, namespace=kube_namespace, name="never-made", status={})
    assert called == []
