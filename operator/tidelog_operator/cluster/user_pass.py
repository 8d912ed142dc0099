"""The Users' part of a Cluster pass after the decisions: each User's commands carried
out in order (a failed one stops that User's others: the Secret is written only after
the credential it records), then each User's status written (the pass is its one
writer) and an event for what changed."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from kubernetes import client

from tidelog_operator import kube
from tidelog_operator.cluster.command_base import Command, Event
from tidelog_operator.cluster.user_commands import SyncUser
from tidelog_operator.cluster.user_step import UserDecision
from tidelog_operator.conditions import Reason
from tidelog_operator.user import status as problems
from tidelog_operator.user.status import user_status

__all__ = ["serve_users"]


def serve_users(
    api: client.ApiClient,
    decisions: tuple[UserDecision, ...],
    carry: Callable[[Command], bool],
    now: str,
    tell: Callable[[dict[str, Any], Event], None],
) -> None:
    """Carry out and report each User's decision; ``carry`` carries a command out and
    says whether it was; ``tell`` posts an event on a User."""
    for decision in decisions:
        problem = decision.problem
        for command in decision.commands:
            if not carry(command):
                step = type(command).__name__
                problem = problems.sync_failed(decision.spec, step, "see the operator's log")
                break
            if isinstance(command, SyncUser) and not decision.observed.deleting:
                message = f"{decision.spec.principal}: {command.plan.describe()}"
                tell(dict(decision.observed.body), Event(False, Reason.SYNCED, message))
        if decision.observed.deleting:
            continue
        meta = decision.observed.body["metadata"]
        kube.patch_status(
            api,
            "users",
            decision.spec.namespace,
            decision.spec.name,
            lambda current, spec=decision.spec, problem=problem, meta=meta: user_status(
                spec, current, problem, generation=meta.get("generation"), now=now
            ),
        )
