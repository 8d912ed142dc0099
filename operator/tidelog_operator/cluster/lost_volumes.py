"""Brokers whose local disks went with their node (``spec.storage.replaceLostVolumes``):
what to delete so that they start again elsewhere. Pure.

A local volume lives on one node (its ``tidelog.dev/node`` label). Once that Node is
gone from the API (deleted: the machine is not coming back), a claim bound to such a
volume keeps its broker's pod Pending for good. So:

* the claims bound to volumes of gone nodes are deleted, and those volumes (their disk
  is gone);
* so are the pods of those claims, and any broker pod Pending on a claim that no longer
  exists: the StatefulSet makes a pod's claims only when it makes the pod, so the new
  pod gets new claims, which bind to free disks of another node.

The broker then starts with empty log dirs under its old id and copies its replicas from
the others (seed 001: a follower fetches from the leader from offset 0); what was
acknowledged survives wherever the replication factor is 2 or more.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tidelog_operator.builders.storage import NODE_LABEL

__all__ = ["LostVolumes", "lost_volumes"]


@dataclass(frozen=True)
class LostVolumes:
    claims: tuple[str, ...] = ()
    pods: tuple[str, ...] = ()
    volumes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.claims or self.pods or self.volumes)

    def message(self) -> str:
        return (
            f"gone with their node: volumes {_list(self.volumes)}, claims "
            f"{_list(self.claims)}; pods {_list(self.pods)} start again elsewhere"
        )


def _list(items: Sequence[str]) -> str:
    return ", ".join(items) or "none"


def _pod_of(claim: str, templates: Sequence[str]) -> str | None:
    """The pod of a StatefulSet claim ``<template>-<pod>``."""
    for template in templates:
        if claim.startswith(f"{template}-"):
            return claim.removeprefix(f"{template}-")
    return None


def _claims_of(pod: Mapping[str, Any]) -> list[str]:
    return [
        volume["persistentVolumeClaim"]["claimName"]
        for volume in pod.get("spec", {}).get("volumes") or []
        if volume.get("persistentVolumeClaim")
    ]


def lost_volumes(
    *,
    nodes: Collection[str],
    volumes: Iterable[Mapping[str, Any]],
    claims: Collection[str],
    pods: Iterable[Mapping[str, Any]],
    namespace: str,
    templates: Sequence[str],
) -> LostVolumes:
    """From the nodes that exist, the Cluster's local volumes, its brokers' claims (names)
    and pods (as the API serializes them), and the claim templates' names. No node
    listed at all tells nothing: nothing is lost then."""
    if not nodes:
        return LostVolumes()
    gone = [v for v in volumes if v["metadata"]["labels"].get(NODE_LABEL) not in nodes]
    lost_claims = sorted(
        ref["name"]
        for v in gone
        if (ref := v.get("spec", {}).get("claimRef"))
        and ref.get("namespace") == namespace
        and ref["name"] in claims
    )
    pods = list(pods)
    existing = {p["metadata"]["name"] for p in pods}
    lost_pods = {pod for c in lost_claims if (pod := _pod_of(c, templates)) in existing}
    lost_pods |= {
        p["metadata"]["name"]
        for p in pods
        if p.get("status", {}).get("phase") == "Pending"
        and any(c not in claims for c in _claims_of(p))
    }
    return LostVolumes(
        tuple(lost_claims),
        tuple(sorted(lost_pods)),
        tuple(sorted(v["metadata"]["name"] for v in gone)),
    )
