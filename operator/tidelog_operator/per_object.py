"""One reconcile at a time per object, on the object as it is when its turn comes.

kopf runs an object's change handlers and its timer independently, each sync handler in
a worker thread of its own. A Topic's timer can fire while its creation handler still
waits for CreateTopics to answer, and each then acts on the status it was handed when it
started: the timer, finding no topic yet, created it a second time, was answered
TOPIC_ALREADY_EXISTS and gave up the claim the first had written (an e2e run under load).

:func:`one_at_a_time` gives a kopf handler what controller-runtime gives a reconciler:
one invocation per object at a time, and each reads the object afresh once it has its
turn. The handler's ``body``, ``spec``, ``status`` and ``meta`` are then the API server's
at that moment; if the object is gone by then, the handler does not run.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable
from typing import Any

from kubernetes import client

from tidelog_operator import kube
from tidelog_operator.names import GROUP, VERSION

__all__ = ["one_at_a_time"]

# One lock per (plural, namespace, name) ever handled: a few bytes per object, kept so
# that an object made again under its old name takes turns with what still runs for it.
_turns: dict[tuple[str, str, str], threading.Lock] = {}


def one_at_a_time(handler: Callable[..., Any]) -> Callable[..., Any]:
    """``handler`` (a kopf handler of one of this operator's custom resources) run for
    one object at a time, on that object as read when its turn comes."""

    @functools.wraps(handler)
    def in_turn(*, resource: Any, namespace: str, name: str, **kwargs: Any) -> Any:
        plural = resource.plural
        with _turns.setdefault((plural, namespace, name), threading.Lock()):
            objects = client.CustomObjectsApi(kube.api())
            body = kube.found(
                objects.get_namespaced_custom_object, GROUP, VERSION, namespace, plural, name
            )
            if body is None:
                return None
            current = {
                "body": body,
                "spec": body.get("spec") or {},
                "status": body.get("status") or {},
                "meta": body["metadata"],
            }
            return handler(
                resource=resource, namespace=namespace, name=name, **{**kwargs, **current}
            )

    return in_turn
