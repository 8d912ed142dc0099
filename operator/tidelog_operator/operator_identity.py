"""Who the operator's pods are, for the NetworkPolicies that admit them to the brokers'
REPLICATION listener and to ZooKeeper: their namespace and the labels that select them.

The chart tells the operator through its environment: ``TIDELOG_OPERATOR_NAMESPACE``
(the pod's namespace) and ``TIDELOG_OPERATOR_LABELS`` (its selector labels, written
``key=value,key=value`` as a label selector of equality terms is). An operator started
outside the chart, or outside a pod, gets :data:`DEFAULT_NAMESPACE` and
:data:`DEFAULT_LABELS`: the chart's name label in the default namespace. Outside a pod
the policies cannot name it anyway: its connections come from outside the pod network.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = [
    "DEFAULT_LABELS",
    "DEFAULT_NAMESPACE",
    "LABELS_VARIABLE",
    "NAMESPACE_VARIABLE",
    "OperatorIdentity",
    "from_environment",
    "parse_labels",
]

NAMESPACE_VARIABLE = "TIDELOG_OPERATOR_NAMESPACE"
LABELS_VARIABLE = "TIDELOG_OPERATOR_LABELS"
DEFAULT_NAMESPACE = "default"
DEFAULT_LABELS = "app.kubernetes.io/name=tidelog-operator"


@dataclass(frozen=True)
class OperatorIdentity:
    """The operator's pods: those of ``namespace`` that carry every one of ``labels``."""

    namespace: str
    labels: Mapping[str, str] = field(default_factory=dict)


def parse_labels(text: str) -> dict[str, str]:
    """``key=value,key=value`` as a dict; ValueError naming the term that is not one
    (an empty text, or a term without ``=`` or without a key)."""
    labels = {}
    for term in text.split(","):
        key, equals, value = term.strip().partition("=")
        if not equals or not key.strip():
            raise ValueError(f"{LABELS_VARIABLE}: {term!r} is not key=value")
        labels[key.strip()] = value.strip()
    return labels


def from_environment(environ: Mapping[str, str] = os.environ) -> OperatorIdentity:
    """The identity the chart set in ``environ``, each part defaulted when unset or
    empty; ValueError when the labels are malformed."""
    namespace = environ.get(NAMESPACE_VARIABLE) or DEFAULT_NAMESPACE
    labels = parse_labels(environ.get(LABELS_VARIABLE) or DEFAULT_LABELS)
    return OperatorIdentity(namespace, labels)
