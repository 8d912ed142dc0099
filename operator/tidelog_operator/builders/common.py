"""What the builders share."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["spread_over_nodes"]


def spread_over_nodes(labels: Mapping[str, str]) -> dict[str, Any]:
    """A pod affinity that puts pods with ``labels`` on different nodes where it can (a
    preference: a cluster with fewer nodes than pods still runs them all)."""
    return {
        "podAntiAffinity": {
            "preferredDuringSchedulingIgnoredDuringExecution": [
                {
                    "weight": 100,
                    "podAffinityTerm": {
                        "topologyKey": "kubernetes.io/hostname",
                        "labelSelector": {"matchLabels": dict(labels)},
                    },
                }
            ]
        }
    }
