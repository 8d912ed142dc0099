"""The conditions the operator sets on its resources, their reasons, and the pure
function that sets one (Kubernetes' convention: ``lastTransitionTime`` moves only when
the status does).

Cluster:

* ``Ready``: every broker answers and no partition is offline. False with
  ``BrokersNotReady`` (how many answer), ``ZooKeeperNotReady``, ``PartitionsOffline``.
* ``Progressing``: the operator is changing something, or what it waits for. True with
  ``Creating`` (until the Cluster is first Ready), ``RollingRestart`` (which broker,
  and what it waits for), ``DrainingVolumes`` (the log
  dirs of removed volumes emptying, and how many replicas are left), ``Scaling`` (what moves, and
  how far it got; a requested replica rebalance and the copy of the replicas of failed
  log dirs too, and what a scaling waits for); False with ``Idle``,
  ``RollingRestartStuck`` (a broker the roll restarted its stated number of times did
  not come back: a person must look; the roll resumes when the spec changes),
  ``ScaleDownRefused`` (the topic whose replication
  factor the remaining brokers could not hold; nothing moves), or ``DrainRefused`` (the
  replicas of a failed log dir have no other broker to go to).
* ``Degraded``: something is wrong that needs a person. True with
  ``UnderReplicated`` (partitions whose ISR is short), ``LogDirOffline`` (which broker
  and dir); False with ``Healthy``.
* ``ConfigValid``: every key of ``spec.brokers.config`` is applied. False with
  ``InvalidConfig`` naming the keys left out and why.

Topic:

* ``Ready``: the topic exists as written. False with ``ClusterNotFound``,
  ``CreateFailed``, ``NotOwned`` (a topic of that name exists that is not ours),
  ``PartitionsDecreaseRefused`` (partitions never shrink), ``ReplicationFactorRefused``;
  True with ``Synced``.
* ``Progressing``: True with ``Reassigning`` while a replication-factor change moves
  replicas (how many partitions move), False with ``Idle``. A factor the live brokers
  cannot hold is refused (Ready False, ``ReplicationFactorRefused``): nothing moves.

ConsumerGroup:

* ``Ready``: the group's state and lag are known (``Observed``), or not
  (``ClusterNotFound``, ``GroupUnreachable``).
* ``ResetPending``: a reset waits for the group to have no members
  (``WaitingForMembersToLeave``) or for its Spark application to stop
  (``WaitingForApplicationToStop``); False with ``Applied`` once done.

  Events of a Spark application (``consumer_group/application.py``):
  ``ApplicationSubmitted``, ``ApplicationStopping`` (for a reset), ``ApplicationFailed``
  (a warning, with the error and the back-off).

User (``user/status.py``):

* ``Ready``: the user's credential, ACLs, quotas and Secret are as the spec says
  (``Synced``). False with ``ClusterNotFound``, ``ClusterNotReady`` (its clients CA or
  its brokers not there yet), ``PasswordSecretNotFound`` (the Secret or key the spec
  names for the password), ``InvalidPassword``, ``SecretNotOwned`` (a Secret named like
  the User that the operator did not write), ``SyncFailed`` (a broker refused a call).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "CONFIG_VALID",
    "DEGRADED",
    "PROGRESSING",
    "READY",
    "RESET_PENDING",
    "Reason",
    "condition_status",
    "set_condition",
]

READY = "Ready"
PROGRESSING = "Progressing"
DEGRADED = "Degraded"
CONFIG_VALID = "ConfigValid"
RESET_PENDING = "ResetPending"


class Reason:
    """Every reason the operator gives, one CamelCase word each."""

    # Cluster
    BROKERS_NOT_READY = "BrokersNotReady"
    ZOOKEEPER_NOT_READY = "ZooKeeperNotReady"
    PARTITIONS_OFFLINE = "PartitionsOffline"
    ALL_BROKERS_READY = "AllBrokersReady"
    CREATING = "Creating"
    ROLLING_RESTART = "RollingRestart"
    ROLLING_RESTART_STUCK = "RollingRestartStuck"
    SCALING = "Scaling"
    SCALE_DOWN_REFUSED = "ScaleDownRefused"
    DRAIN_REFUSED = "DrainRefused"
    DRAINING_VOLUMES = "DrainingVolumes"
    REBALANCING = "Rebalancing"  # an event: a replica rebalance, leader election or
    # copy of the replicas of failed log dirs started
    VOLUMES_LOST = "VolumesLost"  # an event: a broker's claims let go with its node
    VOLUME_RECYCLED = "VolumeRecycled"  # an event: a released local volume wiped and freed
    UNKNOWN_REQUEST = "UnknownRequest"  # an event: a rebalance annotation of no known kind
    IDLE = "Idle"
    UNDER_REPLICATED = "UnderReplicated"
    LOG_DIR_OFFLINE = "LogDirOffline"
    HEALTHY = "Healthy"
    INVALID_CONFIG = "InvalidConfig"
    CONFIG_APPLIED = "ConfigApplied"
    CA_RENEWAL = "CaRenewal"  # an event: a CA's renewal started, moved on a step or ended
    # Topic
    CLUSTER_NOT_FOUND = "ClusterNotFound"
    CREATE_FAILED = "CreateFailed"
    NOT_OWNED = "NotOwned"
    PARTITIONS_DECREASE_REFUSED = "PartitionsDecreaseRefused"
    REPLICATION_FACTOR_REFUSED = "ReplicationFactorRefused"
    SYNCED = "Synced"
    REASSIGNING = "Reassigning"
    # ConsumerGroup
    OBSERVED = "Observed"
    GROUP_UNREACHABLE = "GroupUnreachable"
    WAITING_FOR_MEMBERS_TO_LEAVE = "WaitingForMembersToLeave"
    WAITING_FOR_APPLICATION_TO_STOP = "WaitingForApplicationToStop"
    APPLICATION_SUBMITTED = "ApplicationSubmitted"  # events of its Spark application
    APPLICATION_STOPPING = "ApplicationStopping"
    APPLICATION_FAILED = "ApplicationFailed"
    APPLIED = "Applied"
    RESET_APPLIED = "ResetApplied"  # an event: a declarative offset reset applied
    # User
    CLUSTER_NOT_READY = "ClusterNotReady"
    AUTHORIZATION_NOT_ENABLED = "AuthorizationNotEnabled"
    PASSWORD_SECRET_NOT_FOUND = "PasswordSecretNotFound"
    INVALID_PASSWORD = "InvalidPassword"
    SECRET_NOT_OWNED = "SecretNotOwned"
    SYNC_FAILED = "SyncFailed"


def set_condition(
    conditions: Sequence[Mapping[str, Any]],
    type_: str,
    status: bool,
    reason: str,
    message: str,
    *,
    generation: int | None,
    now: str,
) -> list[dict[str, Any]]:
    """``conditions`` with ``type_`` set (added, or replaced keeping its transition time
    when its status is unchanged); the others as they are, in their order."""
    text = "True" if status else "False"
    out = []
    found = False
    for existing in conditions:
        if existing.get("type") != type_:
            out.append(dict(existing))
            continue
        found = True
        moved = existing.get("status") != text
        out.append(
            {
                "type": type_,
                "status": text,
                "reason": reason,
                "message": message,
                "lastTransitionTime": now if moved else existing.get("lastTransitionTime", now),
                "observedGeneration": generation,
            }
        )
    if not found:
        out.append(
            {
                "type": type_,
                "status": text,
                "reason": reason,
                "message": message,
                "lastTransitionTime": now,
                "observedGeneration": generation,
            }
        )
    return out


def condition_status(conditions: Sequence[Mapping[str, Any]], type_: str) -> str | None:
    """ "True", "False", "Unknown", or None when the condition is not set."""
    return next((c.get("status") for c in conditions if c.get("type") == type_), None)
